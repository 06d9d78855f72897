package io.warren.codec.content;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ContentHeaderTest {

    private static final BasicProperties ALL = BasicProperties.builder()
            .contentType("application/json")
            .contentEncoding("gzip")
            .headers(Map.of("x-retries", 3, "x-trace", "abc"))
            .deliveryMode(2)
            .priority(7)
            .correlationId("corr-1")
            .replyTo("amq.rabbitmq.reply-to")
            .expiration("60000")
            .messageId("m-42")
            .timestamp(Instant.ofEpochSecond(1_700_000_000L))
            .type("order.created")
            .userId("guest")
            .appId("warren-test")
            .clusterId("c1")
            .build();

    private static ByteBuf payload(long bodySize, BasicProperties props) {
        ByteBuf buf = Unpooled.buffer(ContentHeaderEncoder.encodedLength(props));
        ContentHeaderEncoder.encode(buf, bodySize, props);
        return buf;
    }

    @Test
    void aTimestampBeyondInstantsRangeIsKeptExactAndClampedWhenMaterialised() {
        // class 60, weight 0, body size 1, flags: timestamp only (bit 6), then the 64-bit seconds
        ByteBuf buf = Unpooled.buffer()
                .writeShort(60)
                .writeShort(0)
                .writeLong(1)
                .writeShort(1 << 6)
                .writeLong(Long.MAX_VALUE);
        try {
            ContentHeader.validate(buf, 0, buf.readableBytes(), 1);
            ContentHeader h = new ContentHeader().wrap(buf, 0);
            assertEquals(Long.MAX_VALUE, h.timestamp());
            assertEquals(
                    Instant.MAX.getEpochSecond(), h.toProperties().timestamp().getEpochSecond());
            assertTrue(h.toString().contains("ContentHeader"));
        } finally {
            buf.release();
        }
    }

    @Test
    void allFourteenPropertiesRoundTripInWireOrder() {
        ByteBuf buf = payload(1234, ALL);
        try {
            assertEquals(ContentHeaderEncoder.encodedLength(ALL), buf.readableBytes());
            ContentHeader.validate(buf, 0, buf.readableBytes(), 1);
            ContentHeader h = new ContentHeader().wrap(buf, 0);
            assertEquals(60, h.classId());
            assertEquals(0, h.weight());
            assertEquals(1234, h.bodySize());
            assertEquals(0xFFFC, h.propertyFlags(), "bits 15..2 set, bit 1 and continuation clear");
            assertEquals("application/json", h.contentTypeAsString());
            assertEquals("gzip", h.contentEncoding().toString());
            assertEquals(3, h.headers().get("x-retries"));
            assertEquals(2, h.deliveryMode());
            assertEquals(7, h.priority());
            assertEquals("corr-1", h.correlationIdAsString());
            assertEquals("amq.rabbitmq.reply-to", h.replyToAsString());
            assertEquals("60000", h.expirationAsString());
            assertEquals("m-42", h.messageIdAsString());
            assertEquals(1_700_000_000L, h.timestamp());
            assertEquals("order.created", h.typeAsString());
            assertEquals("guest", h.userIdAsString());
            assertEquals("warren-test", h.appIdAsString());
            assertEquals("c1", h.clusterIdAsString());
            assertEquals(ALL, h.toProperties());
            assertEquals(ALL.headers(), h.toProperties().headers());
            assertEquals(buf.readableBytes() - 12, h.propertiesSlice().readableBytes());
        } finally {
            buf.release();
        }
    }

    @Test
    void absentPropertiesAreNullOrZero() {
        ByteBuf buf = payload(0, BasicProperties.builder().messageId("only").build());
        try {
            ContentHeader h = new ContentHeader().wrap(buf, 0);
            assertTrue(h.hasMessageId());
            assertFalse(h.hasContentType());
            assertNull(h.contentType());
            assertNull(h.contentTypeAsString());
            assertNull(h.headers());
            assertEquals(0, h.deliveryMode());
            assertEquals(0, h.timestamp());
            assertEquals("only", h.messageIdAsString());
        } finally {
            buf.release();
        }
    }

    @Test
    void continuationFlagsWordIsSkippedOnRead() {
        // flags word with bit 0 set, then an empty second word, then the properties
        ByteBuf buf = Unpooled.buffer();
        buf.writeShort(60).writeShort(0).writeLong(5);
        buf.writeShort(ContentHeader.CONTENT_TYPE | ContentHeader.PRIORITY | ContentHeader.CONTINUATION);
        buf.writeShort(0);
        buf.writeByte(4).writeBytes("text".getBytes()).writeByte(9);
        try {
            ContentHeader.validate(buf, 0, buf.readableBytes(), 1);
            ContentHeader h = new ContentHeader().wrap(buf, 0);
            assertEquals("text", h.contentTypeAsString());
            assertEquals(9, h.priority());
        } finally {
            buf.release();
        }
    }

    @Test
    void viewIsReusableAcrossWraps() {
        ByteBuf a = payload(1, BasicProperties.builder().contentType("a").build());
        ByteBuf b = payload(2, BasicProperties.builder().appId("b").build());
        try {
            ContentHeader h = new ContentHeader();
            assertEquals("a", h.wrap(a, 0).contentTypeAsString());
            assertNull(h.wrap(b, 0).contentType());
            assertEquals("b", h.appIdAsString());
        } finally {
            a.release();
            b.release();
        }
    }

    @Test
    void repeatedShortStringsComeFromTheCache() {
        ByteBuf a =
                payload(1, BasicProperties.builder().contentType("text/plain").build());
        ByteBuf b =
                payload(1, BasicProperties.builder().contentType("text/plain").build());
        try {
            assertSame(
                    new ContentHeader().wrap(a, 0).contentType(),
                    new ContentHeader().wrap(b, 0).contentType());
        } finally {
            a.release();
            b.release();
        }
    }

    @Test
    void builderChecksEagerly() {
        String tooLong = "x".repeat(256);
        assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().contentType(tooLong));
        // 128 two-byte characters: 256 bytes in UTF-8
        assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().messageId("\u00e9".repeat(128)));
        assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().priority(256));
        assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().deliveryMode(-1));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().headers(Map.of("bad", new Object())));
        assertTrue(e.getMessage().contains("'bad'"), e.getMessage());
    }

    @Test
    void propertiesAreSnapshotsOfTheirHeaders() {
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("a", 1);
        BasicProperties props = BasicProperties.builder().headers(headers).build();
        headers.put("b", 2);
        assertEquals(Map.of("a", 1), props.headers());
        assertEquals(props, props.toBuilder().build());
        assertTrue(props.toString().contains("headers={a=1}"));
    }

    @Test
    void encoderRefusesANegativeBodySize() {
        ByteBuf buf = Unpooled.buffer();
        assertThrows(IllegalArgumentException.class, () -> ContentHeaderEncoder.encode(buf, -1, BasicProperties.EMPTY));
        buf.release();
    }

    @Test
    void validateRejects() {
        for (List<Object> c : List.<List<Object>>of(
                List.of("too short", new byte[] {0, 60, 0, 0}, ReplyCode.SYNTAX_ERROR),
                List.of("bit 1", header(0x0002), ReplyCode.SYNTAX_ERROR),
                List.of(
                        "wrong class",
                        new byte[] {0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                        ReplyCode.UNEXPECTED_FRAME),
                List.of("trailing", append(header(0), (byte) 1), ReplyCode.SYNTAX_ERROR),
                List.of(
                        "truncated timestamp",
                        append(header(ContentHeader.TIMESTAMP), (byte) 1),
                        ReplyCode.SYNTAX_ERROR))) {
            ByteBuf buf = Unpooled.wrappedBuffer((byte[]) c.get(1));
            AmqpProtocolException e = assertThrows(
                    AmqpProtocolException.class, () -> ContentHeader.validate(buf, 0, buf.readableBytes(), 3), (String)
                            c.get(0));
            assertEquals(c.get(2), e.replyCode(), (String) c.get(0));
            assertEquals(3, e.channel());
            buf.release();
        }
    }

    private static byte[] header(int flags) {
        ByteBuf buf =
                Unpooled.buffer().writeShort(60).writeShort(0).writeLong(0).writeShort(flags);
        byte[] b = ByteBufUtil.getBytes(buf);
        buf.release();
        return b;
    }

    private static byte[] append(byte[] a, byte b) {
        byte[] c = java.util.Arrays.copyOf(a, a.length + 1);
        c[a.length] = b;
        return c;
    }
}
