package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.impl.AMQContentHeader;
import com.rabbitmq.client.impl.AMQImpl;
import com.rabbitmq.client.impl.LongStringHelper;
import com.rabbitmq.client.impl.Method;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicDeliver;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicNackEncoder;
import io.warren.codec.method.BasicPublishEncoder;
import io.warren.codec.method.BasicQosEncoder;
import io.warren.codec.method.ChannelClose;
import io.warren.codec.method.ChannelCloseEncoder;
import io.warren.codec.method.ConnectionStart;
import io.warren.codec.method.ConnectionStartEncoder;
import io.warren.codec.method.ConnectionStartOkEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.ConnectionUpdateSecretEncoder;
import io.warren.codec.method.ExchangeBindEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.QueueDeclareEncoder;
import io.warren.codec.method.QueueDeclareOk;
import io.warren.codec.method.QueueDeclareOkEncoder;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Warren against the official Java client (com.rabbitmq:amqp-client): frames Warren writes are read by
 * amqp-client's own frame, method and content-header readers, frames amqp-client writes are read by
 * Warren's decoder and views, and where both encodings are canonical the bytes are identical.
 */
class AmqpClientInteropTest {

    private static final PooledByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

    // ------------------------------------------------------------------------------------ helpers

    private static byte[] warren(int channel, MethodEncoder encoder) {
        ByteBuf frame = Frames.method(ALLOC, channel, encoder);
        try {
            return ByteBufUtil.getBytes(frame);
        } finally {
            frame.release();
        }
    }

    private static byte[] rabbit(int channel, Method method) throws IOException {
        return bytes(method.toFrame(channel));
    }

