package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.method.MethodInfo;
import io.warren.codec.method.MethodTable;
import io.warren.codec.method.MethodView;
import io.warren.codec.table.FieldTable;
import io.warren.codec.table.FieldTableEncoder;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Property tests: random nested field tables and random content headers survive encode, validate and
 * decode unchanged (and re-encode to the same bytes); random and truncated payloads never get past
 * validation with anything but an {@link AmqpProtocolException}.
 */
class RoundTripPropertiesTest {

    // ------------------------------------------------------------------------------------------ tables

    @Property(tries = 400)
    void nestedTablesRoundTrip(@ForAll("tables") Map<String, Object> table) {
        ByteBuf buf = Unpooled.buffer(FieldTableEncoder.encodedLength(table));
        try {
            FieldTableEncoder.encode(buf, table);
            assertEquals(FieldTableEncoder.encodedLength(table), buf.readableBytes());
            assertEquals(buf.readableBytes(), FieldTable.validate(buf, 0, buf.readableBytes()));
            Map<String, Object> decoded = new FieldTable().wrap(buf, 0).toMap();
            assertEquals(normalize(table), normalize(decoded));
            // every type used maps back to its own tag: the encoding is canonical
            ByteBuf again = Unpooled.buffer();
            FieldTableEncoder.encode(again, decoded);
            assertArrayEquals(ByteBufUtil.getBytes(buf), ByteBufUtil.getBytes(again));
            again.release();
            // the cursor sees the same entries in the same order
            FieldTable.Cursor cursor = new FieldTable().wrap(buf, 0).cursor();
            List<String> keys = new ArrayList<>();
            while (cursor.next()) {
                keys.add(cursor.keyAsString());
                assertEquals(normalize(decoded.get(cursor.keyAsString())), normalize(cursor.value()));
            }
            assertEquals(new ArrayList<>(decoded.keySet()), keys);
        } finally {
            buf.release();
        }
    }

    @Property(tries = 200)
    void everyTruncationOfATableIsASyntaxError(
            @ForAll("tables") Map<String, Object> table, @ForAll @IntRange(min = 0, max = 10_000) int cutSeed) {
        ByteBuf buf = Unpooled.buffer();
        FieldTableEncoder.encode(buf, table);
        int cut = cutSeed % buf.readableBytes();
        try {
            FieldTable.validate(buf, 0, cut);
            throw new AssertionError("a table cut at " + cut + " of " + buf.readableBytes() + " validated");
        } catch (AmqpProtocolException e) {
            assertEquals(ReplyCode.SYNTAX_ERROR, e.replyCode());
        } finally {
            buf.release();
        }
    }

    @Provide
    Arbitrary<Map<String, Object>> tables() {
        return table(3);
    }

    private static Arbitrary<Map<String, Object>> table(int depth) {
        Arbitrary<String> keys = Arbitraries.strings()
                .withCharRange('a', 'z')
                .withChars('-', '_', '\u00e9')
                .ofMinLength(0)
                .ofMaxLength(12);
        return Arbitraries.maps(keys, value(depth))
                .ofMaxSize(depth == 3 ? 8 : 4)
                .map(LinkedHashMap::new);
    }

    private static Arbitrary<List<Object>> array(int depth) {
        return value(depth).list().ofMaxSize(4);
    }

    private static Arbitrary<Object> value(int depth) {
        List<Arbitrary<? extends Object>> choices = new ArrayList<>(List.of(
                Arbitraries.of(true, false),
                Arbitraries.bytes(),
                Arbitraries.shorts(),
                Arbitraries.integers(),
                Arbitraries.longs(),
                Arbitraries.floats(),
                Arbitraries.doubles(),
                Combinators.combine(
                                Arbitraries.integers(), Arbitraries.integers().between(0, 255))
                        .as((unscaled, scale) -> new BigDecimal(BigInteger.valueOf(unscaled), scale)),
                Arbitraries.strings().withCharRange('\u0000', '\ud7ff').ofMaxLength(20),
                Arbitraries.bytes().array(byte[].class).ofMaxSize(10),
                Arbitraries.longs().between(-1L << 40, 1L << 40).map(Instant::ofEpochSecond),
                Arbitraries.just(null)));
        if (depth > 0) {
            choices.add(Arbitraries.lazy(() -> table(depth - 1)));
            choices.add(Arbitraries.lazy(() -> array(depth - 1)));
        }
        @SuppressWarnings({"unchecked", "rawtypes"})
        Arbitrary<Object> one = (Arbitrary<Object>) (Arbitrary) Arbitraries.oneOf((List) choices);
        return one;
    }

