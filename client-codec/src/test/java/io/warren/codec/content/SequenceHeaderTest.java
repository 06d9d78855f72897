package io.warren.codec.content;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The header a publisher adds to encoded properties, checked by decoding the result as a broker would. */
class SequenceHeaderTest {

    private static final SequenceHeader SEQ = new SequenceHeader("x-seq");

    static Stream<BasicProperties> properties() {
        return Stream.of(
                BasicProperties.EMPTY,
                BasicProperties.builder().deliveryMode(2).build(),
                BasicProperties.builder().contentType("text/plain").build(),
                BasicProperties.builder()
                        .contentType("application/json")
                        .contentEncoding("gzip")
                        .priority(3)
                        .build(),
                BasicProperties.builder().headers(Map.of("a", 1)).build(),
                BasicProperties.builder()
                        .contentEncoding("br")
                        .headers(Map.of("nested", Map.of("k", "v"), "n", 7L))
                        .messageId("m")
                        .build(),
                BasicProperties.builder()
                        .contentType("application/json")
                        .contentEncoding("gzip")
                        .headers(Map.of("x-retries", 3))
                        .deliveryMode(2)
                        .priority(7)
                        .correlationId("c")
                        .replyTo("r")
                        .expiration("1000")
                        .messageId("id")
                        .timestamp(Instant.ofEpochSecond(1_700_000_000L))
                        .type("t")
                        .userId("guest")
                        .appId("app")
                        .clusterId("cl")
                        .build());
    }

    private static ByteBuf payload(BasicProperties props, long value) {
        ByteBuf buf = Unpooled.buffer();
        ContentHeaderEncoder.encode(buf, 5, props, SEQ, value);
        return buf;
    }

    @ParameterizedTest
    @MethodSource("properties")
    void theEntryIsAddedAndEveryOtherPropertyIsKept(BasicProperties props) {
        ByteBuf buf = payload(props, 1L << 40);
        try {
            assertEquals(ContentHeaderEncoder.encodedLength(props, SEQ), buf.readableBytes());
            ContentHeader.validate(buf, 0, buf.readableBytes(), 1);
            ContentHeader h = new ContentHeader().wrap(buf, 0);
            assertEquals(5, h.bodySize());
            assertEquals(1L << 40, SEQ.find(h, -1));
            Map<String, Object> expected = new LinkedHashMap<>();
            if (props.headers() != null) {
                expected.putAll(props.headers());
            }
            expected.put("x-seq", 1L << 40);
            assertEquals(
                    props.toBuilder().headers(expected).build(),
                    h.toProperties(),
                    "the same properties as if the application had set the header");
        } finally {
            buf.release();
        }
    }

    @Test
    void anEntryOfTheSameNameAlreadyThereIsReplacedInItsPlace() {
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("a", 1);
        headers.put("x-seq", "a string from another publisher");
        headers.put("b", 2);
        BasicProperties props = BasicProperties.builder().headers(headers).build();
        ByteBuf buf = payload(props, 7);
        try {
            assertEquals(ContentHeaderEncoder.encodedLength(props, SEQ), buf.readableBytes());
            ContentHeader h = new ContentHeader().wrap(buf, 0);
            assertEquals(3, h.headers().size());
            assertEquals(7, SEQ.find(h, -1));
            assertEquals(
                    java.util.List.of("a", "x-seq", "b"),
                    new java.util.ArrayList<>(h.headers().toMap().keySet()));
        } finally {
            buf.release();
        }
    }

    @Test
    void aMessageWithoutItOrWithAnotherTypeGivesTheAbsentValue() {
        ByteBuf plain = Unpooled.buffer();
        ByteBuf text = Unpooled.buffer();
        try {
            ContentHeaderEncoder.encode(plain, 0, BasicProperties.EMPTY);
            assertEquals(-1, SEQ.find(new ContentHeader().wrap(plain, 0), -1));
            ContentHeaderEncoder.encode(
                    text,
                    0,
                    BasicProperties.builder().headers(Map.of("x-seq", "12")).build());
            assertEquals(-1, SEQ.find(new ContentHeader().wrap(text, 0), -1));
        } finally {
            plain.release();
            text.release();
        }
    }

    @Test
    void withoutAnAddedHeaderTheEncoderWritesThePropertiesAsTheyAre() {
        ByteBuf a = Unpooled.buffer();
        ByteBuf b = Unpooled.buffer();
        try {
            BasicProperties props = BasicProperties.builder().contentType("x").build();
            ContentHeaderEncoder.encode(a, 3, props, null, 42);
            ContentHeaderEncoder.encode(b, 3, props);
            assertEquals(b, a);
            assertNull(new ContentHeader().wrap(a, 0).headers());
        } finally {
            a.release();
            b.release();
        }
    }

    @Test
    void aNameMustBeShortAscii() {
        assertThrows(IllegalArgumentException.class, () -> new SequenceHeader(""));
        assertThrows(IllegalArgumentException.class, () -> new SequenceHeader("é"));
        assertThrows(IllegalArgumentException.class, () -> new SequenceHeader("x".repeat(256)));
        assertEquals("x".repeat(255), new SequenceHeader("x".repeat(255)).name().toString());
    }
}