    private static byte[] bytes(com.rabbitmq.client.impl.Frame frame) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        frame.writeTo(new DataOutputStream(out));
        return out.toByteArray();
    }

    /** amqp-client's own reading: Frame.readFrom, then AMQImpl.readMethodFrom on its payload. */
    private static Method readWithAmqpClient(byte[] frameBytes, int expectedChannel) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(frameBytes));
        com.rabbitmq.client.impl.Frame frame = com.rabbitmq.client.impl.Frame.readFrom(in, () -> Integer.MAX_VALUE);
        assertEquals(AMQP.FRAME_METHOD, frame.getType());
        assertEquals(expectedChannel, frame.getChannel());
        return AMQImpl.readMethodFrom(frame.getInputStream());
    }

    /** Warren's reading: the frames of {@code bytes} through FrameDecoder; the caller releases them. */
    private static List<Frame> readWithWarren(byte[] bytes) {
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(0);
        EmbeddedChannel channel = new EmbeddedChannel(decoder);
        channel.writeInbound(Unpooled.wrappedBuffer(bytes));
        List<Frame> frames = new java.util.ArrayList<>();
        Frame f;
        while ((f = channel.readInbound()) != null) {
            frames.add(f);
        }
        assertFalse(channel.finish());
        return frames;
    }

    // ------------------------------------------------------------------------- byte-identical methods

    @Test
    void methodsEncodeByteForByteLikeAmqpClient() throws IOException {
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("x-queue-type", "quorum");
        args.put("x-max-length", 1000);
        args.put("x-message-ttl", 60_000L);
        args.put("x-single-active-consumer", true);
        // amqp-client copies arguments into a HashMap: give Warren a map with the same iteration order
        assertArrayEquals(
                rabbit(1, new AMQImpl.Queue.Declare(0, "orders", false, true, false, false, false, args)),
                warren(
                        1,
                        new QueueDeclareEncoder()
                                .queue("orders")
                                .durable(true)
                                .arguments(new java.util.HashMap<>(args))));
        assertArrayEquals(
                rabbit(3, new AMQImpl.Basic.Publish(0, "amq.topic", "a.b", true, false)),
                warren(
                        3,
                        new BasicPublishEncoder()
                                .exchange(ShortString.of("amq.topic"))
                                .routingKey("a.b")
                                .mandatory(true)));
        assertArrayEquals(
                rabbit(2, new AMQImpl.Basic.Deliver("amq.ctag-x", 123_456_789_012L, true, "ex", "rk")),
                warren(
                        2,
                        new BasicDeliverEncoder()
                                .consumerTag("amq.ctag-x")
                                .deliveryTag(123_456_789_012L)
                                .redelivered(true)
                                .exchange("ex")
                                .routingKey("rk")));
        assertArrayEquals(
                rabbit(1, new AMQImpl.Basic.Ack(77, true)),
                warren(1, new BasicAckEncoder().deliveryTag(77).multiple(true)));
        assertArrayEquals(
                rabbit(1, new AMQImpl.Basic.Nack(78, true, false)),
                warren(1, new BasicNackEncoder().deliveryTag(78).multiple(true).requeue(false)));
        assertArrayEquals(
                rabbit(1, new AMQImpl.Basic.Qos(0, 250, true)),
                warren(1, new BasicQosEncoder().prefetchCount(250).global(true)));
        assertArrayEquals(
                rabbit(0, new AMQImpl.Connection.Tune(2047, 131072, 60)),
                warren(
                        0,
                        new ConnectionTuneEncoder()
                                .channelMax(2047)
                                .frameMax(131072)
                                .heartbeat(60)));
        assertArrayEquals(
                rabbit(5, new AMQImpl.Channel.Close(406, "PRECONDITION_FAILED - inequivalent arg", 50, 10)),
                warren(
                        5,
                        new ChannelCloseEncoder()
                                .replyCode(406)
                                .replyText("PRECONDITION_FAILED - inequivalent arg")
                                .classId(50)
                                .methodId(10)));
        assertArrayEquals(
                rabbit(1, new AMQImpl.Exchange.Bind(0, "dest", "src", "rk", false, Map.of("x-match", "all"))),
                warren(
                        1,
                        new ExchangeBindEncoder()
                                .destination("dest")
                                .source("src")
                                .routingKey("rk")
                                .arguments(Map.of("x-match", "all"))));
        assertArrayEquals(
                rabbit(0, new AMQImpl.Connection.UpdateSecret(LongStringHelper.asLongString("token"), "refresh")),
                warren(0, new ConnectionUpdateSecretEncoder().newSecret("token").reason("refresh")));
        assertArrayEquals(
                rabbit(4, new AMQImpl.Queue.DeclareOk("amq.gen-abc", 12, 3)),
                warren(
                        4,
                        new QueueDeclareOkEncoder()
                                .queue("amq.gen-abc")
                                .messageCount(12)
                                .consumerCount(3)));
    }

    // ------------------------------------------------------------------------------ Warren -> amqp-client

    @Test
    void amqpClientReadsWarrensStartOk() throws IOException {
        Map<String, Object> capabilities = new LinkedHashMap<>();
        capabilities.put("publisher_confirms", true);
        capabilities.put("consumer_cancel_notify", true);
        Map<String, Object> clientProperties = new LinkedHashMap<>();
        clientProperties.put("product", "Warren");
        clientProperties.put("version", "0.1.0");
        clientProperties.put("capabilities", capabilities);
        clientProperties.put("pi", new BigDecimal("3.14"));
        clientProperties.put("when", Instant.ofEpochSecond(1_700_000_000L));
        clientProperties.put("list", List.of(1, "two", 3L));
        byte[] response = "\0guest\0guest".getBytes(StandardCharsets.UTF_8);
        byte[] frame = warren(
                0,
                new ConnectionStartOkEncoder()
                        .clientProperties(clientProperties)
                        .mechanism("PLAIN")
                        .response(response)
                        .locale("en_US"));
        AMQImpl.Connection.StartOk startOk =
                assertInstanceOf(AMQImpl.Connection.StartOk.class, readWithAmqpClient(frame, 0));
        assertEquals("PLAIN", startOk.getMechanism());
        assertEquals("en_US", startOk.getLocale());
        assertArrayEquals(response, startOk.getResponse().getBytes());
        Map<String, Object> read = startOk.getClientProperties();
        assertEquals("Warren", read.get("product").toString());
        assertEquals(true, ((Map<?, ?>) read.get("capabilities")).get("publisher_confirms"));
        assertEquals(new BigDecimal("3.14"), read.get("pi"));
        assertEquals(new Date(1_700_000_000_000L), read.get("when"));
        List<?> list = (List<?>) read.get("list");
        assertEquals(1, list.get(0));
        assertEquals("two", list.get(1).toString());
        assertEquals(3L, list.get(2));
    }

    @Test
    void amqpClientReadsWarrensPublishFraming() throws IOException {
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("x-trace", "t-1");
        headers.put("x-count", 2);
        BasicProperties props = BasicProperties.builder()
                .contentType("application/json")
                .headers(headers)
                .deliveryMode(2)
                .priority(4)
                .correlationId("c")
                .replyTo("r")
                .expiration("1000")
                .messageId("m")
                .timestamp(Instant.ofEpochSecond(1_600_000_000L))
                .type("t")
                .userId("guest")
                .appId("a")
                .build();
        byte[] body = new byte[10_000];
        java.util.Arrays.fill(body, (byte) 'z');
        ByteBuf framed = PublishFraming.publish(
                ALLOC,
                7,
                4096,
                new BasicPublishEncoder().exchange("amq.direct").routingKey("rk"),
                props,
                ALLOC.buffer().writeBytes(body));
        byte[] bytes = ByteBufUtil.getBytes(framed);
        framed.release();

        DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
        com.rabbitmq.client.impl.Frame methodFrame = com.rabbitmq.client.impl.Frame.readFrom(in, () -> 4096);
        AMQImpl.Basic.Publish publish =
                assertInstanceOf(AMQImpl.Basic.Publish.class, AMQImpl.readMethodFrom(methodFrame.getInputStream()));
        assertEquals("amq.direct", publish.getExchange());
        assertEquals("rk", publish.getRoutingKey());
        com.rabbitmq.client.impl.Frame headerFrame = com.rabbitmq.client.impl.Frame.readFrom(in, () -> 4096);
        assertEquals(AMQP.FRAME_HEADER, headerFrame.getType());
        AMQContentHeader header = AMQImpl.readContentHeaderFrom(headerFrame.getInputStream());
        AMQP.BasicProperties read = (AMQP.BasicProperties) header;
        assertEquals(10_000, header.getBodySize());
        assertEquals("application/json", read.getContentType());
        assertEquals(2, read.getDeliveryMode());
        assertEquals(4, read.getPriority());
        assertEquals("c", read.getCorrelationId());
        assertEquals("1000", read.getExpiration());
        assertEquals(new Date(1_600_000_000_000L), read.getTimestamp());
        assertEquals("guest", read.getUserId());
        assertEquals("t-1", read.getHeaders().get("x-trace").toString());
        assertEquals(2, read.getHeaders().get("x-count"));
        ByteArrayOutputStream content = new ByteArrayOutputStream();
        for (int i = 0; i < 3; i++) {
            com.rabbitmq.client.impl.Frame bodyFrame = com.rabbitmq.client.impl.Frame.readFrom(in, () -> 4096);
            assertEquals(AMQP.FRAME_BODY, bodyFrame.getType());
            assertEquals(7, bodyFrame.getChannel());
            content.writeBytes(bodyFrame.getPayload());
        }
        assertArrayEquals(body, content.toByteArray());
        assertEquals(-1, in.read(), "nothing after the last body frame");
    }

    @Test
    void contentHeadersAreByteIdentical() throws IOException {
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("x-death", List.of(Map.of("count", 1L)));
        headers.put("flag", false);
        AMQP.BasicProperties theirs = new AMQP.BasicProperties.Builder()
                .contentType("text/plain")
                .contentEncoding("utf-8")
                .headers(headers)
                .deliveryMode(1)
                .priority(0)
                .correlationId("cid")
                .replyTo("reply")
                .expiration("5")
                .messageId("mid")
                .timestamp(new Date(1_234_567_000L))
                .type("type")
                .userId("u")
                .appId("app")
                .clusterId("cl")
                .build();
        BasicProperties ours = BasicProperties.builder()
                .contentType("text/plain")
                .contentEncoding("utf-8")
                .headers(headers)
                .deliveryMode(1)
                .priority(0)
                .correlationId("cid")
                .replyTo("reply")
                .expiration("5")
                .messageId("mid")
                .timestamp(Instant.ofEpochSecond(1_234_567L))
                .type("type")
                .userId("u")
                .appId("app")
                .clusterId("cl")
                .build();
        ByteBuf frame = Frames.contentHeader(ALLOC, 9, 4242, ours);
        try {
            assertArrayEquals(bytes(theirs.toFrame(9, 4242)), ByteBufUtil.getBytes(frame));
        } finally {
            frame.release();
        }
    }

    // ------------------------------------------------------------------------------ amqp-client -> Warren

    @Test
    void warrenReadsAmqpClientsDelivery() throws IOException {
        ByteArrayOutputStream stream = new ByteArrayOutputStream();
        stream.writeBytes(rabbit(3, new AMQImpl.Basic.Deliver("amq.ctag-\u00e9", 99, false, "amq.fanout", "")));
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .contentType("text/plain")
                .deliveryMode(2)
                .headers(Map.of("n", 5, "s", "v"))
                .timestamp(new Date(42_000L))
                .build();
        stream.writeBytes(bytes(props.toFrame(3, 5)));
        stream.writeBytes(bytes(com.rabbitmq.client.impl.Frame.fromBodyFragment(
                3, java.nio.ByteBuffer.wrap("hello".getBytes(StandardCharsets.US_ASCII)), 0, 5)));
        List<Frame> frames = readWithWarren(stream.toByteArray());
        try {
            assertEquals(3, frames.size());
            ByteBuf p = frames.get(0).payload();
            BasicDeliver deliver = new BasicDeliver().wrap(p, p.readerIndex());
            assertEquals("amq.ctag-\u00e9", deliver.consumerTagAsString());
            assertEquals(99, deliver.deliveryTag());
            assertFalse(deliver.redelivered());
            assertEquals("amq.fanout", deliver.exchangeAsString());
            assertEquals("", deliver.routingKeyAsString());
            ByteBuf h = frames.get(1).payload();
            ContentHeader header = new ContentHeader().wrap(h, h.readerIndex());
            assertEquals(5, header.bodySize());
            assertEquals("text/plain", header.contentTypeAsString());
            assertEquals(2, header.deliveryMode());
            assertEquals(42, header.timestamp());
            assertEquals(Map.of("n", 5, "s", "v"), header.headers().toMap());
            assertEquals("hello", frames.get(2).payload().toString(StandardCharsets.US_ASCII));
        } finally {
            frames.forEach(Frame::release);
        }
    }

    @Test
    void warrenReadsAmqpClientsServerMethods() throws IOException {
        Map<String, Object> serverProperties = new LinkedHashMap<>();
        serverProperties.put("product", LongStringHelper.asLongString("RabbitMQ"));
        serverProperties.put("capabilities", Map.of("basic.nack", true, "connection.blocked", true));
        byte[] start = rabbit(
                0,
                new AMQImpl.Connection.Start(
                        0,
                        9,
                        serverProperties,
                        LongStringHelper.asLongString("AMQPLAIN PLAIN"),
                        LongStringHelper.asLongString("en_US")));
        byte[] declareOk = rabbit(1, new AMQImpl.Queue.DeclareOk("amq.gen-1", 0xFFFFFFF0, 1));
        byte[] close = rabbit(1, new AMQImpl.Channel.Close(404, "NOT_FOUND - no queue 'q'", 50, 10));
        ByteArrayOutputStream stream = new ByteArrayOutputStream();
        stream.writeBytes(start);
        stream.writeBytes(declareOk);
        stream.writeBytes(close);
        List<Frame> frames = readWithWarren(stream.toByteArray());
        try {
            ByteBuf p = frames.get(0).payload();
            ConnectionStart s = new ConnectionStart().wrap(p, p.readerIndex());
            assertEquals(0, s.versionMajor());
            assertEquals(9, s.versionMinor());
            assertEquals("AMQPLAIN PLAIN", s.mechanismsAsString());
            assertEquals("en_US", s.locales().toString(StandardCharsets.UTF_8));
            Map<String, Object> props = s.serverProperties().toMap();
            assertEquals("RabbitMQ", props.get("product"));
            assertEquals(true, ((Map<?, ?>) props.get("capabilities")).get("connection.blocked"));
            assertTrue(s.serverProperties().containsKey("capabilities"));
            // Warren's own encoding of what it read (toMap keeps wire order) is the same bytes
            assertArrayEquals(
                    start,
                    warren(
                            0,
                            new ConnectionStartEncoder().serverProperties(props).mechanisms("AMQPLAIN PLAIN")));

            p = frames.get(1).payload();
            QueueDeclareOk ok = new QueueDeclareOk().wrap(p, p.readerIndex());
            assertEquals("amq.gen-1", ok.queueAsString());
            assertEquals(0xFFFFFFF0L, ok.messageCount(), "long is unsigned");
            assertEquals(1, ok.consumerCount());

            p = frames.get(2).payload();
            ChannelClose c = new ChannelClose().wrap(p, p.readerIndex());
            assertEquals(404, c.replyCode());
            assertEquals("NOT_FOUND - no queue 'q'", c.replyTextAsString());
            assertEquals(50, c.classId());
            assertEquals(10, c.methodId());
            assertEquals(1, frames.get(2).channel());
        } finally {
            frames.forEach(Frame::release);
        }
    }

    @Test
    void amqpClientHeaderOfEveryPropertyReadsBackEqual() throws IOException {
        AMQP.BasicProperties theirs = new AMQP.BasicProperties.Builder()
                .contentType("a")
                .contentEncoding("b")
                .headers(Map.of("h", 1L))
                .deliveryMode(2)
                .priority(9)
                .correlationId("c")
                .replyTo("d")
                .expiration("e")
                .messageId("f")
                .timestamp(new Date(7_000L))
                .type("g")
                .userId("h")
                .appId("i")
                .clusterId("j")
                .build();
        List<Frame> frames = readWithWarren(bytes(theirs.toFrame(1, 0)));
        try {
            ByteBuf h = frames.get(0).payload();
            BasicProperties ours = new ContentHeader().wrap(h, h.readerIndex()).toProperties();
            assertEquals(
                    BasicProperties.builder()
                            .contentType("a")
                            .contentEncoding("b")
                            .headers(Map.of("h", 1L))
                            .deliveryMode(2)
                            .priority(9)
                            .correlationId("c")
                            .replyTo("d")
                            .expiration("e")
                            .messageId("f")
                            .timestamp(Instant.ofEpochSecond(7))
                            .type("g")
                            .userId("h")
                            .appId("i")
                            .clusterId("j")
                            .build(),
                    ours);
        } finally {
            frames.forEach(Frame::release);
        }
    }

    @Test
    void longStringsFromAmqpClientAreSlicesNotCopies() throws IOException {
        LongString secret = LongStringHelper.asLongString(new byte[] {0, (byte) 0xFF, 1});
        List<Frame> frames = readWithWarren(rabbit(0, new AMQImpl.Connection.UpdateSecret(secret, "why")));
        try {
            ByteBuf p = frames.get(0).payload();
            io.warren.codec.method.ConnectionUpdateSecret view =
                    new io.warren.codec.method.ConnectionUpdateSecret().wrap(p, p.readerIndex());
            ByteBuf slice = view.newSecret();
            assertArrayEquals(secret.getBytes(), ByteBufUtil.getBytes(slice));
            assertEquals("why", view.reasonAsString());
        } finally {
            frames.forEach(Frame::release);
        }
    }
}
