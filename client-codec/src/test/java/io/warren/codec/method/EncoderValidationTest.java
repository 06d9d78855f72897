package io.warren.codec.method;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.AsciiString;
import io.warren.codec.Frames;
import io.warren.codec.content.ShortString;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Encoder setters check their values at once; shortstr forms (String, AsciiString, ShortString) agree. */
class EncoderValidationTest {

    @Test
    void nullShortStringIsRefused() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new QueueDeclareEncoder().queue(null));
        assertEquals("queue must not be null", e.getMessage());
    }

    @Test
    void shortStringOver255Utf8BytesIsRefused() {
        new ExchangeDeclareEncoder().exchange("e".repeat(255));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> new ExchangeDeclareEncoder().exchange("e".repeat(256)));
        assertTrue(e.getMessage().startsWith("exchange is 256 bytes in UTF-8"), e.getMessage());
        // 86 three-byte characters are 258 bytes though only 86 chars
        assertThrows(IllegalArgumentException.class, () -> new BasicPublishEncoder().routingKey("\u2713".repeat(86)));
        assertThrows(IllegalArgumentException.class, () -> ShortString.of("x".repeat(256)));
    }

    @Test
    void numbersOutsideTheirWireTypeAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ConnectionTuneEncoder().channelMax(65536));
        assertThrows(IllegalArgumentException.class, () -> new ConnectionTuneEncoder().channelMax(-1));
        assertThrows(IllegalArgumentException.class, () -> new ConnectionTuneEncoder().frameMax(1L << 32));
        assertThrows(IllegalArgumentException.class, () -> new ConnectionStartEncoder().versionMajor(256));
        new ConnectionTuneEncoder().channelMax(65535).frameMax(0xFFFFFFFFL);
    }

    @Test
    void unsupportedTableValueIsRefusedInTheSetter() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> new QueueDeclareEncoder().arguments(Map.of("x-thing", Thread.currentThread())));
        assertTrue(e.getMessage().contains("'x-thing'"), e.getMessage());
    }

    @Test
    void nullLongStringIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ConnectionStartOkEncoder().response((byte[]) null));
        assertThrows(
                IllegalArgumentException.class, () -> new ConnectionStartOkEncoder().response((CharSequence) null));
    }

    @Test
    void stringAsciiStringAndShortStringEncodeTheSameBytes() {
        String name = "caf\u00e9.orders";
        byte[] a = encode(new BasicPublishEncoder().exchange(name).routingKey(name));
        byte[] b =
                encode(new BasicPublishEncoder().exchange(ShortString.of(name)).routingKey(ShortString.of(name)));
        AsciiString raw = new AsciiString(name.getBytes(java.nio.charset.StandardCharsets.UTF_8), false);
        byte[] c = encode(new BasicPublishEncoder().exchange(raw).routingKey(new StringBuilder(name)));
        assertArrayEquals(a, b);
        assertArrayEquals(a, c);
    }

    @Test
    void aNameReadFromAViewIsWrittenBackByteForByte() {
        ByteBuf frame = Frames.method(
                UnpooledByteBufAllocator.DEFAULT, 1, new BasicConsumeOkEncoder().consumerTag("amq.ctag-\u00e9"));
        try {
            BasicConsumeOk ok = new BasicConsumeOk().wrap(frame, Frames.FRAME_HEADER_SIZE);
            byte[] cancel = encode(new BasicCancelEncoder().consumerTag(ok.consumerTag()));
            byte[] expected = encode(new BasicCancelEncoder().consumerTag("amq.ctag-\u00e9"));
            assertArrayEquals(expected, cancel);
        } finally {
            frame.release();
        }
    }

    @Test
    void modifyingATableAfterSettingItIsDetected() {
        Map<String, Object> args = new HashMap<>();
        args.put("a", 1);
        QueueDeclareEncoder encoder = new QueueDeclareEncoder().arguments(args);
        args.put("b", 2);
        assertThrows(IllegalStateException.class, () -> Frames.method(UnpooledByteBufAllocator.DEFAULT, 1, encoder));
    }

    @Test
    void resetRestoresDefaults() {
        QueueDeclareEncoder encoder =
                new QueueDeclareEncoder().queue("q").durable(true).arguments(Map.of("a", 1));
        assertArrayEquals(encode(new QueueDeclareEncoder()), encode(encoder.reset()));
        assertTrue(encoder.toString().startsWith("queue.declare(ticket=0, queue=, passive=false"));
    }

    @Test
    void channelMustBeUnsigned16Bit() {
        assertThrows(
                IllegalArgumentException.class,
                () -> Frames.method(UnpooledByteBufAllocator.DEFAULT, 65536, new ChannelOpenEncoder()));
    }

    private static byte[] encode(MethodEncoder encoder) {
        ByteBuf buf = Unpooled.buffer(encoder.encodedLength(), encoder.encodedLength());
        encoder.encode(buf);
        byte[] bytes = ByteBufUtil.getBytes(buf);
        buf.release();
        return bytes;
    }
}
