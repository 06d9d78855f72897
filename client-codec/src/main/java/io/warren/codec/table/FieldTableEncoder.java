package io.warren.codec.table;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.util.AsciiString;
import io.warren.codec.base.Utf8;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.util.Collection;
import java.util.Date;
import java.util.Map;

/**
 * Encodes a {@code Map<String, ?>} as an AMQP field table (and collections as field arrays), with the
 * Java-to-AMQP mapping documented on {@link FieldType}: Boolean {@code t}, Byte {@code b}, Short
 * {@code s}, Integer {@code I}, Long {@code l}, Float {@code f}, Double {@code d}, BigDecimal
 * {@code D}, CharSequence or {@link LongString} {@code S}, byte[] {@code x}, Collection or Object[]
 * {@code A}, Instant or Date {@code T} (seconds), Map {@code F}, null {@code V}, and an {@link Unsigned}
 * its own {@code B}, {@code u} or {@code i}. What {@link FieldTable#toMap()} returns encodes back to the
 * same bytes (for names that are valid UTF-8 and unique, booleans written as 0 or 1 and timestamps within
 * {@code Instant}'s range).
 *
 * <p>{@link #encodedLength} validates and sizes; {@link #encode} writes in one pass (nested lengths are
 * back-patched, not computed twice). A value of any other Java type, a {@code null} or non-text key,
 * a key over 255 UTF-8 bytes, text (key or value) with an unpaired surrogate (see {@link Utf8}), or a
 * BigDecimal that does not fit (scale 0..255, unscaled value within 32 bits) is an
 * {@link IllegalArgumentException} naming the key path, never the text. An {@link AsciiString} is
 * written as its raw bytes, the form the views return.
 */
public final class FieldTableEncoder {

    private FieldTableEncoder() {}

