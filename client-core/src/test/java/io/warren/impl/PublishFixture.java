package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledHeapByteBuf;
import io.warren.Channel;
import io.warren.codec.Frame;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicNackEncoder;
import io.warren.codec.method.BasicPublish;
import io.warren.codec.method.ConfirmSelectOkEncoder;
import io.warren.codec.method.MethodIds;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/** Helpers for the publishing tests: reading publishes the client wrote, answering confirms, tracked bodies. */
final class PublishFixture {

    private PublishFixture() {}

    /** One publish as the broker read it. */
    record Published(String exchange, String routingKey, boolean mandatory, BasicProperties properties, byte[] body) {
        String text() {
            return new String(body, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    /** Reads the next publish (method, header, body frames) the client wrote on {@code channel}. */
    static Published expectPublish(FakeBroker broker, int channel) {
        Frame m = broker.expect(channel, MethodIds.BASIC_PUBLISH);
        BasicPublish view = new BasicPublish().wrap(m.payload(), m.payload().readerIndex());
        String exchange = view.exchangeAsString();
        String routingKey = view.routingKeyAsString();
        boolean mandatory = view.mandatory();
        m.release();
        Frame h = broker.next();
        assertNotNull(h, "content header after basic.publish");
        long size;
        BasicProperties props;
        try {
            assertEquals(FrameType.HEADER, h.type());
            assertEquals(channel, h.channel());
            ContentHeader header =
                    new ContentHeader().wrap(h.payload(), h.payload().readerIndex());
            size = header.bodySize();
            props = header.toProperties();
        } finally {
            h.release();
        }
        ByteBuf body = Unpooled.buffer();
        try {
            while (body.readableBytes() < size) {
                Frame b = broker.next();
                assertNotNull(b, "body frame");
                try {
                    assertEquals(FrameType.BODY, b.type());
                    assertEquals(channel, b.channel());
                    body.writeBytes(b.payload());
                } finally {
                    b.release();
                }
            }
            assertEquals(size, body.readableBytes());
            return new Published(exchange, routingKey, mandatory, props, ByteBufUtil.getBytes(body));
        } finally {
            body.release();
        }
    }

    /** confirm.select answered: the channel is in confirm mode. */
    static void confirmMode(FakeBroker broker, Channel ch) {
        CompletionStage<Void> select = ch.confirmSelect();
        broker.expectAndRelease(ch.channelNumber(), MethodIds.CONFIRM_SELECT);
        broker.send(ch.channelNumber(), new ConfirmSelectOkEncoder());
        select.toCompletableFuture().join();
    }

    static void ack(FakeBroker broker, int channel, long tag, boolean multiple) {
        broker.send(channel, new BasicAckEncoder().deliveryTag(tag).multiple(multiple));
    }

    static void nack(FakeBroker broker, int channel, long tag, boolean multiple) {
        broker.send(
                channel,
                new BasicNackEncoder().deliveryTag(tag).multiple(multiple).requeue(false));
    }

    static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, java.nio.charset.StandardCharsets.UTF_8);
    }

    static Throwable failure(CompletionStage<?> stage) {
        CompletableFuture<?> f = stage.toCompletableFuture();
        assertTrue(f.isCompletedExceptionally(), () -> "expected a failure, got " + f);
        try {
            f.join();
            throw new AssertionError("unreachable");
        } catch (CompletionException e) {
            return e.getCause();
        }
    }

    static void assertPending(CompletionStage<?> stage) {
        assertFalse(stage.toCompletableFuture().isDone(), () -> "expected pending, got " + stage);
    }

    /**
     * A socket that does not drain: while stalled, flushes are swallowed, so written frames stay in Netty's
     * outbound buffer and count against its high-water mark (EmbeddedChannel itself flushes at once).
     */
    static final class StalledSocket extends io.netty.channel.ChannelOutboundHandlerAdapter {
        private io.netty.channel.ChannelHandlerContext ctx;
        private boolean stalled = true;

        static StalledSocket install(FakeBroker broker) {
            StalledSocket s = new StalledSocket();
            broker.client.pipeline().addFirst(s);
            return s;
        }

        @Override
        public void handlerAdded(io.netty.channel.ChannelHandlerContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public void flush(io.netty.channel.ChannelHandlerContext ctx) {
            if (!stalled) {
                ctx.flush();
            }
        }

        /** The socket stops taking bytes again: flushes are held until the next {@link #drain()}. */
        void stall() {
            stalled = true;
        }

        /** The socket drains again: everything written so far is flushed. */
        void drain() {
            stalled = false;
            ctx.flush();
        }
    }

    /**
     * A body that records how it is released: exactly one deallocation and never a release past zero is
     * "released exactly once", whatever retains and releases of slices happened in between.
     */
    static final class TrackedBody extends UnpooledHeapByteBuf {
        int deallocations;
        boolean releasedPastZero;

        TrackedBody(byte[] bytes) {
            super(UnpooledByteBufAllocator.DEFAULT, bytes, bytes.length);
        }

        @Override
        public boolean release() {
            if (refCnt() == 0) {
                releasedPastZero = true;
            }
            return super.release();
        }

        @Override
        public boolean release(int decrement) {
            if (refCnt() < decrement) {
                releasedPastZero = true;
            }
            return super.release(decrement);
        }

        @Override
        protected void deallocate() {
            deallocations++;
            super.deallocate();
        }

        void assertReleasedOnce() {
            assertFalse(releasedPastZero, "released past zero");
            assertEquals(0, refCnt(), "reference count");
            assertEquals(1, deallocations, "deallocations");
        }
    }
}
