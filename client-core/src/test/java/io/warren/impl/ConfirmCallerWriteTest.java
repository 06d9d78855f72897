package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.PublishNackedException;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.codec.Frames;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicNackEncoder;
import io.warren.codec.method.BasicReturnEncoder;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.publish.Publisher;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Publishes in confirm mode written on their callers' threads under the outbound path's writer token, over a real
 * socket to a peer that checks the byte stream frame by frame: every frame whole, on the confirm channel basic.publish,
 * content header and body never interleaved with another method, the sequence number each mandatory publish carries
 * equal to its place on the wire. The peer nacks or returns publishes chosen by their bodies, so a future settled for
 * another publish's number shows as a wrong outcome.
 */
class ConfirmCallerWriteTest {

    private static final int CONFIRM_CHANNEL = 2;
    /** The thread id the publishes made by a consumer's handler on the event loop carry. */
    private static final int LOOP = 99;

    @Test
    void anIdleChannelsConfirmedPublishesAreWrittenByTheirCallerAndConfirmed() throws Exception {
        try (Rig rig = new Rig(new PublishOptions(), false)) {
            long before = rig.outbound.callerWriteCounts()[0];
            int count = 200;
            for (int seq = 0; seq < count; seq++) {
                CompletableFuture<PublishOutcome> f = rig.confirming
                        .publish("x", "rk", true, BasicProperties.EMPTY, body(0, seq, 16))
                        .toCompletableFuture();
                assertSame(expected(0, seq), outcome(f), "publish " + seq);
            }
            assertEquals(count, rig.outbound.callerWriteCounts()[0] - before, "every publish written by its caller");
            rig.peer.assertClean();
        }
    }

