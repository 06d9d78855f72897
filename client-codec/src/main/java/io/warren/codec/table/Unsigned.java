package io.warren.codec.table;

/**
 * An unsigned integer field value that remembers its width: {@code B} (short-short-uint, 8 bits), {@code u}
 * (short-uint, 16 bits) or {@code i} (long-uint, 32 bits), the unsigned types of RabbitMQ's field tables.
 *
 * <p>Java has no unsigned types, and decoding {@code B} as a {@code Short} would write it back as a signed
 * 16-bit {@code s}: {@link FieldTable#toMap()} returns these values as {@code Unsigned}, and
 * {@link FieldTableEncoder} writes an {@code Unsigned} with its own tag, so a table is forwarded unchanged. It is
 * a {@link Number}: {@code longValue()} is the value (never negative), and code that reads any number as a
 * {@code Number} keeps working.
 *
 * <p>Immutable; equal when type and value are.
 */
public final class Unsigned extends Number {

    private static final long serialVersionUID = 1L;

    private final FieldType type;
    private final long value;

    private Unsigned(FieldType type, long value) {
        this.type = type;
        this.value = value;
    }

    /**
     * A {@code B} value.
     *
     * @throws IllegalArgumentException unless within 0..255
     */
    public static Unsigned shortShortUint(int value) {
        return of(FieldType.UNSIGNED_8, value, 0xFFL);
    }

    /**
     * A {@code u} value.
     *
     * @throws IllegalArgumentException unless within 0..65535
     */
    public static Unsigned shortUint(int value) {
        return of(FieldType.UNSIGNED_16, value, 0xFFFFL);
    }

    /**
     * An {@code i} value.
     *
     * @throws IllegalArgumentException unless within 0..4294967295
     */
    public static Unsigned longUint(long value) {
        return of(FieldType.UNSIGNED_32, value, 0xFFFF_FFFFL);
    }

    private static Unsigned of(FieldType type, long value, long max) {
        if (value < 0 || value > max) {
            throw new IllegalArgumentException("a '" + type.tag() + "' value must be within 0.." + max + ": " + value);
        }
        return new Unsigned(type, value);
    }

    /** {@link FieldType#UNSIGNED_8}, {@link FieldType#UNSIGNED_16} or {@link FieldType#UNSIGNED_32}. */
    public FieldType type() {
        return type;
    }

    @Override
    public int intValue() {
        return (int) value;
    }

    @Override
    public long longValue() {
        return value;
    }

    @Override
    public float floatValue() {
        return value;
    }

    @Override
    public double doubleValue() {
        return value;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Unsigned && ((Unsigned) o).type == type && ((Unsigned) o).value == value;
    }

    @Override
    public int hashCode() {
        return 31 * type.ordinal() + Long.hashCode(value);
    }

    /** The value in decimal. */
    @Override
    public String toString() {
        return Long.toString(value);
    }
}
