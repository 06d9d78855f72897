package io.warren.codec.method;

/** The wire types of method arguments, named as in the spec JSON. */
public enum ArgumentType {
    /** One bit; consecutive bits pack into one octet, least significant bit first. */
    BIT("bit", 0),
    /** Unsigned 8-bit. */
    OCTET("octet", 1),
    /** Unsigned 16-bit, big-endian. */
    SHORT("short", 2),
    /** Unsigned 32-bit, big-endian. */
    LONG("long", 4),
    /** 64-bit, big-endian. */
    LONGLONG("longlong", 8),
    /** Length octet then up to 255 bytes (UTF-8). */
    SHORTSTR("shortstr", -1),
    /** 32-bit length then bytes. */
    LONGSTR("longstr", -1),
    /** 64-bit seconds since the epoch. */
    TIMESTAMP("timestamp", 8),
    /** A field table: 32-bit byte length then entries. */
    TABLE("table", -1);

    private final String specName;
    private final int fixedSize;

    ArgumentType(String specName, int fixedSize) {
        this.specName = specName;
        this.fixedSize = fixedSize;
    }

    /** The type's name in the spec ({@code "shortstr"}). */
    public String specName() {
        return specName;
    }

    /** The size in bytes of a fixed-size type, 0 for a bit (packed), -1 for a variable-size type. */
    public int fixedSize() {
        return fixedSize;
    }
}
