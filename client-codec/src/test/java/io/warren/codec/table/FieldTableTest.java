package io.warren.codec.table;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.util.AsciiString;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Field tables: every type tag on the wire, the Java mapping both ways, in-place iteration, errors. */
class FieldTableTest {

    private static ByteBuf encode(Map<String, ?> table) {
        ByteBuf buf = Unpooled.buffer(FieldTableEncoder.encodedLength(table));
        FieldTableEncoder.encode(buf, table);
        assertEquals(FieldTableEncoder.encodedLength(table), buf.readableBytes(), "exact length");
        return buf;
    }

    /** A table holding one value of every RabbitMQ type, written by hand. */
    private static ByteBuf everyType() {
        ByteBuf b = Unpooled.buffer();
        b.writeInt(0);
        entry(b, "t", 't').writeByte(1);
        entry(b, "b", 'b').writeByte(-5);
        entry(b, "B", 'B').writeByte(250);
        entry(b, "s", 's').writeShort(-300);
        entry(b, "u", 'u').writeShort(65000);
        entry(b, "I", 'I').writeInt(-70000);
        entry(b, "i", 'i').writeInt(0xF0000000);
        entry(b, "l", 'l').writeLong(Long.MIN_VALUE);
        entry(b, "f", 'f').writeFloat(1.5f);
        entry(b, "d", 'd').writeDouble(-2.25);
        entry(b, "D", 'D').writeByte(2).writeInt(-12345);
        entry(b, "S", 'S').writeInt(4).writeBytes("h\u00e9l".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        entry(b, "S-binary", 'S').writeInt(2).writeByte(0xC3).writeByte(0x28);
        entry(b, "x", 'x').writeInt(3).writeBytes(new byte[] {1, 2, 3});
        entry(b, "A", 'A')
                .writeInt(2 + 5)
                .writeByte('t')
                .writeByte(0)
                .writeByte('I')
                .writeInt(7);
        entry(b, "T", 'T').writeLong(1_700_000_000L);
        entry(b, "F", 'F')
                .writeInt(1 + 1 + 1 + 1)
                .writeByte(1)
                .writeByte('k')
                .writeByte('b')
                .writeByte(9);
        entry(b, "V", 'V');
        b.setInt(0, b.writerIndex() - 4);
        return b;
    }

    private static ByteBuf entry(ByteBuf b, String name, char tag) {
        return b.writeByte(name.length()).writeBytes(name.getBytes()).writeByte(tag);
    }

    @Test
    void everyTypeDecodesToItsDocumentedJavaType() {
        ByteBuf buf = everyType();
        try {
            assertEquals(buf.readableBytes(), FieldTable.validate(buf, 0, buf.readableBytes()));
            Map<String, Object> map = new FieldTable().wrap(buf, 0).toMap();
            assertEquals(Boolean.TRUE, map.get("t"));
            assertEquals((byte) -5, map.get("b"));
            assertEquals(Unsigned.shortShortUint(250), map.get("B"));
            assertEquals((short) -300, map.get("s"));
            assertEquals(Unsigned.shortUint(65000), map.get("u"));
            assertEquals(-70000, map.get("I"));
            assertEquals(Unsigned.longUint(0xF0000000L), map.get("i"));
            assertEquals(Long.MIN_VALUE, map.get("l"));
            assertEquals(1.5f, map.get("f"));
            assertEquals(-2.25, map.get("d"));
            assertEquals(new BigDecimal("-123.45"), map.get("D"));
            assertEquals("h\u00e9l", map.get("S"));
            assertEquals(
                    LongString.of(new byte[] {(byte) 0xC3, 0x28}), map.get("S-binary"), "invalid UTF-8 stays bytes");
            assertArrayEquals(new byte[] {1, 2, 3}, (byte[]) map.get("x"));
            assertEquals(List.of(false, 7), map.get("A"));
            assertEquals(Instant.ofEpochSecond(1_700_000_000L), map.get("T"));
            assertEquals(Map.of("k", (byte) 9), map.get("F"));
            assertTrue(map.containsKey("V"));
            assertNull(map.get("V"));
            assertEquals(
                    List.copyOf(map.keySet()),
                    List.of(
                            "t",
                            "b",
                            "B",
                            "s",
                            "u",
                            "I",
                            "i",
                            "l",
                            "f",
                            "d",
                            "D",
                            "S",
                            "S-binary",
                            "x",
                            "A",
                            "T",
                            "F",
                            "V"),
                    "wire order");
        } finally {
            buf.release();
        }
    }

    @Test
    void cursorIteratesInPlace() {
        ByteBuf buf = everyType();
        try {
            FieldTable table = new FieldTable().wrap(buf, 0);
            FieldTable.Cursor c = table.cursor();
            int n = 0;
            while (c.next()) {
                n++;
                switch (c.keyAsString()) {
                    case "u":
                        assertEquals(65000, c.longValue());
                        break;
                    case "i":
                        assertEquals(0xF0000000L, c.longValue());
                        break;
                    case "f":
                        assertEquals(1.5, c.doubleValue());
                        break;
                    case "S":
                        assertEquals("h\u00e9l", c.stringValue());
                        break;
                    case "x":
                        assertEquals(3, c.bytesValue().readableBytes());
                        break;
                    case "T":
                        assertEquals(1_700_000_000L, c.longValue());
                        break;
                    case "F":
                        assertEquals(9, c.tableValue().find("k").longValue());
                        break;
                    case "A": {
                        FieldArray.Cursor a = c.arrayValue().cursor();
                        assertTrue(a.next());
                        assertFalse(a.booleanValue());
                        assertTrue(a.next());
                        assertEquals(7, a.longValue());
                        assertFalse(a.next());
                        break;
                    }
                    case "t":
                        assertTrue(c.booleanValue());
                        assertThrows(IllegalStateException.class, c::longValue);
                        break;
                    default:
                        break;
                }
            }
            assertEquals(18, n);
            assertEquals(18, table.size());
            assertTrue(table.containsKey("S-binary"));
            assertFalse(table.containsKey("missing"));
            assertEquals(-70000, table.get("I"));
        } finally {
            buf.release();
        }
    }

    @Test
    void keysComeFromTheCache() {
        ByteBuf a = encode(Map.of("x-match", "all"));
        ByteBuf b = encode(Map.of("x-match", "any"));
        try {
            FieldTable.Cursor ca = new FieldTable().wrap(a, 0).cursor();
            FieldTable.Cursor cb = new FieldTable().wrap(b, 0).cursor();
            ca.next();
            cb.next();
            assertSame(ca.key(), cb.key());
            assertTrue(ca.keyEquals("x-match"));
        } finally {
            a.release();
            b.release();
        }
    }

    @Test
    void nonAsciiKeysCompareAsUtf8() {
        ByteBuf buf = encode(Map.of("cl\u00e9", 1));
        try {
            FieldTable table = new FieldTable().wrap(buf, 0);
            assertTrue(table.containsKey("cl\u00e9"));
            assertFalse(table.containsKey("cle"));
            assertEquals(1, table.get("cl\u00e9"));
        } finally {
            buf.release();
        }
    }

    @Test
    void javaTypesEncodeToTheirDocumentedTags() {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("bool", true);
        in.put("byte", (byte) 1);
        in.put("short", (short) 2);
        in.put("int", 3);
        in.put("long", 4L);
        in.put("float", 5f);
        in.put("double", 6d);
        in.put("decimal", new BigDecimal("7.89"));
        in.put("string", "text");
        in.put("ascii", AsciiString.of("raw"));
        in.put("bytes", new byte[] {8});
        in.put("list", List.of(1, "a"));
        in.put("array", new Object[] {2L});
        in.put("instant", Instant.ofEpochSecond(10));
        in.put("date", new Date(11_999));
        in.put("map", Map.of("k", "v"));
        in.put("null", null);
        ByteBuf buf = encode(in);
        try {
            FieldTable.Cursor c = new FieldTable().wrap(buf, 0).cursor();
            StringBuilder tags = new StringBuilder();
            while (c.next()) {
                tags.append(c.type().tag());
            }
            assertEquals("tbsIlfdDSSxAATTFV", tags.toString());
            Map<String, Object> out = new FieldTable().wrap(buf, 0).toMap();
            assertEquals(new BigDecimal("7.89"), out.get("decimal"));
            assertEquals("raw", out.get("ascii"));
            assertEquals(List.of(2L), out.get("array"));
            assertEquals(Instant.ofEpochSecond(11), out.get("date"));
        } finally {
            buf.release();
        }
    }

    @Test
    void longStringsAndUnsignedValuesEncodeWithTheirOwnTags() {
        byte[] notUtf8 = {(byte) 0xC3, 0x28, (byte) 0xFF};
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("S", LongString.of(notUtf8));
        in.put("S-utf8", LongString.of("ok".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        in.put("B", Unsigned.shortShortUint(255));
        in.put("u", Unsigned.shortUint(65535));
        in.put("i", Unsigned.longUint(0xFFFF_FFFFL));
        ByteBuf buf = encode(in);
        try {
            ByteBuf expected = Unpooled.buffer().writeInt(0);
            entry(expected, "S", 'S').writeInt(3).writeBytes(notUtf8);
            entry(expected, "S-utf8", 'S')
                    .writeInt(2)
                    .writeBytes("ok".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            entry(expected, "B", 'B').writeByte(255);
            entry(expected, "u", 'u').writeShort(65535);
            entry(expected, "i", 'i').writeInt(-1);
            expected.setInt(0, expected.writerIndex() - 4);
            assertEquals(ByteBufUtil.hexDump(expected), ByteBufUtil.hexDump(buf));
            expected.release();
            Map<String, Object> out = new FieldTable().wrap(buf, 0).toMap();
            assertEquals(LongString.of(notUtf8), out.get("S"));
            assertEquals("ok", out.get("S-utf8"), "valid UTF-8 decodes to a String, which encodes the same");
            assertEquals(in.get("B"), out.get("B"));
            assertEquals(0xFFFF_FFFFL, ((Number) out.get("i")).longValue());
        } finally {
            buf.release();
        }
        LongString s = LongString.of(notUtf8);
        notUtf8[0] = 'x';
        assertEquals(3, s.length());
        assertEquals((byte) 0xC3, s.bytes()[0], "of() copies");
        assertEquals("\uFFFD(\uFFFD", s.toString());
        assertEquals(FieldType.UNSIGNED_16, Unsigned.shortUint(7).type());
        assertFalse(Unsigned.shortUint(7).equals(Unsigned.longUint(7)), "the width is part of the value");
        assertThrows(IllegalArgumentException.class, () -> Unsigned.shortShortUint(256));
        assertThrows(IllegalArgumentException.class, () -> Unsigned.shortUint(-1));
        assertThrows(IllegalArgumentException.class, () -> Unsigned.longUint(1L << 32));
    }

    @Test
    void longStringsThatAreAlmostUtf8EncodeBackToTheirBytes() {
        byte[][] cases = {
            {(byte) 0xED, (byte) 0xA0, (byte) 0x80}, // a surrogate encoded on its own (CESU-8)
            {(byte) 0xED, (byte) 0xA0, (byte) 0xBD, (byte) 0xED, (byte) 0xB8, (byte) 0x80}, // a CESU-8 pair
            {(byte) 0xC0, (byte) 0x80}, // overlong NUL (modified UTF-8)
            {(byte) 0xE0, (byte) 0x80, (byte) 0xAF}, // overlong '/'
            {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, // beyond U+10FFFF
            {(byte) 0xF0, (byte) 0x9F, (byte) 0x98}, // a four-byte character cut short
            {'o', 'k', (byte) 0xFE},
        };
        for (byte[] bytes : cases) {
            ByteBuf buf = Unpooled.buffer().writeInt(0);
            entry(buf, "S", 'S').writeInt(bytes.length).writeBytes(bytes);
            buf.setInt(0, buf.writerIndex() - 4);
            try {
                Map<String, Object> map = new FieldTable().wrap(buf, 0).toMap();
                assertEquals(LongString.of(bytes), map.get("S"), ByteBufUtil.hexDump(bytes));
                ByteBuf again = encode(map);
                assertEquals(ByteBufUtil.hexDump(buf), ByteBufUtil.hexDump(again));
                again.release();
            } finally {
                buf.release();
            }
        }
    }

    @Test
    void aTimestampBeyondInstantsRangeIsClampedNotAFailure() {
        ByteBuf buf = Unpooled.buffer().writeInt(0);
        entry(buf, "T", 'T').writeLong(Long.MIN_VALUE);
        buf.setInt(0, buf.writerIndex() - 4);
        try {
            assertEquals(Instant.MIN, new FieldTable().wrap(buf, 0).toMap().get("T"));
            FieldTable.Cursor c = new FieldTable().wrap(buf, 0).cursor();
            assertTrue(c.next());
            assertEquals(Long.MIN_VALUE, c.longValue(), "the cursor reads the exact seconds");
        } finally {
            buf.release();
        }
    }

    @Test
    void unsupportedValuesAreRefusedWithTheirPath() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> FieldTableEncoder.encodedLength(Map.of("outer", Map.of("inner", List.of(1, new Object())))));
        assertTrue(
                e.getMessage().contains("at 'outer'.'inner'[1]: a java.lang.Object has no AMQP field type"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> FieldTableEncoder.encodedLength(Map.of("k".repeat(256), 1)));
        Map<String, Object> nullKey = new LinkedHashMap<>();
        nullKey.put(null, 1);
        assertThrows(IllegalArgumentException.class, () -> FieldTableEncoder.encodedLength(nullKey));
        assertThrows(
                IllegalArgumentException.class,
                () -> FieldTableEncoder.encodedLength(Map.of("d", new BigDecimal("1e-300"))));
        assertThrows(
                IllegalArgumentException.class,
                () -> FieldTableEncoder.encodedLength(Map.of("d", new BigDecimal("99999999999"))));
        assertEquals(
                4 + 1 + 1 + 1 + 5,
                FieldTableEncoder.encodedLength(Map.of("d", new BigDecimal("1E+3"))),
                "a negative scale is removed exactly");
    }

    @Test
    void nullTableIsEmpty() {
        assertEquals(4, FieldTableEncoder.encodedLength(null));
        ByteBuf buf = Unpooled.buffer();
        FieldTableEncoder.encode(buf, null);
        assertTrue(new FieldTable().wrap(buf, 0).isEmpty());
        buf.release();
    }

    @Test
    void sliceForwardsTheEncodedTable() {
        ByteBuf buf = encode(Map.of("a", 1));
        try {
            assertArrayEquals(
                    ByteBufUtil.getBytes(buf),
                    ByteBufUtil.getBytes(new FieldTable().wrap(buf, 0).slice()));
        } finally {
            buf.release();
        }
    }

    @Test
    void validationErrors() {
        ByteBuf good = everyType();
        byte[] bytes = ByteBufUtil.getBytes(good);
        good.release();
        // every truncation of a valid table is a syntax error, never an IndexOutOfBoundsException
        for (int cut = 0; cut < bytes.length; cut++) {
            ByteBuf truncated = Unpooled.wrappedBuffer(Arrays.copyOf(bytes, cut));
            int end = cut;
            AmqpProtocolException e = assertThrows(
                    AmqpProtocolException.class, () -> FieldTable.validate(truncated, 0, end), "cut at " + cut);
            assertEquals(ReplyCode.SYNTAX_ERROR, e.replyCode());
            truncated.release();
        }
        // and so is a shorter length field that cuts a value in two
        ByteBuf shorter = Unpooled.wrappedBuffer(bytes.clone());
        shorter.setInt(0, shorter.getInt(0) - 1);
        assertThrows(AmqpProtocolException.class, () -> FieldTable.validate(shorter, 0, bytes.length));
        shorter.release();
    }
}
