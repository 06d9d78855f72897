package io.warren.codec.table;

import io.netty.buffer.ByteBuf;
import java.util.List;

/**
 * Flyweight view of an AMQP field array ({@code A}) where it lies in a frame.
 *
 * <pre>
 * +---------------+---------------------------------------------+
 * | byte-length   | values, byte-length bytes in all            |
 * | 4 (u32)       | +-----+-------+-----+-------+-----+         |
 * |               | | tag | value | tag | value | ... |         |
 * |               | | 1   | 0..   | 1   | 0..   |     |         |
 * |               | +-----+-------+-----+-------+-----+         |
 * +---------------+---------------------------------------------+
 * </pre>
 *
 * <p>RabbitMQ's arrays carry the byte length of their values, not a count. Iterate in place with a
 * {@link Cursor}, or materialise with {@link #toList()} (mapping on {@link FieldType}). The view
 * neither moves the buffer's indices nor retains it.
 */
public final class FieldArray {

    private ByteBuf buf;
    private int offset;

    /** An empty view: {@link #wrap} it onto a buffer before reading. */
    public FieldArray() {}

    /**
     * Points this view at the array whose 32-bit length is at {@code offset} of {@code buf}.
     *
     * @return this view
     */
    public FieldArray wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.offset = offset;
        return this;
    }

    /**
     * Checks the array at {@code index} (its length field) against {@code end}; see
     * {@link FieldTable#validate}.
     *
     * @return the index after the array
     */
    public static int validate(ByteBuf buf, int index, int end) {
        return FieldValues.validateArray(buf, index, end, 0);
    }

    /** The byte length of the values (the value of the length field). */
    public int byteLength() {
        return buf.getInt(offset);
    }

    /** Whether the array has no values. */
    public boolean isEmpty() {
        return byteLength() == 0;
    }

    /** The number of values (walks the array). */
    public int size() {
        int count = 0;
        Cursor cursor = cursor();
        while (cursor.next()) {
            count++;
        }
        return count;
    }

    /** A new cursor before the first value. */
    public Cursor cursor() {
        return cursor(new Cursor());
    }

    /** {@code reuse} reset to before the first value of this array (no allocation). */
    public Cursor cursor(Cursor reuse) {
        reuse.buf = buf;
        reuse.nextPos = offset + 4;
        reuse.end = offset + 4 + byteLength();
        reuse.type = null;
        return reuse;
    }

    /** The whole array as a new mutable {@code List}, values mapped as {@link FieldType} documents. */
    public List<Object> toList() {
        return FieldValues.list(buf, offset);
    }

    @Override
    public String toString() {
        return buf == null ? "FieldArray(unwrapped)" : toList().toString();
    }

    /** Walks the values of an array in place. */
    public static final class Cursor extends FieldCursor {

        /** A cursor at no entry, to reuse: {@link FieldArray#cursor(Cursor)} points it at an array's entries. */
        public Cursor() {}

        /** Moves to the next value; {@code false} at the end of the array. */
        public boolean next() {
            int pos = nextPos;
            if (pos >= end) {
                type = null;
                return false;
            }
            readTagged(pos);
            return true;
        }
    }
}
