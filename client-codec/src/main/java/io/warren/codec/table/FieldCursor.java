package io.warren.codec.table;

import io.netty.buffer.ByteBuf;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

/**
 * The value side of an in-place iteration over a {@link FieldTable} or {@link FieldArray}: after the
 * cursor's {@code next()} returned {@code true}, {@link #type()} says what the current value is and
 * the typed accessors read it where it lies. Nothing is decoded until an accessor is called; the
 * accessors that allocate say so.
 *
 * <p>A typed accessor called on a value of another type throws {@link IllegalStateException}. A cursor
 * is valid while the buffer it reads is (while the frame lives), and belongs to one thread.
 */
public abstract class FieldCursor {

    ByteBuf buf;
    /** Index of the current value (after its tag). */
    int valuePos;
    /** Index of the next entry. */
    int nextPos;
    /** Index after the container. */
    int end;

    FieldType type;

    FieldCursor() {}

    /** The current value's type. */
    public FieldType type() {
        return type;
    }

    /** The current {@code t} value. */
    public boolean booleanValue() {
        expect(FieldType.BOOLEAN);
        return buf.getByte(valuePos) != 0;
    }

    /**
     * The current integer value, any of {@code b B s u I i l T} (a timestamp in seconds), sign-extended
     * or zero-extended as its type says.
     */
    public long longValue() {
        return FieldValues.longValue(buf, valuePos, current());
    }

    /** The current {@code f} or {@code d} value. */
    public double doubleValue() {
        switch (current()) {
            case FLOAT:
                return buf.getFloat(valuePos);
            case DOUBLE:
                return buf.getDouble(valuePos);
            default:
                throw wrongType("a floating-point number");
        }
    }

    /** The current {@code D} value (allocates). */
    public BigDecimal decimalValue() {
        expect(FieldType.DECIMAL);
        return FieldValues.decimal(buf, valuePos);
    }

    /**
     * The bytes of the current {@code S} or {@code x} value, as a slice of the frame (no copy, no
     * retain): valid while the frame lives; the caller does not release it.
     */
    public ByteBuf bytesValue() {
        if (current() != FieldType.LONG_STRING && type != FieldType.BYTE_ARRAY) {
            throw wrongType("a long string or byte array");
        }
        return buf.slice(valuePos + 4, buf.getInt(valuePos));
    }

    /** The current {@code S} value decoded as UTF-8 (allocates; malformed bytes become U+FFFD). */
    public String stringValue() {
        expect(FieldType.LONG_STRING);
        return buf.toString(valuePos + 4, buf.getInt(valuePos), StandardCharsets.UTF_8);
    }

    /** The current {@code F} value as a new view over the same bytes (allocates the small view). */
    public FieldTable tableValue() {
        expect(FieldType.TABLE);
        return new FieldTable().wrap(buf, valuePos);
    }

    /** The current {@code A} value as a new view over the same bytes (allocates the small view). */
    public FieldArray arrayValue() {
        expect(FieldType.ARRAY);
        return new FieldArray().wrap(buf, valuePos);
    }

    /** The current value as the Java object {@link FieldType} documents (allocates). */
    public Object value() {
        return FieldValues.read(buf, valuePos, current());
    }

    /** Positions the cursor on the tagged value at {@code pos}; returns the index of the value. */
    final void readTagged(int pos) {
        type = FieldType.fromTag(buf.getUnsignedByte(pos));
        valuePos = pos + 1;
        nextPos = valuePos + FieldValues.valueLength(buf, valuePos, type);
    }

    private FieldType current() {
        if (type == null) {
            throw new IllegalStateException("no current value: call next() first");
        }
        return type;
    }

    private void expect(FieldType expected) {
        if (current() != expected) {
            throw wrongType("a " + expected);
        }
    }

    private IllegalStateException wrongType(String wanted) {
        return new IllegalStateException("the current value is a " + type + " ('" + type.tag() + "'), not " + wanted);
    }
}
