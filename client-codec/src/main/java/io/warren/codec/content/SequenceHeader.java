package io.warren.codec.content;

import io.netty.buffer.ByteBuf;
import io.netty.util.AsciiString;
import io.warren.codec.table.FieldTable;
import io.warren.codec.table.FieldType;

/**
 * One application header of type long-long ({@code 'l'}) that a publisher adds to a message's headers table as
 * the message is framed, without building new {@link BasicProperties}: the properties' encoded bytes are copied
 * with the entry appended to their table (or with a one-entry table inserted, and its flag set, when they have
 * none). Its use: a publisher in confirm mode stamps a mandatory message with its publish sequence number, and the
 * broker's basic.return gives the message back with its headers, which says exactly which publish was returned.
 *
 * <pre>
 * properties with headers:    flags | ct | ce | table-length + n | entries... | entry | rest...
 * properties without:         flags+HEADERS | ct | ce | n | entry | rest...
 * entry (n bytes):            name-length | name | 'l' | value (8 bytes, big-endian)
 * </pre>
 *
 * <p>Properties that already carry an entry of that name (a consumed message published again, with its headers)
 * get it replaced: its place kept, its value set, so the message never carries two; that rare case builds new
 * properties. Immutable, thread-safe.
 */
public final class SequenceHeader {

    private final AsciiString name;
    private final String nameString;
    private final int entryLength;

    /**
     * @param name the header's name: ASCII, 1..255 bytes
     * @throws IllegalArgumentException for an empty, longer or non-ASCII name
     */
    public SequenceHeader(String name) {
        if (name == null
                || name.isEmpty()
                || name.length() > ShortString.MAX_LENGTH
                || !name.chars().allMatch(c -> c < 0x80)) {
            throw new IllegalArgumentException("header name must be 1..255 ASCII characters: " + name);
        }
        this.name = AsciiString.of(name);
        this.nameString = name;
        this.entryLength = 1 + name.length() + 1 + 8;
    }

    /** The header's name. */
    public AsciiString name() {
        return name;
    }

    /** The bytes the entry adds to {@code properties}' encoded length (when they have no headers, the table too). */
    public int addedLength(BasicProperties properties) {
        if (carries(properties)) {
            return replaced(properties, 0).encodedLength() - properties.encodedLength();
        }
        return properties.headersOffset() < 0 ? entryLength + 4 : entryLength;
    }

    /** {@code properties}' encoded length with the entry: what {@link #writeTo} appends. */
    public int encodedLength(BasicProperties properties) {
        return properties.encodedLength() + addedLength(properties);
    }

    private boolean carries(BasicProperties properties) {
        java.util.Map<String, Object> headers = properties.headers();
        return headers != null && headers.containsKey(nameString);
    }

    /** The properties with the entry's value replaced in place (the length does not depend on the value). */
    private BasicProperties replaced(BasicProperties properties, long value) {
        java.util.Map<String, Object> headers = new java.util.LinkedHashMap<>(properties.headers());
        headers.put(nameString, value);
        return properties.toBuilder().headers(headers).build();
    }

    /**
     * Appends {@code properties}' flags word and values with this header, set to {@code value}, added: exactly
     * {@link #encodedLength} bytes.
     */
    public void writeTo(ByteBuf out, BasicProperties properties, long value) {
        if (carries(properties)) {
            replaced(properties, value).writeTo(out);
            return;
        }
        byte[] encoded = properties.encodedBytes();
        int table = properties.headersOffset();
        if (table >= 0) {
            int tableLength = (encoded[table] & 0xFF) << 24
                    | (encoded[table + 1] & 0xFF) << 16
                    | (encoded[table + 2] & 0xFF) << 8
                    | (encoded[table + 3] & 0xFF);
            int end = table + 4 + tableLength;
            out.writeBytes(encoded, 0, table);
            out.writeInt(tableLength + entryLength);
            out.writeBytes(encoded, table + 4, tableLength);
            writeEntry(out, value);
            out.writeBytes(encoded, end, encoded.length - end);
        } else {
            int at = BasicProperties.headersPosition(encoded);
            out.writeShort(properties.propertyFlags() | ContentHeader.HEADERS);
            out.writeBytes(encoded, 2, at - 2);
            out.writeInt(entryLength);
            writeEntry(out, value);
            out.writeBytes(encoded, at, encoded.length - at);
        }
    }

    private void writeEntry(ByteBuf out, long value) {
        out.writeByte(name.length());
        out.writeBytes(name.array(), name.arrayOffset(), name.length());
        out.writeByte(FieldType.SIGNED_64.tag());
        out.writeLong(value);
    }

    /**
     * The value of the last entry with this name in {@code header}'s table, or {@code absent} when there is none or
     * it is not of an integer type. Reads the frame in place; allocates nothing but the table view's cursor.
     */
    public long find(ContentHeader header, long absent) {
        FieldTable table = header.headers();
        if (table == null) {
            return absent;
        }
        long found = absent;
        FieldTable.Cursor cursor = table.cursor();
        while (cursor.next()) {
            if (cursor.keyEquals(name)) {
                found = cursor.type().isInteger() ? cursor.longValue() : absent;
            }
        }
        return found;
    }

    @Override
    public String toString() {
        return "SequenceHeader(" + name + ")";
    }
}
