package io.warren.codec.table;

/**
 * The field-table value types RabbitMQ speaks (the 0-9-1 errata, not the original spec's table), with
 * their tag octet and, for fixed-size types, the size of the value after the tag.
 *
 * <p>The Java types {@link FieldTable#toMap()} produces and {@link FieldTableEncoder} accepts:
 * <table>
 *   <caption>AMQP field types and their Java mapping</caption>
 *   <tr><th>tag</th><th>type</th><th>decoded as</th><th>encoded from</th></tr>
 *   <tr><td>t</td><td>boolean</td><td>Boolean</td><td>Boolean</td></tr>
 *   <tr><td>b</td><td>signed 8-bit</td><td>Byte</td><td>Byte</td></tr>
 *   <tr><td>B</td><td>unsigned 8-bit</td><td>{@link Unsigned}</td><td>Unsigned</td></tr>
 *   <tr><td>s</td><td>signed 16-bit</td><td>Short</td><td>Short</td></tr>
 *   <tr><td>u</td><td>unsigned 16-bit</td><td>Unsigned</td><td>Unsigned</td></tr>
 *   <tr><td>I</td><td>signed 32-bit</td><td>Integer</td><td>Integer</td></tr>
 *   <tr><td>i</td><td>unsigned 32-bit</td><td>Unsigned</td><td>Unsigned</td></tr>
 *   <tr><td>l</td><td>signed 64-bit</td><td>Long</td><td>Long</td></tr>
 *   <tr><td>f</td><td>float</td><td>Float</td><td>Float</td></tr>
 *   <tr><td>d</td><td>double</td><td>Double</td><td>Double</td></tr>
 *   <tr><td>D</td><td>decimal (scale octet, signed 32-bit)</td><td>BigDecimal</td><td>BigDecimal</td></tr>
 *   <tr><td>S</td><td>long string</td><td>String if valid UTF-8, else {@link LongString}</td><td>CharSequence, LongString</td></tr>
 *   <tr><td>x</td><td>byte array</td><td>byte[]</td><td>byte[]</td></tr>
 *   <tr><td>A</td><td>array (32-bit byte length, then values)</td><td>List&lt;Object&gt;</td><td>Collection, Object[]</td></tr>
 *   <tr><td>T</td><td>timestamp (64-bit seconds)</td><td>java.time.Instant (clamped to its range)</td><td>Instant, java.util.Date</td></tr>
 *   <tr><td>F</td><td>nested table</td><td>Map&lt;String, Object&gt; (wire order)</td><td>Map with CharSequence keys</td></tr>
 *   <tr><td>V</td><td>void</td><td>null</td><td>null</td></tr>
 * </table>
 * Decoding and encoding again gives back the same bytes: the same types (an unsigned value stays unsigned, a
 * long string stays {@code S} even when it is not UTF-8), the same key order (a {@code LinkedHashMap}) and the
 * same nesting. What a {@code Map} cannot hold is the exception: a field name that is not valid UTF-8 or that
 * repeats, a boolean octet other than 0 or 1 (read as true, written as 1), a timestamp beyond {@code Instant}'s
 * range; {@link FieldTable#slice()} forwards a table as it is, and a cursor reads every value exactly.
 *
 * <p>RabbitMQ's table, not the 0-9-1 spec's: the spec has {@code s} for a short string, {@code U} and
 * {@code L} for signed 16- and 64-bit and {@code l} for unsigned 64-bit integers; RabbitMQ (and the clients
 * that talk to it) use {@code s} for signed 16-bit and {@code l} for signed 64-bit, and know no {@code U},
 * {@code L} or short-string value. A field table therefore has no short strings.
 */
public enum FieldType {
    BOOLEAN('t', 1),
    SIGNED_8('b', 1),
    UNSIGNED_8('B', 1),
    SIGNED_16('s', 2),
    UNSIGNED_16('u', 2),
    SIGNED_32('I', 4),
    UNSIGNED_32('i', 4),
    SIGNED_64('l', 8),
    FLOAT('f', 4),
    DOUBLE('d', 8),
    DECIMAL('D', 5),
    LONG_STRING('S', -1),
    BYTE_ARRAY('x', -1),
    ARRAY('A', -1),
    TIMESTAMP('T', 8),
    TABLE('F', -1),
    VOID('V', 0);

    private static final FieldType[] BY_TAG = new FieldType[128];

    static {
        for (FieldType type : values()) {
            BY_TAG[type.tag] = type;
        }
    }

    private final char tag;
    private final int fixedSize;

    FieldType(char tag, int fixedSize) {
        this.tag = tag;
        this.fixedSize = fixedSize;
    }

    /** The tag octet on the wire. */
    public char tag() {
        return tag;
    }

    /** The size of a value of this type after its tag, or -1 when it has a 32-bit length prefix. */
    public int fixedSize() {
        return fixedSize;
    }

    /** Whether values of this type are integers (the cursor's {@code longValue()} reads them). */
    public boolean isInteger() {
        switch (this) {
            case SIGNED_8:
            case UNSIGNED_8:
            case SIGNED_16:
            case UNSIGNED_16:
            case SIGNED_32:
            case UNSIGNED_32:
            case SIGNED_64:
            case TIMESTAMP:
                return true;
            default:
                return false;
        }
    }

    /** The type with tag {@code tag}, or {@code null} for an unknown tag. */
    public static FieldType fromTag(int tag) {
        return tag >= 0 && tag < BY_TAG.length ? BY_TAG[tag] : null;
    }
}