    /** Maps and lists compared by content, byte arrays by their bytes. */
    private static Object normalize(Object value) {
        if (value instanceof byte[]) {
            return ByteBuffer.wrap((byte[]) value);
        }
        if (value instanceof Map) {
            Map<Object, Object> out = new LinkedHashMap<>();
            ((Map<?, ?>) value).forEach((k, v) -> out.put(k, normalize(v)));
            return out;
        }
        if (value instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object v : (List<?>) value) {
                out.add(normalize(v));
            }
            return out;
        }
        return value;
    }

    // ---------------------------------------------------------------------------------- content headers

    @Property(tries = 400)
    void contentHeadersRoundTrip(
            @ForAll("properties") BasicProperties props,
            @ForAll @IntRange(min = 0, max = Integer.MAX_VALUE) int bodySize) {
        ByteBuf buf = Unpooled.buffer(ContentHeaderEncoder.encodedLength(props));
        try {
            ContentHeaderEncoder.encode(buf, bodySize, props);
            assertEquals(ContentHeaderEncoder.encodedLength(props), buf.readableBytes());
            ContentHeader.validate(buf, 0, buf.readableBytes(), 1);
            ContentHeader view = new ContentHeader().wrap(buf, 0);
            assertEquals(bodySize, view.bodySize());
            assertEquals(props.propertyFlags(), view.propertyFlags());
            BasicProperties decoded = view.toProperties();
            assertEquals(props, decoded);
            assertEquals(props.contentType(), view.contentTypeAsString());
            assertEquals(props.messageId(), view.messageIdAsString());
            assertEquals(props.clusterId(), view.clusterIdAsString());
            assertEquals(props.deliveryMode() != null, view.hasDeliveryMode());
            assertEquals(props.timestamp() == null ? 0 : props.timestamp().getEpochSecond(), view.timestamp());
            assertEquals(
                    normalize(props.headers()),
                    view.hasHeaders() ? normalize(view.headers().toMap()) : null);
        } finally {
            buf.release();
        }
    }

    @Provide
    Arbitrary<BasicProperties> properties() {
        Arbitrary<String> s = Arbitraries.strings()
                .withCharRange(' ', '\u00ff')
                .ofMaxLength(30)
                .injectNull(0.5);
        Arbitrary<Integer> octet = Arbitraries.integers().between(0, 255).injectNull(0.5);
        Arbitrary<Instant> time = Arbitraries.longs()
                .between(0, 1L << 34)
                .map(Instant::ofEpochSecond)
                .injectNull(0.5);
        Arbitrary<Map<String, Object>> headers = table(2).injectNull(0.5);
        return Combinators.combine(s.list().ofSize(10), headers, octet, octet, time)
                .as((strings, h, mode, prio, ts) -> BasicProperties.builder()
                        .contentType(strings.get(0))
                        .contentEncoding(strings.get(1))
                        .headers(h)
                        .deliveryMode(mode)
                        .priority(prio)
                        .correlationId(strings.get(2))
                        .replyTo(strings.get(3))
                        .expiration(strings.get(4))
                        .messageId(strings.get(5))
                        .timestamp(ts)
                        .type(strings.get(6))
                        .userId(strings.get(7))
                        .appId(strings.get(8))
                        .clusterId(strings.get(9))
                        .build());
    }

    // ------------------------------------------------------------------------------- malformed payloads

    @Property(tries = 1000)
    void randomMethodPayloadsFailOnlyWithAProtocolException(
            @ForAll @IntRange(min = 0, max = 65) int methodIndex, @ForAll @Size(max = 40) List<Byte> arguments) {
        MethodInfo info = MethodTable.all().get(methodIndex);
        ByteBuf buf = Unpooled.buffer().writeShort(info.classId()).writeShort(info.methodId());
        for (byte b : arguments) {
            buf.writeByte(b);
        }
        try {
            MethodTable.validate(buf, 0, buf.readableBytes(), 1);
            // validated: every accessor must be safe
            MethodView view = info.newView().wrap(buf, 0);
            assertTrue(view.toString().startsWith(info.name()));
        } catch (AmqpProtocolException e) {
            assertTrue(e.replyCode() == ReplyCode.SYNTAX_ERROR, e.getMessage());
            assertEquals(1, e.channel());
        } finally {
            buf.release();
        }
    }

    @Property(tries = 300)
    void randomContentHeadersFailOnlyWithAProtocolException(
            @ForAll @IntRange(min = 0, max = 0xFFFF) int flags, @ForAll @Size(max = 60) List<Byte> values) {
        ByteBuf buf =
                Unpooled.buffer().writeShort(60).writeShort(0).writeLong(1).writeShort(flags);
        for (byte b : values) {
            buf.writeByte(b);
        }
        try {
            ContentHeader.validate(buf, 0, buf.readableBytes(), 1);
            assertTrue(new ContentHeader().wrap(buf, 0).toString().startsWith("ContentHeader"));
        } catch (AmqpProtocolException e) {
            assertEquals(ReplyCode.SYNTAX_ERROR, e.replyCode(), e.getMessage());
        } finally {
            buf.release();
        }
    }
}