    /**
     * The encoded length of {@code table}, length field included; {@code null} is an empty table (4).
     *
     * @throws IllegalArgumentException when a key or value cannot be encoded
     */
    public static int encodedLength(Map<String, ?> table) {
        if (table == null) {
            return 4;
        }
        long length = tableLength(table);
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("field table of " + length + " bytes is too large");
        }
        return (int) length;
    }

    /** Writes {@code table} ({@code null}: an empty table) to {@code out}. */
    public static void encode(ByteBuf out, Map<String, ?> table) {
        if (table == null) {
            out.writeInt(0);
            return;
        }
        writeTable(out, table);
    }

    /** The encoded length of {@code values} as a field array, length field included. */
    public static int encodedArrayLength(Collection<?> values) {
        long length = arrayLength(values);
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("field array of " + length + " bytes is too large");
        }
        return (int) length;
    }

    /** Writes {@code values} as a field array to {@code out}. */
    public static void encodeArray(ByteBuf out, Collection<?> values) {
        int lengthIndex = out.writerIndex();
        out.writeInt(0);
        for (Object value : values) {
            writeValue(out, value);
        }
        out.setInt(lengthIndex, out.writerIndex() - lengthIndex - 4);
    }

    /**
     * The UTF-8 length of {@code name} checked as a shortstr (field names are shortstrs).
     *
     * @throws IllegalArgumentException for {@code null}, more than 255 bytes or an unpaired surrogate
     */
    static int keyLength(Object name) {
        if (!(name instanceof CharSequence)) {
            throw new IllegalArgumentException(
                    name == null
                            ? "field name is null"
                            : "field name is a " + name.getClass().getName() + ", not text");
        }
        CharSequence key = (CharSequence) name;
        int length = key instanceof AsciiString ? key.length() : Utf8.encodedLength("field name", key);
        if (length > 255) {
            throw new IllegalArgumentException("field name '" + abbreviate(name) + "' is " + length
                    + " bytes in UTF-8, a shortstr holds at most 255");
        }
        return length;
    }

    private static long tableLength(Map<?, ?> table) {
        long length = 4;
        for (Map.Entry<?, ?> entry : table.entrySet()) {
            Object key = entry.getKey();
            length += 1 + keyLength(key) + 1;
            try {
                length += valueLength(entry.getValue());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(nested(key, e), e);
            }
        }
        return length;
    }

    private static long arrayLength(Collection<?> values) {
        long length = 4;
        int i = 0;
        for (Object value : values) {
            try {
                length += 1 + valueLength(value);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(nested("[" + i + "]", e), e);
            }
            i++;
        }
        return length;
    }

    /** The size of {@code value} after its tag. */
    private static long valueLength(Object value) {
        if (value == null) {
            return 0;
        } else if (value instanceof CharSequence) {
            CharSequence s = (CharSequence) value;
            return 4 + (s instanceof AsciiString ? s.length() : Utf8.encodedLength("long string", s));
        } else if (value instanceof Integer) {
            return 4;
        } else if (value instanceof Long) {
            return 8;
        } else if (value instanceof Boolean || value instanceof Byte) {
            return 1;
        } else if (value instanceof Short) {
            return 2;
        } else if (value instanceof Map) {
            return tableLength((Map<?, ?>) value);
        } else if (value instanceof byte[]) {
            return 4 + ((byte[]) value).length;
        } else if (value instanceof Collection) {
            return arrayLength((Collection<?>) value);
        } else if (value instanceof Object[]) {
            return arrayLength(java.util.Arrays.asList((Object[]) value));
        } else if (value instanceof Float) {
            return 4;
        } else if (value instanceof Double) {
            return 8;
        } else if (value instanceof BigDecimal) {
            decimalParts((BigDecimal) value);
            return 5;
        } else if (value instanceof Instant || value instanceof Date) {
            return 8;
        } else if (value instanceof LongString) {
            return 4 + ((LongString) value).length();
        } else if (value instanceof Unsigned) {
            return ((Unsigned) value).type().fixedSize();
        }
        throw new IllegalArgumentException("a " + value.getClass().getName() + " has no AMQP field type");
    }

    private static void writeTable(ByteBuf out, Map<?, ?> table) {
        int lengthIndex = out.writerIndex();
        out.writeInt(0);
        for (Map.Entry<?, ?> entry : table.entrySet()) {
            writeShortString(out, (CharSequence) entry.getKey());
            writeValue(out, entry.getValue());
        }
        out.setInt(lengthIndex, out.writerIndex() - lengthIndex - 4);
    }

    private static void writeValue(ByteBuf out, Object value) {
        if (value == null) {
            out.writeByte('V');
        } else if (value instanceof CharSequence) {
            out.writeByte('S');
            writeLongString(out, (CharSequence) value);
        } else if (value instanceof Integer) {
            out.writeByte('I').writeInt((Integer) value);
        } else if (value instanceof Long) {
            out.writeByte('l').writeLong((Long) value);
        } else if (value instanceof Boolean) {
            out.writeByte('t').writeByte((Boolean) value ? 1 : 0);
        } else if (value instanceof Byte) {
            out.writeByte('b').writeByte((Byte) value);
        } else if (value instanceof Short) {
            out.writeByte('s').writeShort((Short) value);
        } else if (value instanceof Map) {
            out.writeByte('F');
            writeTable(out, (Map<?, ?>) value);
        } else if (value instanceof byte[]) {
            byte[] bytes = (byte[]) value;
            out.writeByte('x').writeInt(bytes.length).writeBytes(bytes);
        } else if (value instanceof Collection) {
            out.writeByte('A');
            encodeArray(out, (Collection<?>) value);
        } else if (value instanceof Object[]) {
            out.writeByte('A');
            encodeArray(out, java.util.Arrays.asList((Object[]) value));
        } else if (value instanceof Float) {
            out.writeByte('f').writeFloat((Float) value);
        } else if (value instanceof Double) {
            out.writeByte('d').writeDouble((Double) value);
        } else if (value instanceof BigDecimal) {
            BigDecimal decimal = decimalParts((BigDecimal) value);
            out.writeByte('D')
                    .writeByte(decimal.scale())
                    .writeInt(decimal.unscaledValue().intValue());
        } else if (value instanceof Instant) {
            out.writeByte('T').writeLong(((Instant) value).getEpochSecond());
        } else if (value instanceof Date) {
            out.writeByte('T').writeLong(Math.floorDiv(((Date) value).getTime(), 1000L));
        } else if (value instanceof LongString) {
            byte[] bytes = ((LongString) value).array();
            out.writeByte('S').writeInt(bytes.length).writeBytes(bytes);
        } else if (value instanceof Unsigned) {
            writeUnsigned(out, (Unsigned) value);
        } else {
            throw new IllegalArgumentException("a " + value.getClass().getName() + " has no AMQP field type");
        }
    }

    private static void writeUnsigned(ByteBuf out, Unsigned value) {
        FieldType type = value.type();
        out.writeByte(type.tag());
        switch (type) {
            case UNSIGNED_8:
                out.writeByte(value.intValue());
                break;
            case UNSIGNED_16:
                out.writeShort(value.intValue());
                break;
            default:
                out.writeInt(value.intValue());
                break;
        }
    }

    /** {@code value} with a scale the wire can carry; a negative scale is removed exactly. */
    private static BigDecimal decimalParts(BigDecimal value) {
        BigDecimal decimal = value.scale() < 0 ? value.setScale(0) : value;
        if (decimal.scale() > 255) {
            throw new IllegalArgumentException(
                    "decimal " + value + " has scale " + decimal.scale() + ", AMQP decimals allow 0..255");
        }
        BigInteger unscaled = decimal.unscaledValue();
        if (unscaled.bitLength() > 31) {
            throw new IllegalArgumentException("decimal " + value + " has an unscaled value beyond 32 bits");
        }
        return decimal;
    }

    private static void writeShortString(ByteBuf out, CharSequence s) {
        if (s instanceof AsciiString) {
            AsciiString a = (AsciiString) s;
            out.writeByte(a.length()).writeBytes(a.array(), a.arrayOffset(), a.length());
            return;
        }
        // reserve exactly: writeUtf8 alone reserves 3 bytes per char, too much for an exactly sized buffer
        int length = ByteBufUtil.utf8Bytes(s);
        out.writeByte(length);
        ByteBufUtil.reserveAndWriteUtf8(out, s, length);
    }

    private static void writeLongString(ByteBuf out, CharSequence s) {
        if (s instanceof AsciiString) {
            AsciiString a = (AsciiString) s;
            out.writeInt(a.length()).writeBytes(a.array(), a.arrayOffset(), a.length());
            return;
        }
        int length = ByteBufUtil.utf8Bytes(s);
        out.writeInt(length);
        ByteBufUtil.reserveAndWriteUtf8(out, s, length);
    }

    private static String nested(Object key, IllegalArgumentException e) {
        String message = e.getMessage();
        String prefix = key instanceof String && ((String) key).startsWith("[") ? (String) key : "'" + key + "'";
        if (message.startsWith("at ")) {
            // "at 'a'.'b': ..." -> prepend this level
            return "at " + prefix + (message.charAt(3) == '[' ? "" : ".") + message.substring(3);
        }
        return "at " + prefix + ": " + message;
    }

    private static String abbreviate(Object name) {
        String s = String.valueOf(name);
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }
}
