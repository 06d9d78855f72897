package io.warren.codec.table;

import io.netty.buffer.ByteBuf;
import io.netty.util.AsciiString;
import io.warren.codec.base.AsciiStringCache;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Flyweight view of an AMQP field table where it lies in a frame.
 *
 * <pre>
 * +---------------+------------------------------------------------------------+
 * | byte-length   | entries, byte-length bytes in all                          |
 * | 4 (u32)       | +--------+------------+-----+-------+--------+-----+-------+ |
 * |               | | name   | name bytes | tag | value | name   | ... |       | |
 * |               | | 1      | n (UTF-8)  | 1   | 0..   | 1      |     |       | |
 * |               | +--------+------------+-----+-------+--------+-----+-------+ |
 * +---------------+------------------------------------------------------------+
 * </pre>
 *
 * <p>Iterate in place with a {@link Cursor}; {@link #toMap()} materialises the whole table with the
 * Java mapping documented on {@link FieldType}. The view neither moves the buffer's indices nor
 * retains it: it is valid while the frame that owns the buffer lives. Wrap only tables that were
 * validated ({@link #validate}; {@code FrameDecoder} validates every method and content header).
 */
public final class FieldTable {

    private ByteBuf buf;
    private int offset;

    /** An empty view: {@link #wrap} it onto a buffer before reading. */
    public FieldTable() {}

    /**
     * Points this view at the table whose 32-bit length is at {@code offset} of {@code buf}.
     *
     * @return this view
     */
    public FieldTable wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.offset = offset;
        return this;
    }

    /**
     * Checks that the table at {@code index} (its length field) lies within {@code end}, that every
     * entry is complete and every type tag known, nested values included.
     *
     * @return the index after the table
     * @throws io.warren.codec.base.AmqpProtocolException 502 SYNTAX_ERROR, its offset the absolute index of
     *         the offending byte (callers that know the frame place it with {@code inFrame})
     */
    public static int validate(ByteBuf buf, int index, int end) {
        return FieldValues.validateTable(buf, index, end, 0);
    }

    /** The byte length of the entries (the value of the length field). */
    public int byteLength() {
        return buf.getInt(offset);
    }

    /** The length of the whole encoded table, length field included. */
    public int encodedLength() {
        return 4 + byteLength();
    }

    /** Whether the table has no entries. */
    public boolean isEmpty() {
        return byteLength() == 0;
    }

    /** The number of entries (walks the table). */
    public int size() {
        int count = 0;
        Cursor cursor = cursor();
        while (cursor.next()) {
            count++;
        }
        return count;
    }

    /** A new cursor before the first entry. */
    public Cursor cursor() {
        return cursor(new Cursor());
    }

    /** {@code reuse} reset to before the first entry of this table (no allocation). */
    public Cursor cursor(Cursor reuse) {
        reuse.buf = buf;
        reuse.nextPos = offset + 4;
        reuse.end = offset + 4 + byteLength();
        reuse.type = null;
        return reuse;
    }

    /** Whether an entry is named {@code name}. */
    public boolean containsKey(CharSequence name) {
        return find(name) != null;
    }

    /**
     * The value named {@code name} as the Java object {@link FieldType} documents, or {@code null} when
     * there is none (or it is void). Walks the table; allocates the value.
     */
    public Object get(CharSequence name) {
        Cursor cursor = find(name);
        return cursor == null ? null : cursor.value();
    }

    /** A cursor on the first entry named {@code name}, or {@code null}. */
    public Cursor find(CharSequence name) {
        Cursor cursor = cursor();
        while (cursor.next()) {
            if (cursor.keyEquals(name)) {
                return cursor;
            }
        }
        return null;
    }

    /**
     * The whole table as a new mutable {@code Map} in wire order (a {@code LinkedHashMap}), nested
     * tables and arrays included, values mapped as {@link FieldType} documents.
     */
    public Map<String, Object> toMap() {
        return FieldValues.map(buf, offset);
    }

    /**
     * The encoded table (length field included) as a slice of the frame: no copy, no retain; valid
     * while the frame lives. Useful to forward a table without decoding it.
     */
    public ByteBuf slice() {
        return buf.slice(offset, encodedLength());
    }

    @Override
    public String toString() {
        return buf == null ? "FieldTable(unwrapped)" : toMap().toString();
    }

    /**
     * Walks the entries of a table in place. {@code next()} moves to the following entry; {@link #key()}
     * and the value accessors read the current one.
     */
    public static final class Cursor extends FieldCursor {

        private int keyPos;

        /** A cursor at no entry, to reuse: {@link FieldTable#cursor(Cursor)} points it at a table's entries. */
        public Cursor() {}

        /** Moves to the next entry; {@code false} at the end of the table. */
        public boolean next() {
            int pos = nextPos;
            if (pos >= end) {
                type = null;
                return false;
            }
            keyPos = pos;
            readTagged(pos + 1 + buf.getUnsignedByte(pos));
            return true;
        }

        /** The current entry's name: its raw UTF-8 bytes, from {@link AsciiStringCache} (usually no allocation). */
        public AsciiString key() {
            return AsciiStringCache.shortString(buf, keyPos);
        }

        /** The current entry's name decoded as UTF-8 (allocates). */
        public String keyAsString() {
            return buf.toString(keyPos + 1, buf.getUnsignedByte(keyPos), StandardCharsets.UTF_8);
        }

        /** Whether the current entry's name equals {@code name} (compared as UTF-8, no allocation for ASCII). */
        public boolean keyEquals(CharSequence name) {
            int length = buf.getUnsignedByte(keyPos);
            int start = keyPos + 1;
            int n = name.length();
            if (n > length) {
                return false;
            }
            for (int i = 0; i < n; i++) {
                char c = name.charAt(i);
                if (c >= 0x80) {
                    byte[] utf8 = name.toString().getBytes(StandardCharsets.UTF_8);
                    if (utf8.length != length) {
                        return false;
                    }
                    for (int j = 0; j < length; j++) {
                        if (buf.getByte(start + j) != utf8[j]) {
                            return false;
                        }
                    }
                    return true;
                }
                if (buf.getByte(start + i) != (byte) c) {
                    return false;
                }
            }
            return n == length;
        }
    }
}
