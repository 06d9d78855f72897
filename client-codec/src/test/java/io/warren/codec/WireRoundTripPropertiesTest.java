package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.table.FieldArray;
import io.warren.codec.table.FieldTable;
import io.warren.codec.table.FieldTableEncoder;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Decoding and encoding again gives back the same bytes. The inputs are generated as bytes, not as Java values:
 * every RabbitMQ field type with any value ({@code t} as 0 or 1), long strings that are UTF-8 and long strings
 * that are not, tables in arrays in tables, unique UTF-8 field names; content headers with any subset of the 14
 * properties, short strings that are not UTF-8, any octet, any 64-bit timestamp. What a relay does with a
 * delivery's properties ({@code toProperties()}, then publish them) must put the same bytes on the wire.
 */
class WireRoundTripPropertiesTest {

    @Property(tries = 500)
    void aFieldTableEncodesBackToItsBytes(@ForAll("tables") byte[] table) {
        ByteBuf buf = Unpooled.wrappedBuffer(table);
        try {
            assertEquals(table.length, FieldTable.validate(buf, 0, table.length));
            Map<String, Object> map = new FieldTable().wrap(buf, 0).toMap();
            assertEquals(hex(table), encode(map));
        } finally {
            buf.release();
        }
    }

    @Property(tries = 300)
    void aFieldArrayEncodesBackToItsBytes(@ForAll("arrays") byte[] array) {
        ByteBuf buf = Unpooled.wrappedBuffer(array);
        try {
            assertEquals(array.length, FieldArray.validate(buf, 0, array.length));
            List<Object> list = new FieldArray().wrap(buf, 0).toList();
            ByteBuf out = Unpooled.buffer(FieldTableEncoder.encodedArrayLength(list));
            FieldTableEncoder.encodeArray(out, list);
            try {
                assertEquals(hex(array), ByteBufUtil.hexDump(out));
            } finally {
                out.release();
            }
        } finally {
            buf.release();
        }
    }

    @Property(tries = 500)
    void aContentHeaderEncodesBackToItsBytes(@ForAll("contentHeaders") byte[] header) {
        ByteBuf buf = Unpooled.wrappedBuffer(header);
        try {
            ContentHeader.validate(buf, 0, header.length, 1);
            ContentHeader view = new ContentHeader().wrap(buf, 0);
            BasicProperties properties = view.toProperties();
            ByteBuf out = Unpooled.buffer(ContentHeaderEncoder.encodedLength(properties));
            try {
                ContentHeaderEncoder.encode(out, view.bodySize(), properties);
                assertEquals(hex(header), ByteBufUtil.hexDump(out));
                // what toBuilder() keeps is the same again
                ByteBuf rebuilt = Unpooled.buffer();
                ContentHeaderEncoder.encode(
                        rebuilt, view.bodySize(), properties.toBuilder().build());
                assertEquals(hex(header), ByteBufUtil.hexDump(rebuilt));
                rebuilt.release();
            } finally {
                out.release();
            }
        } finally {
            buf.release();
        }
    }

    private static String encode(Map<String, Object> map) {
        ByteBuf out = Unpooled.buffer(FieldTableEncoder.encodedLength(map));
        try {
            FieldTableEncoder.encode(out, map);
            return ByteBufUtil.hexDump(out);
        } finally {
            out.release();
        }
    }

    private static String hex(byte[] bytes) {
        return ByteBufUtil.hexDump(bytes);
    }

    // ------------------------------------------------------------------------------------------- generators

    @Provide
    Arbitrary<byte[]> tables() {
        return table(3);
    }

    @Provide
    Arbitrary<byte[]> arrays() {
        return array(3);
    }

    /** 32-bit length, then name (shortstr, unique, UTF-8) and tagged value per entry. */
    private static Arbitrary<byte[]> table(int depth) {
        return Arbitraries.maps(names(), value(depth))
                .ofMaxSize(depth == 3 ? 8 : 4)
                .map(entries -> {
                    ByteArrayOutputStream body = new ByteArrayOutputStream();
                    entries.forEach((name, value) -> {
                        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
                        body.write(utf8.length);
                        body.writeBytes(utf8);
                        body.writeBytes(value);
                    });
                    return lengthPrefixed(body.toByteArray());
                });
    }

    private static Arbitrary<byte[]> array(int depth) {
        return value(depth).list().ofMaxSize(4).map(values -> {
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            values.forEach(body::writeBytes);
            return lengthPrefixed(body.toByteArray());
        });
    }

