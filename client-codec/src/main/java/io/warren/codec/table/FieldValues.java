package io.warren.codec.table;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reading and validating single field values, shared by {@link FieldTable}, {@link FieldArray} and
 * their cursors. Positions are absolute buffer indices; nothing moves the buffer's indices.
 */
final class FieldValues {

    /**
     * Deepest nesting of tables and arrays that validation accepts: recursion must not be steerable
     * into a stack overflow by a peer (a 1 MiB header could nest 100,000 tables).
     */
    static final int MAX_DEPTH = 100;

    private FieldValues() {}

    /** The size of the value at {@code pos} (after its tag), which must have been validated. */
    static int valueLength(ByteBuf buf, int pos, FieldType type) {
        int fixed = type.fixedSize();
        return fixed >= 0 ? fixed : 4 + buf.getInt(pos);
    }

    /** The value of type {@code type} at {@code pos} as the Java object {@link FieldType} documents. */
    static Object read(ByteBuf buf, int pos, FieldType type) {
        switch (type) {
            case BOOLEAN:
                return buf.getByte(pos) != 0;
            case SIGNED_8:
                return buf.getByte(pos);
            case UNSIGNED_8:
                return Unsigned.shortShortUint(buf.getUnsignedByte(pos));
            case SIGNED_16:
                return buf.getShort(pos);
            case UNSIGNED_16:
                return Unsigned.shortUint(buf.getUnsignedShort(pos));
            case SIGNED_32:
                return buf.getInt(pos);
            case UNSIGNED_32:
                return Unsigned.longUint(buf.getUnsignedInt(pos));
            case SIGNED_64:
                return buf.getLong(pos);
            case FLOAT:
                return buf.getFloat(pos);
            case DOUBLE:
                return buf.getDouble(pos);
            case DECIMAL:
                return decimal(buf, pos);
            case LONG_STRING:
                return longString(buf, pos + 4, buf.getInt(pos));
            case BYTE_ARRAY:
                return bytes(buf, pos + 4, buf.getInt(pos));
            case ARRAY:
                return list(buf, pos);
            case TIMESTAMP:
                return instant(buf.getLong(pos));
            case TABLE:
                return map(buf, pos);
            case VOID:
                return null;
            default:
                throw new AssertionError(type);
        }
    }

    static long longValue(ByteBuf buf, int pos, FieldType type) {
        switch (type) {
            case SIGNED_8:
                return buf.getByte(pos);
            case UNSIGNED_8:
                return buf.getUnsignedByte(pos);
            case SIGNED_16:
                return buf.getShort(pos);
            case UNSIGNED_16:
                return buf.getUnsignedShort(pos);
            case SIGNED_32:
                return buf.getInt(pos);
            case UNSIGNED_32:
                return buf.getUnsignedInt(pos);
            case SIGNED_64:
            case TIMESTAMP:
                return buf.getLong(pos);
            default:
                throw new IllegalStateException("a " + type + " value is not an integer");
        }
    }

    static BigDecimal decimal(ByteBuf buf, int pos) {
        return new BigDecimal(BigInteger.valueOf(buf.getInt(pos + 1)), buf.getUnsignedByte(pos));
    }

    /**
     * A long string as a {@code String} when it is valid UTF-8 (which encodes back to the same bytes), else as a
     * {@link LongString} of its bytes, which is written back as {@code S}: no information lost either way.
     */
    static Object longString(ByteBuf buf, int index, int length) {
        if (ByteBufUtil.isText(buf, index, length, StandardCharsets.UTF_8)) {
            return buf.toString(index, length, StandardCharsets.UTF_8);
        }
        return LongString.own(bytes(buf, index, length));
    }

    /**
     * The wire's 64-bit seconds as an Instant. {@link Instant} spans about a billion years either side of the
     * epoch; a peer may send any 64-bit value, which is clamped to that range rather than failing the whole
     * table (the cursor's {@code longValue()} reads the exact value).
     */
    static Instant instant(long epochSecond) {
        return Instant.ofEpochSecond(
                Math.max(Instant.MIN.getEpochSecond(), Math.min(Instant.MAX.getEpochSecond(), epochSecond)));
    }

    static byte[] bytes(ByteBuf buf, int index, int length) {
        byte[] bytes = new byte[length];
        buf.getBytes(index, bytes);
        return bytes;
    }

