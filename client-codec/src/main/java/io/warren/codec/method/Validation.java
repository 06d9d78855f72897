package io.warren.codec.method;

import io.netty.buffer.ByteBuf;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.table.FieldTable;

/**
 * The checks the generated {@code validate} methods of the views are made of: each takes the index of a
 * field and the end of the payload, checks that the field lies within it and returns the index after
 * it. A failure is a 502 SYNTAX_ERROR naming the argument, its index an absolute buffer index that
 * {@link MethodTable#validate} turns into an offset within the frame.
 */
final class Validation {

    private Validation() {}

    /** A fixed-size field of {@code size} bytes (a bit octet counts 1). */
    static int fixed(int p, int size, int end, String name, String type) {
        if (p + size > end) {
            throw truncated(name, type, size, p, end);
        }
        return p + size;
    }

    /** A length octet and that many bytes. */
    static int shortstr(ByteBuf buf, int p, int end, String name) {
        if (p >= end) {
            throw truncated(name, "shortstr", 1, p, end);
        }
        int length = buf.getUnsignedByte(p);
        if (p + 1 + length > end) {
            throw truncated(name, "shortstr", length, p + 1, end);
        }
        return p + 1 + length;
    }

    /** A 32-bit length and that many bytes. */
    static int longstr(ByteBuf buf, int p, int end, String name) {
        if (p + 4 > end) {
            throw truncated(name, "longstr", 4, p, end);
        }
        long length = buf.getUnsignedInt(p);
        if (length > end - p - 4) {
            throw truncated(name, "longstr", length, p + 4, end);
        }
        return p + 4 + (int) length;
    }

    /** A field table, nested values included. */
    static int table(ByteBuf buf, int p, int end, String name) {
        try {
            return FieldTable.validate(buf, p, end);
        } catch (AmqpProtocolException e) {
            throw AmqpProtocolException.atIndex(
                    e.replyCode(), "argument '" + name + "': " + e.detail(), (int) e.offset());
        }
    }

    /** Nothing may follow the last argument. */
    static void end(int p, int end) {
        if (p != end) {
            throw AmqpProtocolException.atIndex(
                    ReplyCode.SYNTAX_ERROR, (end - p) + " unexpected bytes after the last argument", p);
        }
    }

    private static AmqpProtocolException truncated(String name, String type, long bytes, int p, int end) {
        return AmqpProtocolException.atIndex(
                ReplyCode.SYNTAX_ERROR,
                "argument '" + name + "' (" + type + ") needs " + bytes + " bytes but only " + Math.max(0, end - p)
                        + " remain in the payload",
                p);
    }
}
