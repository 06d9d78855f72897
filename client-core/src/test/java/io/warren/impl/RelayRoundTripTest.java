package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.GetResponse;
import io.warren.codec.Frame;
import io.warren.codec.Frames;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicGetOkEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.table.LongString;
import io.warren.codec.table.Unsigned;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * A relay built on Warren forwards what it receives unchanged: the properties of a delivery (or a basic.get
 * response), handed to {@link Channel#publish}, put the content header's exact bytes back on the wire. The header
 * here carries what other clients and the broker send and a Java mapping used to change: long strings that are
 * not UTF-8 (were re-sent as byte arrays {@code x}), unsigned {@code B u i} values (were re-sent as the wider
 * signed {@code s I l}), a message-id that is not UTF-8 (was re-sent with U+FFFD), a timestamp beyond
 * {@code Instant}'s range (was clamped), tables in arrays in tables, every other field type.
 */
class RelayRoundTripTest {

    private static final byte[] BODY = "payload".getBytes(StandardCharsets.US_ASCII);

    /** The content-header payload a broker delivers: class 60, weight 0, body size, flags, values. */
    static byte[] deliveredHeader() {
        ByteBuf deep = table(t -> {
            entry(t, "deep", 'S').writeInt(1).writeByte(0xFF);
            entry(t, "b", 'b').writeByte(-1);
        });
        ByteBuf list = Unpooled.buffer().writeInt(0);
        list.writeByte('F').writeBytes(deep);
        list.writeByte('s').writeShort(-2);
        list.writeByte('D').writeByte(3).writeInt(12345);
        list.writeByte('T').writeLong(1_700_000_000L);
        list.writeByte('x').writeInt(2).writeByte(1).writeByte(2);
        list.writeByte('V');
        list.setInt(0, list.writerIndex() - 4);
        ByteBuf nested = table(t -> entry(t, "list", 'A').writeBytes(list));
        ByteBuf headers = table(t -> {
            entry(t, "latin1", 'S').writeInt(3).writeByte(0xE9).writeByte('t').writeByte(0xE9);
            entry(t, "B", 'B').writeByte(200);
            entry(t, "u", 'u').writeShort(65000);
            entry(t, "i", 'i').writeInt(0xF0000000);
            entry(t, "nested", 'F').writeBytes(nested);
            entry(t, "t", 't').writeByte(1);
            entry(t, "f", 'f').writeInt(0x7FC00001); // a NaN with a payload
            entry(t, "d", 'd').writeDouble(-0.0);
            entry(t, "l", 'l').writeLong(Long.MIN_VALUE);
            entry(t, "I", 'I').writeInt(-7);
            entry(t, "utf8", 'S').writeInt(3).writeBytes("\u00e9t".getBytes(StandardCharsets.UTF_8));
        });
        int flags = ContentHeader.CONTENT_TYPE
                | ContentHeader.HEADERS
                | ContentHeader.DELIVERY_MODE
                | ContentHeader.PRIORITY
                | ContentHeader.MESSAGE_ID
                | ContentHeader.TIMESTAMP
                | ContentHeader.APP_ID;
        ByteBuf h = Unpooled.buffer()
                .writeShort(60)
                .writeShort(0)
                .writeLong(BODY.length)
                .writeShort(flags);
        h.writeByte(10).writeBytes("text/plain".getBytes(StandardCharsets.US_ASCII));
        h.writeBytes(headers);
        h.writeByte(2).writeByte(9);
        h.writeByte(2).writeByte(0xC3).writeByte(0x28); // message-id: not UTF-8
        h.writeLong(Long.MAX_VALUE); // timestamp beyond Instant's range
        byte[] appId = "relay-\u00e9".getBytes(StandardCharsets.UTF_8);
        h.writeByte(appId.length).writeBytes(appId);
        byte[] bytes = ByteBufUtil.getBytes(h);
        for (ByteBuf b : List.of(deep, list, nested, headers, h)) {
            b.release();
        }
        return bytes;
    }

    private static ByteBuf table(java.util.function.Consumer<ByteBuf> entries) {
        ByteBuf t = Unpooled.buffer().writeInt(0);
        entries.accept(t);
        return t.setInt(0, t.writerIndex() - 4);
    }

    private static ByteBuf entry(ByteBuf b, String name, char tag) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        return b.writeByte(n.length).writeBytes(n).writeByte(tag);
    }

    private static void sendHeaderAndBody(FakeBroker broker, byte[] header) {
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.HEADER, 1, header.length);
        frame.writeBytes(header).writeByte(Frames.FRAME_END);
        broker.sendRaw(frame);
        broker.client.writeInbound(Frames.body(FakeBroker.ALLOC, 1, Unpooled.wrappedBuffer(BODY)));
    }

    /** The content-header payload of the publish the client wrote next (after its basic.publish). */
    private static String publishedHeader(FakeBroker broker) {
        broker.expectAndRelease(1, MethodIds.BASIC_PUBLISH);
        Frame header = broker.next();
        assertNotNull(header, "a content header after basic.publish");
        try {
            assertEquals(FrameType.HEADER, header.type());
            return ByteBufUtil.hexDump(header.payload());
        } finally {
            header.release();
            Frame body = broker.next();
            assertEquals(FrameType.BODY, body.type());
            body.release();
        }
    }

    @Test
    void aDeliverysPropertiesArePublishedAsTheBytesTheyCameIn() {
        byte[] delivered = deliveredHeader();
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumeOptions options = new ConsumeOptions().noAck(true);
            CompletionStage<ConsumerHandle> stage = ch.consume("in", options, d -> {
                // the relay: same properties, same body, another exchange
                ch.publish(
                        "out", d.routingKey(), false, d.properties(), d.body().retain());
            });
            if (options.prefetch() >= 0) {
                broker.expectAndRelease(1, MethodIds.BASIC_QOS);
                broker.send(1, new BasicQosOkEncoder());
            }
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("ctag"));
            assertTrue(stage.toCompletableFuture().isDone());
            broker.send(
                    1,
                    new BasicDeliverEncoder()
                            .consumerTag("ctag")
                            .deliveryTag(1)
                            .exchange("x")
                            .routingKey("rk"));
            sendHeaderAndBody(broker, delivered);
            assertEquals(ByteBufUtil.hexDump(delivered), publishedHeader(broker));
            broker.expectNothing();
        }
    }

    @Test
    void aGetResponsesPropertiesArePublishedAsTheBytesTheyCameInAndReadAsTheirTypes() {
        byte[] delivered = deliveredHeader();
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<GetResponse> get = ch.basicGet("in", true);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(1, new BasicGetOkEncoder().deliveryTag(1).exchange("x").routingKey("rk"));
            sendHeaderAndBody(broker, delivered);
            GetResponse response = get.toCompletableFuture().join();
            try {
                Map<String, Object> headers = response.properties().headers();
                assertEquals(LongString.of(new byte[] {(byte) 0xE9, 't', (byte) 0xE9}), headers.get("latin1"));
                assertEquals(Unsigned.shortShortUint(200), headers.get("B"));
                assertEquals(65000, ((Number) headers.get("u")).intValue());
                assertEquals("\u00e9t", headers.get("utf8"));
                assertInstanceOf(
                        LongString.class,
                        ((Map<?, ?>) ((List<?>) ((Map<?, ?>) headers.get("nested")).get("list")).get(0)).get("deep"));
                assertEquals("\uFFFD(", response.properties().messageId(), "read decoded");
                ch.publish("out", "rk", false, response.properties(), BODY);
            } finally {
                response.release();
            }
            assertEquals(ByteBufUtil.hexDump(delivered), publishedHeader(broker));
        }
    }
}