    @Test
    void callerAndLoopNumberedPublishesInterleaveInWireOrderUnderLoad() throws Exception {
        int threads = 4;
        int messages = 1500;
        try (Rig rig = new Rig(new PublishOptions().maxOutstandingConfirms(64), true)) {
            // the loop's own writes on the confirm channel: a consumer's handler (on the loop) publishes, and acks
            Map<Long, CompletableFuture<PublishOutcome>> futures = new ConcurrentHashMap<>();
            int[] loopSeq = {0};
            rig.consumerChannel
                    .consume("q", new ConsumeOptions().prefetch(50), d -> {
                        int seq = loopSeq[0]++;
                        futures.put(
                                id(LOOP, seq),
                                rig.confirming
                                        .publish("x", "rk", true, BasicProperties.EMPTY, body(LOOP, seq, 24))
                                        .toCompletableFuture());
                        d.ack();
                    })
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Throwable> failures = new CopyOnWriteArrayList<>();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                workers.add(new Thread(
                        () -> {
                            try {
                                start.await();
                                for (int seq = 0; seq < messages; seq++) {
                                    if (!rig.confirming.isWritable()) {
                                        rig.confirming
                                                .whenWritable()
                                                .toCompletableFuture()
                                                .get(30, TimeUnit.SECONDS);
                                    }
                                    ByteBuf b = body(thread, seq, seq % 17 == 0 ? 3000 : 8 + seq % 120);
                                    if (seq % 3 == 2) {
                                        rig.confirming.publishNoOutcome("x", "rk", false, BasicProperties.EMPTY, b);
                                    } else {
                                        futures.put(
                                                id(thread, seq),
                                                rig.confirming
                                                        .publish("x", "rk", true, BasicProperties.EMPTY, b)
                                                        .toCompletableFuture());
                                    }
                                }
                            } catch (Throwable e) {
                                failures.add(e);
                            }
                        },
                        "publisher-" + t));
            }
            workers.forEach(Thread::start);
            for (Thread w : workers) {
                w.join(60_000);
            }
            assertEquals(List.of(), failures);
            for (Map.Entry<Long, CompletableFuture<PublishOutcome>> e : futures.entrySet()) {
                int thread = (int) (e.getKey() >> 32);
                int seq = (int) (long) e.getKey();
                assertSame(expected(thread, seq), outcome(e.getValue()), "thread " + thread + "'s publish " + seq);
            }
            long total = (long) threads * messages + loopSeq[0];
            assertTrue(rig.peer.await(() -> rig.peer.confirmPublishes.get() >= total), rig.peer::state);
            rig.peer.assertClean();
            assertEquals(total, rig.peer.confirmPublishes.get());
            assertTrue(rig.outbound.callerWriteCounts()[0] > 0, "some publishes were written by their callers");
            assertTrue(rig.peer.loopPublishes.get() > 0, "some were numbered and written by the event loop");
            assertTrue(rig.peer.acksRead.get() > 0, "the event loop wrote a consumer's acks meanwhile");
        }
    }

    @Test
    void aFullWindowHoldsPublishesOnTheLoopInsteadOfTheirCallers() throws Exception {
        try (Rig rig = new Rig(new PublishOptions().maxOutstandingConfirms(4), false)) {
            rig.peer.holdAcks = true;
            long before = rig.outbound.callerWriteCounts()[0];
            List<CompletableFuture<PublishOutcome>> f = new ArrayList<>();
            for (int seq = 0; seq < 6; seq++) {
                f.add(rig.confirming
                        .publish("x", "rk", true, BasicProperties.EMPTY, body(0, seq, 16))
                        .toCompletableFuture());
            }
            // behind this thread's publishes in the path's queue: the loop has seen them all
            CompletableFuture<Void> seen = new CompletableFuture<>();
            rig.outbound.execute(() -> seen.complete(null));
            seen.get(10, TimeUnit.SECONDS);
            assertTrue(rig.peer.await(() -> rig.peer.confirmPublishes.get() >= 4), rig.peer::state);
            assertEquals(4, rig.outbound.callerWriteCounts()[0] - before, "the window's four, by their caller");
            assertFalse(rig.confirming.isWritable(), "the window is full");
            assertFalse(f.get(4).isDone() || f.get(5).isDone(), "held, not failed");
            rig.peer.ackAll();
            for (int seq = 0; seq < 6; seq++) {
                if (seq == 4) {
                    assertTrue(rig.peer.await(() -> rig.peer.confirmPublishes.get() >= 6), rig.peer::state);
                    rig.peer.ackAll();
                }
                assertSame(PublishOutcome.CONFIRMED, outcome(f.get(seq)), "publish " + seq);
            }
            assertEquals(4, rig.outbound.callerWriteCounts()[0] - before, "the held two written by the loop");
            rig.peer.assertClean();
        }
    }

    /** Recovery on (the default): what was written and not confirmed fails, as a loop-written publish does. */
    @Test
    void aLostConnectionFailsTheCallerWrittenUnconfirmedPublishes() throws Exception {
        try (Rig rig = new Rig(new PublishOptions(), false)) {
            rig.peer.holdAcks = true;
            List<CompletableFuture<PublishOutcome>> f = new ArrayList<>();
            for (int seq = 0; seq < 5; seq++) {
                f.add(rig.confirming
                        .publish("x", "rk", seq % 2 == 0, BasicProperties.EMPTY, body(0, seq, 16))
                        .toCompletableFuture());
            }
            assertTrue(rig.peer.await(() -> rig.peer.confirmPublishes.get() >= 5), rig.peer::state);
            assertEquals(5, rig.outbound.callerWriteCounts()[0], "written by their caller");
            rig.peer.cut();
            for (CompletableFuture<PublishOutcome> p : f) {
                ExecutionException e = failure(p);
                assertInstanceOf(PublishNotConfirmedException.class, e.getCause());
                assertTrue(((PublishNotConfirmedException) e.getCause()).mayHaveReachedBroker());
            }
        }
    }

    @Test
    void everyPublishRacingALostConnectionCompletes() throws Exception {
        int threads = 3;
        // without recovery: a publish made while it recovered would wait for it (PublishDuringRecovery.WAIT)
        try (Rig rig = new Rig(new PublishOptions(), false, false)) {
            List<CompletableFuture<PublishOutcome>> all = new CopyOnWriteArrayList<>();
            CyclicBarrier start = new CyclicBarrier(threads + 1);
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                workers.add(new Thread(
                        () -> {
                            try {
                                start.await();
                                for (int seq = 0; seq < 3000 && rig.confirming.isOpen(); seq++) {
                                    all.add(rig.confirming
                                            .publish("x", "rk", true, BasicProperties.EMPTY, body(thread, seq, 32))
                                            .toCompletableFuture());
                                }
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        },
                        "publisher-" + t));
            }
            workers.forEach(Thread::start);
            start.await(10, TimeUnit.SECONDS);
            assertTrue(rig.peer.await(() -> rig.peer.confirmPublishes.get() >= 300), rig.peer::state);
            // the cut comes after the first ack has reached a future (under load the peer's acks may lag its reads)
            assertTrue(
                    rig.peer.await(() -> all.stream().anyMatch(f -> f.isDone() && !f.isCompletedExceptionally())),
                    rig.peer::state);
            rig.peer.cut();
            for (Thread w : workers) {
                w.join(30_000);
            }
            long confirmed = 0;
            for (CompletableFuture<PublishOutcome> p : all) {
                try {
                    p.get(10, TimeUnit.SECONDS);
                    confirmed++;
                } catch (ExecutionException e) {
                    // not confirmed (written, connection lost) or refused on the closed channel: either way, settled
                    assertInstanceOf(io.warren.AmqpException.class, e.getCause());
                }
            }
            assertTrue(confirmed > 0, "some were confirmed before the cut");
        }
    }

    // ---- the rig ---------------------------------------------------------------------------------------------------

    /** A client connected to a {@link Peer}: channel 1 for a consumer, channel 2 in confirm mode. */
    /**
     * Two publishes from the event loop in confirm mode: the first waits behind a caller's write (the writer token
     * held), the second meets a reason to hold (connection.blocked). Both reach the broker in call order: the second
     * waits behind the first rather than being held ahead of it.
     */
    @Test
    void loopPublishesKeepCallOrderWhenTheFirstWaitsBehindACallerAndTheSecondIsHeld() throws Exception {
        try (Rig rig = new Rig(new PublishOptions(), false)) {
            io.netty.util.concurrent.EventExecutor loop = rig.outbound.eventLoop();
            assertTrue(
                    rig.outbound.tryTakeForCaller(), "this thread holds the writer token, as a caller writing would");
            List<CompletableFuture<PublishOutcome>> futures = new CopyOnWriteArrayList<>();
            loop.submit(() -> futures.add(rig.confirming
                            .publish("x", "rk", true, BasicProperties.EMPTY, body(LOOP, 0, 24))
                            .toCompletableFuture()))
                    .get(10, TimeUnit.SECONDS);
            rig.peer.blocked(true);
            assertTrue(rig.peer.await(rig.connection::isBlocked), "the client read connection.blocked");
            loop.submit(() -> futures.add(rig.confirming
                            .publish("x", "rk", true, BasicProperties.EMPTY, body(LOOP, 1, 24))
                            .toCompletableFuture()))
                    .get(10, TimeUnit.SECONDS);
            rig.outbound.releaseCaller(); // the first one's turn comes: the connection is blocked, it is held
            loop.submit(() -> {}).get(10, TimeUnit.SECONDS);
            rig.peer.blocked(false);
            assertTrue(rig.peer.await(() -> rig.peer.confirmPublishes.get() == 2), rig.peer.state());
            rig.peer.assertClean(); // the peer checks that each thread's messages arrive in call order
            for (int seq = 0; seq < 2; seq++) {
                assertSame(expected(LOOP, seq), outcome(futures.get(seq)), "publish " + seq);
            }
        }
    }

    private static final class Rig implements AutoCloseable {
        final AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(1));
        final Peer peer;
        final Connection connection;
        final OutboundPath outbound;
        final Channel consumerChannel;
        final Channel confirming;

        Rig(PublishOptions publishOptions, boolean smallBuffers) throws Exception {
            this(publishOptions, smallBuffers, true);
        }

        Rig(PublishOptions publishOptions, boolean smallBuffers, boolean recovery) throws Exception {
            peer = new Peer(smallBuffers);
            connection = client.connect(new ConnectionOptions()
                            .address("127.0.0.1", peer.port())
                            .automaticRecovery(recovery)
                            .publishOptions(publishOptions))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            outbound = ((ConnectionImpl) connection).handler().outbound();
            if (smallBuffers) {
                // callers' writes are often taken only in part and handed to the loop
                outbound.channel().config().setOption(io.netty.channel.ChannelOption.SO_SNDBUF, 4096);
            }
            outbound.callerWriteGap(0); // callers write whenever the path is idle
            consumerChannel = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            confirming = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertEquals(CONFIRM_CHANNEL, confirming.channelNumber());
            confirming.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws Exception {
            try {
                if (connection.isOpen()) {
                    connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
                }
                peer.awaitEnd(10_000);
                peer.assertClean();
            } finally {
                peer.close();
                client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        }
    }

    private static long id(int thread, int seq) {
        return (long) thread << 32 | seq;
    }

    /** What the peer answers a publish: some nacked, some mandatory ones returned, chosen by the body. */
    private static boolean nacks(int thread, int seq) {
        return (thread + seq) % 11 == 5;
    }

    private static boolean returns(int thread, int seq) {
        return (thread + seq) % 13 == 7;
    }

    /** The outcome the peer's answer gives a mandatory publish; null for a nack. */
    private static PublishOutcome expected(int thread, int seq) {
        if (nacks(thread, seq)) {
            return null;
        }
        return returns(thread, seq) ? RETURNED : PublishOutcome.CONFIRMED;
    }

    private static final PublishOutcome RETURNED = PublishOutcome.returned(312, "NO_ROUTE");

    /** The future's outcome, or null when it failed as nacked; anything else fails the test. */
    private static PublishOutcome outcome(CompletableFuture<PublishOutcome> f) throws Exception {
        try {
            PublishOutcome o = f.get(30, TimeUnit.SECONDS);
            return o.isReturned() && o.equals(RETURNED) ? RETURNED : o;
        } catch (ExecutionException e) {
            assertInstanceOf(PublishNackedException.class, e.getCause());
            return null;
        }
    }

    private static ExecutionException failure(CompletableFuture<PublishOutcome> f) throws Exception {
        try {
            f.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e;
        }
        throw new AssertionError("completed normally");
    }

    /** Thread and sequence number first, then a filler of the sequence number's low byte. */
    private static ByteBuf body(int thread, int seq, int size) {
        ByteBuf b = ByteBufAllocator.DEFAULT.buffer(size);
        b.writeInt(thread).writeInt(seq);
        while (b.isWritable()) {
            b.writeByte(seq);
        }
        return b;
    }

    /** A peer that checks the confirm channel's publishes and answers them as their bodies say; one thread. */
    private static final class Peer extends SocketPeer {
        final AtomicLong confirmPublishes = new AtomicLong();
        final AtomicLong loopPublishes = new AtomicLong();
        volatile boolean holdAcks;
        // the peer's thread only
        private final Map<Integer, Integer> nextSeq = new HashMap<>();
        // under the peer's monitor (the test's thread acks too)
        /** Publishes read but not yet acked: acked with one multiple ack when the input runs dry. */
        private long ackedUpTo;

        Peer(boolean smallBuffers) throws IOException {
            super(smallBuffers ? 8192 : 0, smallBuffers, "peer");
            deliveries(50, 600);
            start();
        }

        @Override
        protected void beforeFrame(boolean inputDry) throws IOException {
            if (inputDry) {
                flushAcks();
            }
        }

        @Override
        protected void contentHeader(int channel, Stream st, ContentHeader h) {
            if (channel == CONFIRM_CHANNEL) {
                long wire = confirmPublishes.get() + 1;
                long stamped = Publisher.SEQUENCE_HEADER.find(h, -1);
                if (st.mandatory ? stamped != wire : stamped != -1) {
                    errors.add("publish " + wire + " on the wire (mandatory " + st.mandatory + ") carries "
                            + "sequence number " + stamped);
                }
            }
        }

        String state() {
            return "the peer read " + confirmPublishes.get() + " publishes; " + errors;
        }

        void assertClean() {
            assertEquals(List.of(), errors);
        }

        /** From the test's thread: connection.blocked, or connection.unblocked. */
        void blocked(boolean on) throws IOException {
            synchronized (this) {
                if (on) {
                    send(0, new io.warren.codec.method.ConnectionBlockedEncoder().reason("test"));
                } else {
                    send(0, new io.warren.codec.method.ConnectionUnblockedEncoder());
                }
            }
        }

        /** From the test's thread: acks every publish read so far (the peer holds its acks). */
        void ackAll() throws IOException {
            synchronized (this) {
                long tag = confirmPublishes.get();
                if (tag > ackedUpTo) {
                    ackedUpTo = tag;
                    send(CONFIRM_CHANNEL, new BasicAckEncoder().deliveryTag(tag).multiple(true));
                }
            }
        }

        /** A publish's body is complete: check it, and answer as the body says (acks wait for a dry input). */
        @Override
        protected boolean publish(int channel, Stream st) throws IOException {
            ByteBuf b = st.body;
            byte[] whole = ByteBufUtil.getBytes(b);
            int thread = b.readInt();
            int seq = b.readInt();
            int expected = nextSeq.getOrDefault(thread, 0);
            if (seq != expected) {
                errors.add("thread " + thread + "'s message " + seq + " where " + expected + " was next");
            }
            nextSeq.put(thread, seq + 1);
            while (b.isReadable()) {
                if (b.readByte() != (byte) seq) {
                    errors.add("thread " + thread + "'s message " + seq + " has a foreign byte at "
                            + (b.readerIndex() - 1) + ": " + ByteBufUtil.hexDump(b, 0, 8));
                    break;
                }
            }
            if (thread == LOOP) {
                loopPublishes.incrementAndGet();
            }
            synchronized (this) {
                long tag = confirmPublishes.incrementAndGet();
                if (holdAcks) {
                    return errors.isEmpty();
                }
                boolean nack = nacks(thread, seq);
                boolean ret = st.mandatory && returns(thread, seq);
                if (nack || ret) {
                    // the ones before it first: a multiple ack must not cover this one
                    ackUpTo(tag - 1);
                    if (ret) {
                        send(
                                channel,
                                new BasicReturnEncoder()
                                        .replyCode(312)
                                        .replyText("NO_ROUTE")
                                        .exchange("x")
                                        .routingKey("rk"));
                        write(Unpooled.wrappedBuffer(rawFrame(2, channel, st.header)));
                        write(Unpooled.wrappedBuffer(rawFrame(3, channel, whole)));
                    }
                    if (nack) {
                        send(channel, new BasicNackEncoder().deliveryTag(tag).multiple(false));
                    } else {
                        send(channel, new BasicAckEncoder().deliveryTag(tag).multiple(false));
                    }
                    ackedUpTo = tag;
                }
            }
            return errors.isEmpty();
        }

        private synchronized void flushAcks() throws IOException {
            if (!holdAcks) {
                ackUpTo(confirmPublishes.get());
            }
        }

        private void ackUpTo(long tag) throws IOException {
            if (tag > ackedUpTo) {
                ackedUpTo = tag;
                send(CONFIRM_CHANNEL, new BasicAckEncoder().deliveryTag(tag).multiple(true));
            }
        }

        private static byte[] rawFrame(int type, int channel, byte[] payload) {
            return ByteBuffer.allocate(payload.length + 8)
                    .put((byte) type)
                    .putShort((short) channel)
                    .putInt(payload.length)
                    .put(payload)
                    .put((byte) Frames.FRAME_END)
                    .array();
        }
    }
}
