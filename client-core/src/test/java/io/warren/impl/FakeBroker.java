package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.Address;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.Frames;
import io.warren.codec.ProtocolHeader;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.ChannelCloseEncoder;
import io.warren.codec.method.ChannelCloseOkEncoder;
import io.warren.codec.method.ChannelOpenOkEncoder;
import io.warren.codec.method.ConnectionOpenOkEncoder;
import io.warren.codec.method.ConnectionStartEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodTable;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.connection.MethodNames;
import io.warren.impl.metrics.MetricsCollector;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A scripted broker for unit tests: the client's {@link ConnectionHandler} runs in an {@link EmbeddedChannel}
 * behind a real {@link FrameDecoder}; the test reads what the client wrote as decoded {@link Frame}s and
 * answers with frames made by the codec's encoders. Every frame handed to a test must be released by it
 * ({@link #expect} returns frames the caller releases; {@link #expectAndRelease} releases them itself).
 */
final class FakeBroker implements AutoCloseable {

    static final ByteBufAllocator ALLOC = ByteBufAllocator.DEFAULT;

    final ConnectionOptions options;
    final CompletableFuture<ConnectionImpl> connected = new CompletableFuture<>();
    final ConnectionHandler handler;
    final EmbeddedChannel client;
    private final EmbeddedChannel fromClient;
    private boolean headerSeen;

    FakeBroker() {
        this(new ConnectionOptions());
    }

    FakeBroker(ConnectionOptions options) {
        this(options, null);
    }

    /** A broker for the connection that recovery opens to take {@code recovering} over (null: a new one). */
    FakeBroker(ConnectionOptions options, ConnectionImpl recovering) {
        this(options, recovering, MetricsCollector.NOOP);
    }

    /** A broker for a connection that counts into {@code metrics}. */
    FakeBroker(ConnectionOptions options, ConnectionImpl recovering, MetricsCollector metrics) {
        this.options = options;
        this.handler =
                ConnectionImpl.newHandler(options, new Address("broker.test", 5672), connected, recovering, metrics);
        this.client = new EmbeddedChannel(new FrameDecoder(), handler);
        FrameDecoder serverSide = new FrameDecoder();
        serverSide.setFrameMax(0);
        this.fromClient = new EmbeddedChannel(serverSide);
    }

    /** Runs the client's pending tasks (flushes, drains) and returns the next frame it wrote, or null. */
    Frame next() {
        client.runPendingTasks();
        ByteBuf out;
        while ((out = client.readOutbound()) != null) {
            if (!headerSeen) {
                headerSeen = true;
                ByteBuf header = out.readRetainedSlice(ProtocolHeader.LENGTH);
                try {
                    assertEquals(Unpooled.wrappedBuffer(ProtocolHeader.bytes()), header, "protocol header");
                } finally {
                    header.release();
                }
            }
            fromClient.writeInbound(out);
        }
        return fromClient.readInbound();
    }

    /** The next frame the client wrote, which must be method {@code key} on {@code channel}; caller releases. */
    Frame expect(int channel, int key) {
        Frame f = next();
        assertNotNull(f, "expected " + MethodNames.describe(key) + " on channel " + channel + ", client wrote nothing");
        assertEquals(FrameType.METHOD, f.type(), () -> "expected a method frame, got " + f);
        int actual = f.payload().getInt(f.payload().readerIndex());
        if (actual != key || f.channel() != channel) {
            String got = MethodNames.describe(actual) + " on channel " + f.channel();
            f.release();
            throw new AssertionError(
                    "expected " + MethodNames.describe(key) + " on channel " + channel + ", got " + got);
        }
        return f;
    }

    void expectAndRelease(int channel, int key) {
        expect(channel, key).release();
    }

    /** Asserts the client wrote nothing more. */
    void expectNothing() {
        Frame f = next();
        if (f != null) {
            String what = f.type() == FrameType.METHOD
                    ? MethodTable.lookup(f.payload(), f.payload().readerIndex()) + " on channel " + f.channel()
                    : f.toString();
            f.release();
            throw new AssertionError("expected no frame, got " + what);
        }
    }

    void send(int channel, MethodEncoder encoder) {
        client.writeInbound(Frames.method(ALLOC, channel, encoder));
    }

    void sendRaw(ByteBuf bytes) {
        client.writeInbound(bytes);
    }

    void sendContent(int channel, BasicProperties props, byte[]... bodyParts) {
        long size = 0;
        for (byte[] part : bodyParts) {
            size += part.length;
        }
        client.writeInbound(Frames.contentHeader(ALLOC, channel, size, props));
        for (byte[] part : bodyParts) {
            client.writeInbound(Frames.body(ALLOC, channel, Unpooled.wrappedBuffer(part)));
        }
    }

    /** basic.deliver on exchange "x" with routing key "rk", then its content header and body frames. */
    void sendDeliver(
            int channel,
            String consumerTag,
            long deliveryTag,
            boolean redelivered,
            BasicProperties props,
            byte[]... bodyParts) {
        send(
                channel,
                new BasicDeliverEncoder()
                        .consumerTag(consumerTag)
                        .deliveryTag(deliveryTag)
                        .redelivered(redelivered)
                        .exchange("x")
                        .routingKey("rk"));
        sendContent(channel, props, bodyParts);
    }

    void sendStart(String mechanisms) {
        sendStart(mechanisms, Map.of("publisher_confirms", true));
    }

    /** connection.start offering {@code mechanisms}, with these server capabilities. */
    void sendStart(String mechanisms, Map<String, Object> capabilities) {
        send(
                0,
                new ConnectionStartEncoder()
                        .versionMajor(0)
                        .versionMinor(9)
                        .serverProperties(
                                Map.of("product", "FakeBroker", "version", "0.0", "capabilities", capabilities))
                        .mechanisms(mechanisms)
                        .locales("en_US"));
    }

    /** The whole handshake with the given tune; returns the open connection. */
    ConnectionImpl handshake(int channelMax, long frameMax, int heartbeat) {
        sendStart("PLAIN AMQPLAIN");
        expectAndRelease(0, MethodIds.CONNECTION_START_OK);
        send(
                0,
                new ConnectionTuneEncoder()
                        .channelMax(channelMax)
                        .frameMax(frameMax)
                        .heartbeat(heartbeat));
        expectAndRelease(0, MethodIds.CONNECTION_TUNE_OK);
        expectAndRelease(0, MethodIds.CONNECTION_OPEN);
        send(0, new ConnectionOpenOkEncoder());
        assertTrue(connected.isDone(), "connected after open-ok");
        return connected.join();
    }

    /** Tune and open after start-ok (and any secure rounds) were exchanged. */
    ConnectionImpl handshakeAfterStartOk() {
        send(0, new ConnectionTuneEncoder().channelMax(2047).frameMax(131072).heartbeat(0));
        expectAndRelease(0, MethodIds.CONNECTION_TUNE_OK);
        expectAndRelease(0, MethodIds.CONNECTION_OPEN);
        send(0, new ConnectionOpenOkEncoder());
        assertTrue(connected.isDone(), "connected after open-ok");
        return connected.join();
    }

    ConnectionImpl handshake() {
        return handshake(2047, 131072, 0);
    }

    /** Opens a channel and answers channel.open; returns it. */
    Channel openChannel(ConnectionImpl connection, int expectedNumber) {
        CompletionStage<Channel> stage = connection.openChannel();
        expectAndRelease(expectedNumber, MethodIds.CHANNEL_OPEN);
        send(expectedNumber, new ChannelOpenOkEncoder());
        Channel ch = stage.toCompletableFuture().join();
        assertEquals(expectedNumber, ch.channelNumber());
        return ch;
    }

    void sendChannelClose(int channel, int code, String text, int classId, int methodId) {
        send(
                channel,
                new ChannelCloseEncoder()
                        .replyCode(code)
                        .replyText(text)
                        .classId(classId)
                        .methodId(methodId));
    }

    void sendChannelCloseOk(int channel) {
        send(channel, new ChannelCloseOkEncoder());
    }

    @Override
    public void close() {
        client.finishAndReleaseAll();
        fromClient.finishAndReleaseAll();
    }

    /** Every frame the client wrote so far, as {@link #settlement} tells them; releases them. */
    List<String> written() {
        List<String> out = new java.util.ArrayList<>();
        Frame f;
        while ((f = next()) != null) {
            out.add(settlement(f));
        }
        return out;
    }

    /**
     * A frame the client wrote, as the broker reads it: "ack 5 multiple", "nack 3 requeue", "reject 2", or "method"
     * and the method's name; releases the frame.
     */
    static String settlement(Frame f) {
        try {
            var p = f.payload();
            int at = p.readerIndex();
            return switch (p.getInt(at)) {
                case MethodIds.BASIC_ACK -> {
                    io.warren.codec.method.BasicAck a = new io.warren.codec.method.BasicAck().wrap(p, at);
                    yield "ack " + a.deliveryTag() + (a.multiple() ? " multiple" : "");
                }
                case MethodIds.BASIC_NACK -> {
                    io.warren.codec.method.BasicNack n = new io.warren.codec.method.BasicNack().wrap(p, at);
                    yield "nack " + n.deliveryTag() + (n.multiple() ? " multiple" : "")
                            + (n.requeue() ? " requeue" : "");
                }
                case MethodIds.BASIC_REJECT -> {
                    io.warren.codec.method.BasicReject r = new io.warren.codec.method.BasicReject().wrap(p, at);
                    yield "reject " + r.deliveryTag() + (r.requeue() ? " requeue" : "");
                }
                default -> "method " + MethodTable.lookup(p, at).name();
            };
        } finally {
            f.release();
        }
    }
}