    /** A tag octet and a value of that type. */
    private static Arbitrary<byte[]> value(int depth) {
        List<Arbitrary<byte[]>> choices = new ArrayList<>(List.of(
                Arbitraries.of(0, 1).map(b -> new byte[] {'t', (byte) (int) b}),
                fixed('b', 1),
                fixed('B', 1),
                fixed('s', 2),
                fixed('u', 2),
                fixed('I', 4),
                fixed('i', 4),
                fixed('l', 8),
                fixed('f', 4),
                fixed('d', 8),
                fixed('D', 5),
                text(200).map(s -> tagged('S', lengthPrefixed(s.getBytes(StandardCharsets.UTF_8)))),
                anyBytes(40).map(b -> tagged('S', lengthPrefixed(b))),
                anyBytes(40).map(b -> tagged('x', lengthPrefixed(b))),
                Arbitraries.longs()
                        .between(Instant.MIN.getEpochSecond(), Instant.MAX.getEpochSecond())
                        .map(seconds -> tagged(
                                'T', ByteBuffer.allocate(8).putLong(seconds).array())),
                Arbitraries.just(new byte[] {'V'})));
        if (depth > 0) {
            choices.add(Arbitraries.lazy(() -> table(depth - 1)).map(t -> tagged('F', t)));
            choices.add(Arbitraries.lazy(() -> array(depth - 1)).map(a -> tagged('A', a)));
        }
        return Arbitraries.oneOf(choices);
    }

    private static Arbitrary<byte[]> fixed(char tag, int size) {
        return anyBytes(size).ofMinSize(size).map(b -> tagged(tag, b));
    }

    private static net.jqwik.api.arbitraries.ArrayArbitrary<Byte, byte[]> anyBytes(int maxSize) {
        return Arbitraries.bytes().array(byte[].class).ofMaxSize(maxSize);
    }

    /** Well-formed text: ASCII, two- and three-byte characters and surrogate pairs (four bytes). */
    private static Arbitrary<String> text(int maxLength) {
        Arbitrary<String> bmp = Arbitraries.strings()
                .withCharRange('\u0000', '\uD7FF')
                .withCharRange('\uE000', '\uFFFF')
                .ofMaxLength(maxLength);
        Arbitrary<String> supplementary =
                Arbitraries.integers().between(0x10000, 0x10FFFF).map(Character::toString);
        return Combinators.combine(bmp, supplementary, bmp.map(s -> s.length() > 8 ? s.substring(0, 8) : s))
                .as((a, b, c) -> a + b + c)
                .injectDuplicates(0.1);
    }

    /** Unique UTF-8 field names of at most 255 bytes. */
    private static Arbitrary<String> names() {
        return Arbitraries.oneOf(
                Arbitraries.strings()
                        .withCharRange('a', 'z')
                        .withChars('-', '_', '$', '#')
                        .ofMaxLength(20),
                text(40));
    }

    /** A short string's bytes: UTF-8 text, or any bytes (mostly not UTF-8). */
    private static Arbitrary<byte[]> shortString() {
        return Arbitraries.oneOf(text(60).map(s -> s.getBytes(StandardCharsets.UTF_8)), anyBytes(255))
                .map(b -> {
                    byte[] out = new byte[1 + b.length];
                    out[0] = (byte) b.length;
                    System.arraycopy(b, 0, out, 1, b.length);
                    return out;
                });
    }

    @Provide
    Arbitrary<byte[]> contentHeaders() {
        Arbitrary<Integer> flags = Arbitraries.integers().between(0, 0xFFFF).map(f -> f & 0xFFFC);
        Arbitrary<List<byte[]>> strings = shortString().list().ofSize(ContentHeader.PROPERTY_COUNT);
        Arbitrary<Long> bodySize = Arbitraries.longs().between(0, Long.MAX_VALUE);
        Arbitrary<byte[]> octets = anyBytes(2).ofMinSize(2);
        return Combinators.combine(flags, strings, table(2), octets, Arbitraries.longs(), bodySize)
                .as((f, s, headers, octet, timestamp, size) -> {
                    ByteBuffer out = ByteBuffer.allocate(14 + 14 * 256 + headers.length + 10);
                    out.putShort((short) 60).putShort((short) 0).putLong(size).putShort((short) (int) f);
                    for (int i = 0; i < ContentHeader.PROPERTY_COUNT; i++) {
                        if ((f & ContentHeader.flag(i)) == 0) {
                            continue;
                        }
                        switch (i) {
                            case ContentHeader.HEADERS_INDEX:
                                out.put(headers);
                                break;
                            case ContentHeader.DELIVERY_MODE_INDEX:
                                out.put(octet[0]);
                                break;
                            case ContentHeader.PRIORITY_INDEX:
                                out.put(octet[1]);
                                break;
                            case ContentHeader.TIMESTAMP_INDEX:
                                out.putLong(timestamp);
                                break;
                            default:
                                out.put(s.get(i));
                                break;
                        }
                    }
                    byte[] bytes = new byte[out.position()];
                    out.flip().get(bytes);
                    return bytes;
                });
    }

    private static byte[] tagged(char tag, byte[] value) {
        byte[] out = new byte[1 + value.length];
        out[0] = (byte) tag;
        System.arraycopy(value, 0, out, 1, value.length);
        return out;
    }

    private static byte[] lengthPrefixed(byte[] value) {
        return ByteBuffer.allocate(4 + value.length)
                .putInt(value.length)
                .put(value)
                .array();
    }
}
