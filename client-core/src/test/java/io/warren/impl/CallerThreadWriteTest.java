package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.publish.Publisher;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Publishing threads that write on their own thread (the outbound path's writer token) and the event loop's writes
 * (a consumer's acks, publishes of a channel in confirm mode, channel RPCs) on one connection, over a real socket to
 * a peer that reads slowly through a small receive buffer, so that the socket fills and callers' writes are handed
 * over in part. The peer checks the byte stream frame by frame: every frame well formed and ended by 0xCE; on each
 * channel basic.publish, its content header and its body frames never interleaved with another method; each
 * thread's messages in its order with their bodies intact; in confirm mode the sequence number each publish carries
 * equal to its place on the wire.
 */
class CallerThreadWriteTest {

    private static final int THREADS = 8;
    private static final int MESSAGES = 1500;
    /** Channels 2..4: two threads each, no confirms; channel 5: two threads, confirm mode; channel 1: a consumer. */
    private static final int CONFIRM_CHANNEL = 5;

    @Test
    void callerAndEventLoopWritesInterleaveOnlyBetweenWholeMessages() throws Exception {
        AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(1));
        try (Peer peer = new Peer()) {
            Connection connection = client.connect(new ConnectionOptions().address("127.0.0.1", peer.port()))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            // a small socket send buffer: callers' writes are often taken only in part and handed to the loop
            OutboundPath outbound = ((ConnectionImpl) connection).handler().outbound();
            outbound.channel().config().setOption(io.netty.channel.ChannelOption.SO_SNDBUF, 4096);
            // callers write whenever the path is idle, not only after a pause: as many caller writes as can be
            outbound.callerWriteGap(0);
            Channel consumerChannel =
                    connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            consumerChannel
                    .consume("q", new ConsumeOptions().prefetch(100), d -> d.ack())
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            List<Channel> channels = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                channels.add(connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS));
            }
            Channel confirming = channels.get(3);
            assertEquals(CONFIRM_CHANNEL, confirming.channelNumber());
            confirming.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);

            CyclicBarrier start = new CyclicBarrier(THREADS);
            ConcurrentLinkedQueue<CompletableFuture<PublishOutcome>> all = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                Channel ch = channels.get(t / 2);
                threads.add(new Thread(
                        () -> {
                            try {
                                start.await();
                                for (int seq = 0; seq < MESSAGES; seq++) {
                                    if (!ch.isWritable()) {
                                        ch.whenWritable().toCompletableFuture().get(30, TimeUnit.SECONDS);
                                    }
                                    ByteBuf body = body(thread, seq);
                                    boolean confirms = ch == confirming;
                                    if (confirms || seq % 2 == 0) {
                                        all.add(ch.publish("x", "rk", confirms, BasicProperties.EMPTY, body)
                                                .toCompletableFuture());
                                    } else {
                                        ch.publishNoOutcome("x", "rk", false, BasicProperties.EMPTY, body);
                                    }
                                }
                            } catch (Throwable e) {
                                failures.add(e);
                            }
                        },
                        "publisher-" + t));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join(60_000);
            }
            assertEquals(List.of(), peer.errors);
            assertEquals(List.of(), failures);
            for (CompletableFuture<PublishOutcome> f : all) {
                PublishOutcome o = f.get(30, TimeUnit.SECONDS);
                assertTrue(o == PublishOutcome.SENT || o == PublishOutcome.CONFIRMED, o::toString);
            }
            assertTrue(
                    peer.publishes.await(THREADS * MESSAGES, 30_000),
                    () -> "the peer read " + peer.publishes.get() + " publishes of " + THREADS * MESSAGES + "; "
                            + peer.errors);
            assertEquals(List.of(), peer.errors);
            long[] counts = outbound.callerWriteCounts();
            assertTrue(counts[0] > 0, "some publishes were written on their callers' threads");
            // a 20 kB message written by a caller cannot fit the socket's buffers: its rest went through the loop
            assertTrue(counts[1] > 0, "some callers' writes were taken in part and handed over");
            assertTrue(peer.acksRead.get() > 0, "the event loop wrote acks meanwhile");
            connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            peer.awaitEnd(10_000);
            assertEquals(List.of(), peer.errors);
        } finally {
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    /** Thread and sequence number first, then a filler of the sequence number's low byte; some are large. */
    private static ByteBuf body(int thread, int seq) {
        int size = seq % 7 == 0 ? 20_000 : 8 + seq % 200;
        ByteBuf b = ByteBufAllocator.DEFAULT.buffer(size);
        b.writeInt(thread).writeInt(seq);
        while (b.isWritable()) {
            b.writeByte(seq);
        }
        return b;
    }

    /** A counter a test can wait on. */
    static final class Count {
        private final AtomicLong n = new AtomicLong();

        void increment() {
            n.incrementAndGet();
        }

        long get() {
            return n.get();
        }

        boolean await(long target, long millis) throws InterruptedException {
            long deadline = System.currentTimeMillis() + millis;
            while (n.get() < target && System.currentTimeMillis() < deadline) {
                Thread.sleep(10);
            }
            return n.get() >= target;
        }
    }

    /** A peer that checks each thread's messages on its channel, and the sequence numbers in confirm mode. */
    private static final class Peer extends SocketPeer {
        final Count publishes = new Count();
        // the peer's thread only
        private final Map<Integer, Integer> nextSeq = new HashMap<>();
        private long wireSequence; // the confirm channel's publishes read so far

        Peer() throws IOException {
            super(8192, true, "peer");
            deliveries(100, Long.MAX_VALUE);
            start();
        }

        @Override
        protected void contentHeader(int channel, Stream st, ContentHeader h) {
            if (channel == CONFIRM_CHANNEL && st.confirmSelected) {
                wireSequence++;
                long stamped = Publisher.SEQUENCE_HEADER.find(h, -1);
                if (stamped != wireSequence) {
                    errors.add("channel " + channel + ": publish " + wireSequence + " on the wire carries "
                            + "sequence number " + stamped);
                }
            }
        }

        /** A publish's body is complete: check it, and in confirm mode ack it. */
        @Override
        protected boolean publish(int channel, Stream st) throws IOException {
            ByteBuf b = st.body;
            int thread = b.readInt();
            int seq = b.readInt();
            int expected = nextSeq.getOrDefault(thread, 0);
            if (seq != expected || thread / 2 + 2 != channel) {
                errors.add("channel " + channel + ": thread " + thread + "'s message " + seq + " where " + expected
                        + " was next");
            }
            nextSeq.put(thread, seq + 1);
            while (b.isReadable()) {
                if (b.readByte() != (byte) seq) {
                    errors.add("channel " + channel + ": thread " + thread + "'s message " + seq + " has a foreign "
                            + "byte at " + (b.readerIndex() - 1) + ": " + ByteBufUtil.hexDump(b, 0, 8));
                    break;
                }
            }
            publishes.increment();
            if (channel == CONFIRM_CHANNEL && st.confirmSelected) {
                send(channel, new BasicAckEncoder().deliveryTag(wireSequence).multiple(false));
            }
            return errors.isEmpty();
        }
    }
}
