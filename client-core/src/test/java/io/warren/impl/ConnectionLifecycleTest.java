package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.warren.BlockedListener;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.DeclaredQueue;
import io.warren.codec.Frame;
import io.warren.codec.Frames;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicGetOkEncoder;
import io.warren.codec.method.ConnectionBlockedEncoder;
import io.warren.codec.method.ConnectionClose;
import io.warren.codec.method.ConnectionCloseEncoder;
import io.warren.codec.method.ConnectionCloseOkEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.ConnectionUnblockedEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.QueueDeclareOkEncoder;
import io.warren.impl.connection.ConnectionHandler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The connection's close handshake in both directions, connection.blocked, heartbeats and protocol errors. */
class ConnectionLifecycleTest {

    private static ConnectionClose closeView(Frame f) {
        return new ConnectionClose().wrap(f.payload(), f.payload().readerIndex());
    }

    @Test
    void applicationCloseSendsCloseWaitsForCloseOkAndFailsPendingWork() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> pending = ch.queueDeclare("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            CompletionStage<Void> closed = c.close();
            Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
            assertEquals(200, closeView(close).replyCode());
            close.release();
            assertFalse(c.isOpen());
            ConnectionClosedException e =
                    assertInstanceOf(ConnectionClosedException.class, ChannelTest.failure(pending));
            assertFalse(e.initiatedByBroker());
            assertFalse(closed.toCompletableFuture().isDone());
            broker.send(1, new QueueDeclareOkEncoder().queue("q")); // dropped: we are closing
            broker.send(0, new ConnectionCloseOkEncoder());
            assertFalse(broker.client.isActive());
            closed.toCompletableFuture().join();
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().join();
            assertEquals(200, reason.replyCode());
            assertFalse(ch.isOpen());
            // closing again completes at once
            c.close().toCompletableFuture().join();
            assertInstanceOf(ConnectionClosedException.class, ChannelTest.failure(c.openChannel()));
        }
    }

    /**
     * A reply text with no UTF-8 form (an unpaired surrogate) is a bad argument: the close fails with
     * IllegalArgumentException before anything changes, and a close with a good text then closes. Before, the
     * connection went to closing without writing connection.close or arming its timer, and never closed.
     */
    @Test
    void aCloseWhoseReplyTextHasNoUtf8FormIsRefusedAndChangesNothing() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            assertInstanceOf(IllegalArgumentException.class, ChannelTest.failure(c.close(200, "bye\uD800")));
            assertInstanceOf(IllegalArgumentException.class, ChannelTest.failure(ch.close(200, "bye\uDC00")));
            broker.expectNothing();
            assertTrue(c.isOpen());
            assertTrue(ch.isOpen());
            CompletionStage<Void> closed = c.close(320, "bye \uD83D\uDE00"); // a pair is one character
            Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
            assertEquals("bye \uD83D\uDE00", closeView(close).replyTextAsString());
            close.release();
            broker.send(0, new ConnectionCloseOkEncoder());
            closed.toCompletableFuture().join();
        }
    }

    @Test
    void brokerCloseIsAnsweredAndSurfacesTheBrokersReason() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> pending = ch.queueDeclare("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.send(
                    0,
                    new ConnectionCloseEncoder()
                            .replyCode(320)
                            .replyText("CONNECTION_FORCED - Closed via management plugin"));
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE_OK);
            broker.client.runPendingTasks();
            assertFalse(broker.client.isActive());
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().join();
            assertEquals(320, reason.replyCode());
            assertEquals("CONNECTION_FORCED - Closed via management plugin", reason.replyText());
            assertTrue(reason.initiatedByBroker());
            ConnectionClosedException e =
                    assertInstanceOf(ConnectionClosedException.class, ChannelTest.failure(pending));
            assertEquals(320, e.replyCode());
            AmqpExceptionAssert.mentions(ch.closeFuture().toCompletableFuture().join(), "CONNECTION_FORCED");
        }
    }

    @Test
    void closeSentByBothSidesAtOnce() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            CompletionStage<Void> closed = c.close();
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE);
            broker.send(0, new ConnectionCloseEncoder().replyCode(320).replyText("CONNECTION_FORCED - shutdown"));
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE_OK);
            broker.client.runPendingTasks();
            closed.toCompletableFuture().join();
            // the application's close came first and is the reason
            assertEquals(200, c.closeFuture().toCompletableFuture().join().replyCode());
        }
    }

    @Test
    void blockedIsVisibleAndAClosingBlockedConnectionStillClosesAfterTheTimeout() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(2)))) {
            ConnectionImpl c = broker.handshake();
            List<String> events = new ArrayList<>();
            c.addBlockedListener(new BlockedListener() {
                @Override
                public void blocked(String reason) {
                    events.add("blocked:" + reason);
                }

                @Override
                public void unblocked() {
                    events.add("unblocked");
                }
            });
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            assertTrue(c.isBlocked());
            broker.send(0, new ConnectionUnblockedEncoder());
            assertFalse(c.isBlocked());
            broker.send(0, new ConnectionBlockedEncoder().reason("low on disk"));
            assertEquals(List.of("blocked:low on memory", "unblocked", "blocked:low on disk"), events);
            CompletionStage<Void> closed = c.close();
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE);
            // a blocked RabbitMQ does not read: no close-ok comes
            broker.client.advanceTimeBy(1, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertFalse(closed.toCompletableFuture().isDone());
            broker.client.advanceTimeBy(1, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertTrue(closed.toCompletableFuture().isDone());
            assertFalse(broker.client.isActive());
        }
    }

    @Test
    void heartbeatsGoOutWhenIdleAndTwoSilentIntervalsCloseTheConnection() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedHeartbeat(4))) {
            broker.client.freezeTime(); // only advanceTimeBy moves the clock: no wall time leaks into the timings
            ConnectionImpl c = broker.handshake(2047, 131072, 4);
            assertEquals(4, c.heartbeat());
            // first heartbeat half an interval after tune
            broker.client.advanceTimeBy(1900, TimeUnit.MILLISECONDS);
            broker.client.runScheduledPendingTasks();
            assertNull(broker.next());
            broker.client.advanceTimeBy(100, TimeUnit.MILLISECONDS);
            broker.client.runScheduledPendingTasks();
            Frame hb = broker.next();
            assertNotNull(hb);
            assertEquals(FrameType.HEARTBEAT, hb.type());
            hb.release();
            // the broker's heartbeats keep it alive
            for (int i = 0; i < 6; i++) {
                broker.sendRaw(Frames.heartbeat(FakeBroker.ALLOC));
                broker.client.advanceTimeBy(2, TimeUnit.SECONDS);
                broker.client.runScheduledPendingTasks();
                Frame f = broker.next();
                if (f != null) {
                    f.release();
                }
            }
            assertTrue(c.isOpen());
            // silence: two intervals (8 s) without a frame
            for (int i = 0; i < 5 && broker.client.isActive(); i++) {
                broker.client.advanceTimeBy(2, TimeUnit.SECONDS);
                broker.client.runScheduledPendingTasks();
                Frame f = broker.next();
                if (f != null) {
                    f.release();
                }
            }
            assertFalse(broker.client.isActive());
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().join();
            assertTrue(reason.getMessage().contains("missed heartbeats"), reason.getMessage());
        }
    }

    @Test
    void theConnectionFailsAtExactlyTwoIntervalsOfSilenceWhateverTheTimerPhase() {
        // RabbitMQ sends a heartbeat after half an interval of its own silence; the spec's limit is two intervals.
        // The broker's frames arrive just after the client's half-interval ticks (the worst phase for a
        // tick-sampled check, which used to allow up to 2.5-3 intervals).
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedHeartbeat(4))) {
            broker.client.freezeTime(); // only advanceTimeBy moves the clock: no wall time leaks into the timings
            ConnectionImpl c = broker.handshake(2047, 131072, 4);
            for (int i = 0; i < 4; i++) {
                broker.client.advanceTimeBy(2001, TimeUnit.MILLISECONDS);
                broker.client.runScheduledPendingTasks();
                broker.sendRaw(Frames.heartbeat(FakeBroker.ALLOC));
                releaseAll(broker);
            }
            assertTrue(c.isOpen());
            // 8 s (two intervals) less a millisecond of silence: still open
            for (int i = 0; i < 7999; i += 500) {
                broker.client.advanceTimeBy(Math.min(500, 7999 - i), TimeUnit.MILLISECONDS);
                broker.client.runScheduledPendingTasks();
                releaseAll(broker);
            }
            assertTrue(broker.client.isActive(), "closed before two intervals of silence");
            broker.client.advanceTimeBy(1, TimeUnit.MILLISECONDS);
            broker.client.runScheduledPendingTasks();
            releaseAll(broker);
            assertFalse(broker.client.isActive(), "still open after two intervals of silence");
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().join();
            assertTrue(reason.getMessage().contains("no frame for 8000 ms"), reason.getMessage());
        }
    }

    @Test
    void aConnectionThatHearsTheBrokerEveryHalfIntervalStaysOpen() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedHeartbeat(4))) {
            broker.client.freezeTime(); // only advanceTimeBy moves the clock: no wall time leaks into the timings
            ConnectionImpl c = broker.handshake(2047, 131072, 4);
            // a broker heartbeat every 2 s, each a little late (network jitter of up to 1.9 s)
            for (int i = 0; i < 50; i++) {
                broker.client.advanceTimeBy(2000 + (i % 20) * 100, TimeUnit.MILLISECONDS);
                broker.client.runScheduledPendingTasks();
                broker.sendRaw(Frames.heartbeat(FakeBroker.ALLOC));
                releaseAll(broker);
            }
            assertTrue(c.isOpen());
            assertTrue(broker.client.isActive());
        }
    }

    private static void releaseAll(FakeBroker broker) {
        Frame f;
        while ((f = broker.next()) != null) {
            f.release();
        }
    }

    @Test
    void aFailedHeartbeatWriteAloneDoesNotCloseTheConnection() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedHeartbeat(4))) {
            broker.client.freezeTime(); // only advanceTimeBy moves the clock: no wall time leaks into the timings
            ConnectionImpl c = broker.handshake(2047, 131072, 4);
            List<Integer> failed = new ArrayList<>();
            broker.client.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
                @Override
                public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                    ByteBuf b = (ByteBuf) msg;
                    if (b.readableBytes() == Frames.FRAME_OVERHEAD && b.getByte(b.readerIndex()) == 8) {
                        failed.add(1);
                        b.release();
                        promise.setFailure(new java.io.IOException("simulated write failure"));
                    } else {
                        ctx.write(msg, promise);
                    }
                }
            });
            for (int i = 0; i < 3; i++) {
                broker.sendRaw(Frames.heartbeat(FakeBroker.ALLOC));
                broker.client.advanceTimeBy(2, TimeUnit.SECONDS);
                broker.client.runScheduledPendingTasks();
            }
            assertTrue(failed.size() >= 2, "heartbeats were attempted: " + failed.size());
            assertTrue(broker.client.isActive());
            assertTrue(c.isOpen());
        }
    }

    @Test
    void silenceWhileReadingIsPausedIsNotAMissedHeartbeat() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedHeartbeat(4))) {
            broker.client.freezeTime(); // only advanceTimeBy moves the clock: no wall time leaks into the timings
            ConnectionImpl c = broker.handshake(2047, 131072, 4);
            broker.handler.autoRead(false);
            for (int i = 0; i < 10; i++) {
                broker.client.advanceTimeBy(2, TimeUnit.SECONDS);
                broker.client.runScheduledPendingTasks();
                Frame f = broker.next();
                if (f != null) {
                    f.release();
                }
            }
            assertTrue(c.isOpen());
            broker.handler.autoRead(true);
            for (int i = 0; i < 5 && broker.client.isActive(); i++) {
                broker.client.advanceTimeBy(2, TimeUnit.SECONDS);
                broker.client.runScheduledPendingTasks();
                Frame f = broker.next();
                if (f != null) {
                    f.release();
                }
            }
            assertFalse(c.isOpen(), "silence after resuming counts again");
        }
    }

    @Test
    void aBusyConnectionSendsNoHeartbeat() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedHeartbeat(4))) {
            broker.client.freezeTime(); // only advanceTimeBy moves the clock: no wall time leaks into the timings
            ConnectionImpl c = broker.handshake(2047, 131072, 4);
            Channel ch = broker.openChannel(c, 1);
            for (int i = 0; i < 4; i++) {
                ch.publish("", "q", false, null, new byte[1]); // outbound frames
                broker.client.advanceTimeBy(1900, TimeUnit.MILLISECONDS);
                broker.client.runScheduledPendingTasks();
                broker.expectAndRelease(1, MethodIds.BASIC_PUBLISH);
                broker.next().release(); // its content header
                broker.next().release(); // and body
                broker.sendRaw(Frames.heartbeat(FakeBroker.ALLOC));
                broker.client.advanceTimeBy(100, TimeUnit.MILLISECONDS);
                broker.client.runScheduledPendingTasks();
                broker.expectNothing();
            }
        }
    }

    @Test
    void aMalformedMethodFrameClosesTheConnectionWith502() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> pending = ch.queueDeclare("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            // queue.declare-ok whose short string claims 200 bytes in a 10-byte payload
            ByteBuf bad = FakeBroker.ALLOC.buffer();
            Frames.writeHeader(bad, FrameType.METHOD, 1, 10);
            bad.writeShort(50)
                    .writeShort(11)
                    .writeByte(200)
                    .writeBytes(new byte[5])
                    .writeByte(Frames.FRAME_END);
            broker.sendRaw(bad);
            Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
            ConnectionClose view = closeView(close);
            assertEquals(502, view.replyCode());
            assertTrue(view.replyTextAsString().startsWith("SYNTAX_ERROR"), view.replyTextAsString());
            close.release();
            ConnectionClosedException e =
                    assertInstanceOf(ConnectionClosedException.class, ChannelTest.failure(pending));
            assertEquals(502, e.replyCode());
            assertTrue(e.getMessage().contains("channel 1"), e.getMessage());
            // the decoder discards everything now, close-ok included: the socket went once connection.close was out
            assertFalse(broker.client.isOpen());
            assertEquals(502, c.closeFuture().toCompletableFuture().join().replyCode());
        }
    }

    @Test
    void aFrameErrorClosesTheSocketOnceConnectionCloseIsWrittenWithoutWaitingForCloseOk() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(10)))) {
            broker.client.freezeTime(); // no timer fires unless the test moves the clock: the close may not need one
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> pending = ch.queueDeclare("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            // a body frame header announcing 0x7FFFFFFF bytes, far over frame-max: the decoder is done reading
            broker.sendRaw(FakeBroker.ALLOC
                    .buffer(7)
                    .writeByte(FrameType.BODY.id())
                    .writeShort(1)
                    .writeInt(0x7FFFFFFF));
            Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
            assertEquals(501, closeView(close).replyCode());
            close.release();
            assertFalse(
                    broker.client.isOpen(), "closed once connection.close was written, not after the close timeout");
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().join();
            assertEquals(501, reason.replyCode());
            AmqpProtocolException cause = assertInstanceOf(AmqpProtocolException.class, reason.getCause());
            assertEquals(FrameType.BODY, cause.frameType());
            assertEquals(
                    501,
                    assertInstanceOf(ConnectionClosedException.class, ChannelTest.failure(pending))
                            .replyCode());
        }
    }

    @Test
    void aFrameErrorClosesTheSocketAfterAShortGraceWhenConnectionCloseCannotBeWritten() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(10)))) {
            broker.client.freezeTime();
            ConnectionImpl c = broker.handshake();
            stopWriting(broker); // the write of connection.close never completes
            broker.sendRaw(FakeBroker.ALLOC.buffer(7).writeByte(9).writeShort(0).writeInt(0));
            assertClosedAfterTheGraceOnly(broker);
            assertEquals(501, c.closeFuture().toCompletableFuture().join().replyCode());
        }
    }

    /** A peer that sent connection.close and then stopped reading cannot hold the socket open: close-ok is unwritten. */
    @Test
    void theBrokersCloseClosesTheSocketAfterAShortGraceWhenCloseOkCannotBeWritten() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(10)))) {
            broker.client.freezeTime();
            ConnectionImpl c = broker.handshake();
            stopWriting(broker); // the write of close-ok never completes
            broker.send(0, new ConnectionCloseEncoder().replyCode(320).replyText("CONNECTION_FORCED - shutdown"));
            assertClosedAfterTheGraceOnly(broker);
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().join();
            assertEquals(320, reason.replyCode());
            assertTrue(reason.initiatedByBroker());
        }
    }

    /**
     * A peer that stopped reading and repeats its connection.close cannot hold the socket open either: the repeats
     * are discarded (one close-ok), and the grace the first one started is not moved, nor the application's close
     * timeout lengthened.
     */
    @Test
    void theBrokersRepeatedClosesDoNotPutOffTheSocketsClose() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(10)))) {
            broker.client.freezeTime();
            ConnectionImpl c = broker.handshake();
            AtomicInteger writes = stopWriting(broker);
            c.close(); // connection.close, never written: the close timeout is armed
            broker.client.runPendingTasks();
            int beforeBrokersClose = writes.get();
            long graceMillis = TimeUnit.NANOSECONDS.toMillis(ConnectionHandler.CLOSE_WRITE_GRACE_NANOS);
            for (int i = 0; i < 2; i++) {
                broker.send(0, new ConnectionCloseEncoder().replyCode(320).replyText("CONNECTION_FORCED - shutdown"));
                broker.client.advanceTimeBy(graceMillis * 9 / 10, TimeUnit.MILLISECONDS);
                broker.client.runScheduledPendingTasks();
            }
            assertFalse(broker.client.isOpen(), "closed within the grace of the broker's first close");
            assertEquals(beforeBrokersClose + 1, writes.get(), "one close-ok");
        }
    }

    /** Crossing closes: the broker's close shortens the wait that the application's close armed, and leaves no timer. */
    @Test
    void theBrokersCloseCrossingOursClosesTheSocketOnceCloseOkIsWritten() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(10)))) {
            broker.client.freezeTime();
            ConnectionImpl c = broker.handshake();
            CompletionStage<Void> closed = c.close();
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE);
            broker.send(0, new ConnectionCloseEncoder().replyCode(320).replyText("CONNECTION_FORCED - shutdown"));
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE_OK);
            broker.client.runPendingTasks();
            assertFalse(broker.client.isOpen());
            closed.toCompletableFuture().join();
            assertEquals(-1, broker.client.runScheduledPendingTasks(), "no timer left behind");
        }
    }

    /** Channel 0 carries the connection class only: another class's method there is 504, as RabbitMQ answers it. */
    @Test
    void aChannelClassMethodOnChannelZeroIs504() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            broker.send(0, new BasicAckEncoder().deliveryTag(1));
            assertClosedWith(broker, c, 504);
        }
    }

    /** A connection method out of its sequence (a second connection.tune on an open connection) is 503. */
    @Test
    void aConnectionMethodOutOfSequenceIs503() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            broker.send(
                    0,
                    new ConnectionTuneEncoder().channelMax(0).frameMax(131072).heartbeat(0));
            assertClosedWith(broker, c, 503);
        }
    }

    @Test
    void anUnexpectedMethodClosesTheConnectionWith505() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            broker.openChannel(c, 1);
            broker.send(1, new QueueDeclareOkEncoder().queue("nobody-asked"));
            Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
            ConnectionClose view = closeView(close);
            assertEquals(505, view.replyCode());
            assertEquals(50, view.classId());
            assertEquals(11, view.methodId());
            close.release();
            assertTrue(broker.client.isOpen(), "the decoder still reads: close-ok is waited for");
            broker.send(0, new ConnectionCloseOkEncoder());
            assertFalse(broker.client.isOpen());
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().join();
            assertEquals(505, reason.replyCode());
            assertFalse(reason.initiatedByBroker());
        }
    }

    /** A frame for a channel that was never opened (nor is closing) is the broker's error: 504, not dropped. */
    @Test
    void aFrameOnAChannelNeverOpenedIs504() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            broker.openChannel(c, 1);
            broker.send(77, new BasicAckEncoder().deliveryTag(1));
            expectClose(broker, 504);
        }
    }

    /** A noAck consumer "c" on {@code ch} (channel 1), started. */
    private static void consumerC(FakeBroker broker, Channel ch) {
        var started =
                ch.consume("q", new io.warren.ConsumeOptions().consumerTag("c").noAck(true), d -> {});
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new io.warren.codec.method.BasicConsumeOkEncoder().consumerTag("c"));
        assertTrue(started.toCompletableFuture().isDone());
    }

    /** basic.deliver for consumer "c" on channel 1, tag 1, without the content frames that must follow it. */
    private static void deliverMethodOnly(FakeBroker broker) {
        broker.send(
                1,
                new BasicDeliverEncoder()
                        .consumerTag("c")
                        .deliveryTag(1)
                        .exchange("x")
                        .routingKey("rk"));
    }

    /**
     * A peer that does not read: what the client writes from now on is never written, its promise left open. Returns
     * the count of such writes.
     */
    private static AtomicInteger stopWriting(FakeBroker broker) {
        AtomicInteger writes = new AtomicInteger();
        broker.client.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                writes.incrementAndGet();
                io.netty.util.ReferenceCountUtil.release(msg);
            }
        });
        return writes;
    }

    /** The socket stays open until {@link ConnectionHandler#CLOSE_WRITE_GRACE_NANOS} has passed, and closes then. */
    private static void assertClosedAfterTheGraceOnly(FakeBroker broker) {
        assertTrue(broker.client.isOpen());
        long graceMillis = TimeUnit.NANOSECONDS.toMillis(ConnectionHandler.CLOSE_WRITE_GRACE_NANOS);
        broker.client.advanceTimeBy(graceMillis - 1, TimeUnit.MILLISECONDS);
        broker.client.runScheduledPendingTasks();
        assertTrue(broker.client.isOpen());
        broker.client.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        broker.client.runScheduledPendingTasks();
        assertFalse(broker.client.isOpen(), "closed after the grace, far within the 10 s close timeout");
    }

    /** The client closes the connection with {@code code}; close-ok ends it with that code. */
    private static void assertClosedWith(FakeBroker broker, ConnectionImpl c, int code) {
        expectClose(broker, code);
        broker.send(0, new ConnectionCloseOkEncoder());
        assertEquals(code, c.closeFuture().toCompletableFuture().join().replyCode());
    }

    /** The client's connection.close, with {@code code}. */
    private static void expectClose(FakeBroker broker, int code) {
        Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
        try {
            assertEquals(code, closeView(close).replyCode());
        } finally {
            close.release();
        }
    }

    /** A method while a message's content is expected (a confirm between basic.deliver and its header): 505. */
    @Test
    void aMethodInsideAMessagesContentIs505() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            consumerC(broker, broker.openChannel(c, 1));
            deliverMethodOnly(broker); // its content header is expected next
            broker.send(1, new BasicAckEncoder().deliveryTag(1));
            expectClose(broker, 505);
        }
    }

    /** basic.get-ok inside a delivery's content: the 505 closes the connection, not only the get's stage. */
    @Test
    void aGetOkInsideADeliverysContentClosesTheConnectionWith505() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            consumerC(broker, ch);
            var get = ch.basicGet("q", false);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            deliverMethodOnly(broker); // its content header is expected next
            broker.send(
                    1,
                    new BasicGetOkEncoder()
                            .deliveryTag(2)
                            .exchange("x")
                            .routingKey("rk")
                            .messageCount(0));
            expectClose(broker, 505);
            assertTrue(get.toCompletableFuture().isCompletedExceptionally());
        }
    }

    @Test
    void aBodyFrameWithoutAHeaderIs505() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            broker.openChannel(c, 1);
            broker.sendRaw(Frames.body(FakeBroker.ALLOC, 1, io.netty.buffer.Unpooled.wrappedBuffer(new byte[3])));
            expectClose(broker, 505);
        }
    }

    @Test
    void channelErrorsOnOneChannelLeaveTheOthersAlone() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel a = broker.openChannel(c, 1);
            Channel b = broker.openChannel(c, 2);
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - inequivalent arg", 50, 10);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertFalse(a.isOpen());
            assertTrue(b.isOpen());
            ChannelClosedException reason = (ChannelClosedException)
                    a.closeFuture().toCompletableFuture().join();
            assertEquals(406, reason.replyCode());
            assertTrue(c.isOpen());
        }
    }

    /** Small assertion helpers. */
    static final class AmqpExceptionAssert {
        static void mentions(Throwable t, String text) {
            assertNotNull(t);
            assertTrue(t.getMessage().contains(text), t.getMessage());
        }
    }
}