    /** The table whose 32-bit length is at {@code pos}, materialised. */
    static Map<String, Object> map(ByteBuf buf, int pos) {
        int end = pos + 4 + buf.getInt(pos);
        Map<String, Object> map = new LinkedHashMap<>();
        int p = pos + 4;
        while (p < end) {
            int keyLength = buf.getUnsignedByte(p);
            String key = buf.toString(p + 1, keyLength, StandardCharsets.UTF_8);
            p += 1 + keyLength;
            FieldType type = FieldType.fromTag(buf.getUnsignedByte(p));
            p++;
            map.put(key, read(buf, p, type));
            p += valueLength(buf, p, type);
        }
        return map;
    }

    /** The array whose 32-bit byte length is at {@code pos}, materialised. */
    static List<Object> list(ByteBuf buf, int pos) {
        int end = pos + 4 + buf.getInt(pos);
        List<Object> list = new ArrayList<>();
        int p = pos + 4;
        while (p < end) {
            FieldType type = FieldType.fromTag(buf.getUnsignedByte(p));
            p++;
            list.add(read(buf, p, type));
            p += valueLength(buf, p, type);
        }
        return list;
    }

    // ---------------------------------------------------------------- validation

    /**
     * Checks the table whose 32-bit length is at {@code pos}, within a buffer region ending at
     * {@code end}; returns the index after the table.
     */
    static int validateTable(ByteBuf buf, int pos, int end, int depth) {
        if (depth > MAX_DEPTH) {
            throw syntax("field tables and arrays nested deeper than " + MAX_DEPTH + " levels", pos);
        }
        int tableEnd = validateLength(buf, pos, end, "field table");
        int p = pos + 4;
        while (p < tableEnd) {
            int keyLength = buf.getUnsignedByte(p);
            if (p + 1 + keyLength + 1 > tableEnd) {
                throw syntax(
                        "field name of " + keyLength + " bytes runs past the end of its table (" + (tableEnd - p - 1)
                                + " bytes left)",
                        p);
            }
            p += 1 + keyLength;
            p = validateValue(buf, p, tableEnd, depth);
        }
        return tableEnd;
    }

    /** Checks the array whose 32-bit byte length is at {@code pos}; returns the index after it. */
    static int validateArray(ByteBuf buf, int pos, int end, int depth) {
        if (depth > MAX_DEPTH) {
            throw syntax("field tables and arrays nested deeper than " + MAX_DEPTH + " levels", pos);
        }
        int arrayEnd = validateLength(buf, pos, end, "field array");
        int p = pos + 4;
        while (p < arrayEnd) {
            p = validateValue(buf, p, arrayEnd, depth);
        }
        return arrayEnd;
    }

    /** Checks the tagged value at {@code pos} (its tag octet); returns the index after the value. */
    private static int validateValue(ByteBuf buf, int pos, int end, int depth) {
        int tag = buf.getUnsignedByte(pos);
        FieldType type = FieldType.fromTag(tag);
        if (type == null) {
            String printable = tag >= 0x20 && tag < 0x7F ? "'" + (char) tag + "' " : "";
            throw syntax(String.format("unknown field value type tag %s(0x%02X)", printable, tag), pos);
        }
        int p = pos + 1;
        int fixed = type.fixedSize();
        if (fixed >= 0) {
            if (p + fixed > end) {
                throw syntax(
                        "field value of type '" + type.tag() + "' needs " + fixed + " bytes, " + (end - p) + " left",
                        p);
            }
            return p + fixed;
        }
        switch (type) {
            case TABLE:
                return validateTable(buf, p, end, depth + 1);
            case ARRAY:
                return validateArray(buf, p, end, depth + 1);
            default:
                return validateLength(buf, p, end, "field value of type '" + type.tag() + "'");
        }
    }

    /** Checks the 32-bit length at {@code pos} and the bytes it announces; returns the index after them. */
    private static int validateLength(ByteBuf buf, int pos, int end, String what) {
        if (pos + 4 > end) {
            throw syntax(what + " length needs 4 bytes, " + (end - pos) + " left", pos);
        }
        long length = buf.getUnsignedInt(pos);
        if (length > end - pos - 4) {
            throw syntax(
                    what + " of " + length + " bytes runs past the end of its container (" + (end - pos - 4)
                            + " bytes left)",
                    pos);
        }
        return pos + 4 + (int) length;
    }

    static AmqpProtocolException syntax(String detail, int index) {
        return AmqpProtocolException.atIndex(ReplyCode.SYNTAX_ERROR, detail, index);
    }
}
