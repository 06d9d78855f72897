package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.Address;
import io.warren.ConnectionOptions;
import io.warren.codec.FrameDecoder;
import io.warren.codec.ProtocolHeader;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.metrics.CountingMetrics;
import io.warren.impl.metrics.MetricsCollector;
import java.lang.reflect.Method;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The connection's pipeline as the connector builds it, and what Netty finds when it inspects its handlers. */
class PipelineInstallerTest {

    private static ConnectionHandler handler() {
        return ConnectionImpl.newHandler(
                new ConnectionOptions(),
                new Address("broker.test", 5672),
                new CompletableFuture<>(),
                null,
                MetricsCollector.NOOP);
    }

    private static PipelineInstaller installer(MetricsCollector metrics, ConnectionHandler handler) {
        return new PipelineInstaller(null, "broker.test", 5672, 10_000, metrics, handler);
    }

    @Test
    void installsTheDecoderAndTheConnectionHandlerAndLeaves() {
        ConnectionHandler handler = handler();
        EmbeddedChannel ch = new EmbeddedChannel(installer(MetricsCollector.NOOP, handler));
        try {
            assertEquals(List.of("frames", "amqp"), ch.pipeline().names().subList(0, 2));
            assertEquals(3, ch.pipeline().names().size(), "frames, amqp and the tail: " + ch.pipeline());
            assertTrue(ch.pipeline().get("frames") instanceof FrameDecoder);
            assertTrue(ch.pipeline().get("amqp") == handler);
            // the installed handlers work: the handshake began with the protocol header
            ByteBuf header = ch.readOutbound();
            assertNotNull(header, "protocol header written");
            try {
                assertEquals(Unpooled.wrappedBuffer(ProtocolHeader.bytes()), header);
            } finally {
                header.release();
            }
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void aCountingClientGetsTheByteCounterInFront() {
        ConnectionHandler handler = handler();
        EmbeddedChannel ch = new EmbeddedChannel(installer(new CountingMetrics(), handler));
        try {
            assertEquals(
                    List.of("bytes", "frames", "amqp"), ch.pipeline().names().subList(0, 3));
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /**
     * Netty reads {@code @Sharable} on every adapter it adds and {@code @Skip} on each event method a handler does
     * not override; the first annotation read in a JVM makes it generate proxy classes, about a tenth of a first
     * connect's CPU time. The handlers of a connection carry none that Netty would read.
     */
    @Test
    void nettyFindsNoAnnotationToReadOnTheConnectionsHandlers() throws Exception {
        List<String> found = new ArrayList<>();
        for (Class<?> c : List.of(PipelineInstaller.class, FrameDecoder.class, ConnectionHandler.class)) {
            for (Class<?> k = c; k != null; k = k.getSuperclass()) {
                if (k.getDeclaredAnnotations().length > 0) {
                    found.add(k.getName() + " (a superclass of " + c.getSimpleName() + ") is annotated");
                }
            }
            for (Method m : MASKED) {
                if (!m.getDeclaringClass().isAssignableFrom(c)) {
                    continue;
                }
                Method resolved = c.getMethod(m.getName(), m.getParameterTypes());
                if (resolved.getDeclaredAnnotations().length > 0) {
                    found.add(c.getSimpleName() + "." + m.getName() + " resolves to the annotated "
                            + resolved.getDeclaringClass().getName() + "." + m.getName());
                }
            }
        }
        assertTrue(found.isEmpty(), () -> String.join("\n", found));
    }

    /** The events whose handler methods Netty checks for {@code @Skip} (ChannelHandlerMask). */
    private static final List<Method> MASKED = masked();

    private static List<Method> masked() {
        try {
            Class<ChannelHandlerContext> ctx = ChannelHandlerContext.class;
            Class<?> in = io.netty.channel.ChannelInboundHandler.class;
            Class<?> out = io.netty.channel.ChannelOutboundHandler.class;
            return List.of(
                    ChannelHandler.class.getMethod("exceptionCaught", ctx, Throwable.class),
                    in.getMethod("channelRegistered", ctx),
                    in.getMethod("channelUnregistered", ctx),
                    in.getMethod("channelActive", ctx),
                    in.getMethod("channelInactive", ctx),
                    in.getMethod("channelRead", ctx, Object.class),
                    in.getMethod("channelReadComplete", ctx),
                    in.getMethod("channelWritabilityChanged", ctx),
                    in.getMethod("userEventTriggered", ctx, Object.class),
                    out.getMethod("bind", ctx, SocketAddress.class, ChannelPromise.class),
                    out.getMethod("connect", ctx, SocketAddress.class, SocketAddress.class, ChannelPromise.class),
                    out.getMethod("disconnect", ctx, ChannelPromise.class),
                    out.getMethod("close", ctx, ChannelPromise.class),
                    out.getMethod("deregister", ctx, ChannelPromise.class),
                    out.getMethod("read", ctx),
                    out.getMethod("write", ctx, Object.class, ChannelPromise.class),
                    out.getMethod("flush", ctx));
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void eventsStillReachTheHandlersBehindTheDecoder() {
        List<Object> events = new ArrayList<>();
        EmbeddedChannel ch =
                new EmbeddedChannel(new FrameDecoder(), new io.netty.channel.ChannelInboundHandlerAdapter() {
                    @Override
                    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                        events.add(evt);
                    }

                    @Override
                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                        events.add(cause);
                    }

                    @Override
                    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                        events.add("writability");
                    }
                });
        try {
            RuntimeException boom = new RuntimeException("boom");
            ch.pipeline().fireUserEventTriggered("event");
            ch.pipeline().fireExceptionCaught(boom);
            ch.pipeline().fireChannelWritabilityChanged();
            assertEquals(List.of("event", boom, "writability"), events);
        } finally {
            assertFalse(ch.finish());
        }
    }
}
