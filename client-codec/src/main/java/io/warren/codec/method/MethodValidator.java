package io.warren.codec.method;

import io.netty.buffer.ByteBuf;
import io.warren.codec.AmqpProtocolException;
import io.warren.codec.ReplyCode;
import io.warren.codec.table.FieldTable;

/**
 * Walks a method payload along its argument list and checks that every field lies within the payload
 * and that nothing follows the last one, so that a view wrapped over it can never read out of bounds.
 * Used through {@link MethodTable#validate}.
 */
final class MethodValidator {

    private MethodValidator() {
    }

    /**
     * Checks the arguments of {@code info} starting after the ids at {@code offset + 4}.
     *
     * @throws AmqpProtocolException 502, its offset an absolute index into {@code buf}
     */
    static void validate(MethodInfo info, ByteBuf buf, int offset, int length) {
        int end = offset + length;
        int pos = offset + 4;
        int bits = 0;
        for (int i = 0, n = info.argumentCount(); i < n; i++) {
            ArgumentType type = info.argumentType(i);
            if (type == ArgumentType.BIT) {
                // consecutive bits share octets: a new octet starts with the 1st, 9th, ... bit
                if ((bits & 7) == 0) {
                    need(info, i, buf, pos, 1, end);
                    pos++;
                }
                bits++;
                continue;
            }
            bits = 0;
            switch (type) {
                case SHORTSTR:
                    need(info, i, buf, pos, 1, end);
                    int shortLength = buf.getUnsignedByte(pos);
                    pos++;
                    need(info, i, buf, pos, shortLength, end);
                    pos += shortLength;
                    break;
                case LONGSTR:
                    need(info, i, buf, pos, 4, end);
                    long longLength = buf.getUnsignedInt(pos);
                    pos += 4;
                    need(info, i, buf, pos, longLength, end);
                    pos += (int) longLength;
                    break;
                case TABLE:
                    try {
                        pos = FieldTable.validate(buf, pos, end);
                    } catch (AmqpProtocolException e) {
                        throw AmqpProtocolException.atIndex(e.replyCode(),
                                "argument '" + info.argumentNames().get(i) + "': " + e.detail(), (int) e.offset());
                    }
                    break;
                default:
                    need(info, i, buf, pos, type.fixedSize(), end);
                    pos += type.fixedSize();
                    break;
            }
        }
        if (pos != end) {
            throw AmqpProtocolException.atIndex(ReplyCode.SYNTAX_ERROR, (end - pos)
                    + " unexpected bytes after the last argument", pos);
        }
    }

    private static void need(MethodInfo info, int argument, ByteBuf buf, int pos, long bytes, int end) {
        if (pos + bytes > end) {
            throw AmqpProtocolException.atIndex(ReplyCode.SYNTAX_ERROR, "argument '"
                    + info.argumentNames().get(argument) + "' (" + info.argumentType(argument).specName()
                    + ") needs " + bytes + " bytes but only " + (end - pos) + " remain in the payload", pos);
        }
    }
}
