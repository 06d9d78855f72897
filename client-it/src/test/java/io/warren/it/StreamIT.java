package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RecoveryOptions;
import io.warren.StaleDeliveryException;
import io.warren.StreamOffsetTracker;
import io.warren.codec.content.BasicProperties;
import io.warren.it.RabbitCluster.Node;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Stream queues over AMQP 0-9-1 (RabbitMQ core since 3.9; the rabbitmq_stream plugin is only for the stream
 * protocol), replicated on the cluster: consumers start at {@code first}, {@code last}, {@code next}, an absolute
 * offset and a timestamp, with the prefetch a stream requires and manual acks, each delivery telling its offset in
 * {@code x-stream-offset}; a {@link StreamOffsetTracker} resumes a consumer after a reconnect at the message after
 * the last one processed, without a gap or a repeat.
 *
 * <p>The shared stream holds m0..m49, then, from a whole second later ({@link #secondBatchFrom}), m50..m99: message
 * mN is at offset N.
 */
@Tag("cluster")
class StreamIT {

    private static final Duration T = Duration.ofSeconds(60);
    private static final int PREFETCH = 50;

    private static Connection connection;
    private static String stream;
    private static Instant secondBatchFrom;

    private static <T> T await(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(T.toSeconds(), TimeUnit.SECONDS);
    }

    @BeforeAll
    static void streamOfTwoBatches() throws Exception {
        RabbitCluster.require();
        connection = await(BrokerExtension.client().connect(RabbitCluster.options("stream-it", RabbitCluster.NODES)));
        stream = "warren-it.cluster.stream." + Long.toHexString(System.nanoTime());
        declareStream(stream);
        publish(stream, 0, 50);
        // AMQP timestamps are whole seconds: the second batch starts after the next second begins
        secondBatchFrom = Instant.ofEpochSecond(Instant.now().getEpochSecond() + 1);
        long sleep = secondBatchFrom.toEpochMilli() + 300 - System.currentTimeMillis();
        Thread.sleep(Math.max(0, sleep));
        publish(stream, 50, 100);
    }

    @AfterAll
    static void deleteStream() throws Exception {
        if (connection != null) {
            Channel ch = await(connection.openChannel());
            await(ch.queueDelete(stream));
            await(connection.close());
        }
    }

    private static void declareStream(String name) throws Exception {
        Channel ch = await(connection.openChannel());
        await(ch.queueDeclare(QueueSpec.named(name).stream()));
        await(ch.close());
    }

    /** Publishes m{from}..m{to - 1} with confirms and waits for them. */
    private static void publish(String to, int from, int end) throws Exception {
        Channel ch = await(connection.openChannel());
        await(ch.confirmSelect());
        List<CompletableFuture<PublishOutcome>> all = new ArrayList<>();
        for (int i = from; i < end; i++) {
            all.add(ch.publish("", to, false, BasicProperties.EMPTY, ("m" + i).getBytes(StandardCharsets.UTF_8))
                    .toCompletableFuture());
        }
        for (CompletableFuture<PublishOutcome> f : all) {
            assertTrue(f.get(T.toSeconds(), TimeUnit.SECONDS).isConfirmed());
        }
        await(ch.close());
    }

    /**
     * What a handler saw of one delivery: its {@code x-stream-offset} header and body. Handlers only record;
     * the test thread asserts ({@link #offsetOf}), since an assertion failing in a handler would be lost.
     */
    private record Got(Object offsetHeader, String body) {
        static Got of(Delivery d) {
            return new Got(
                    d.properties().headers().get("x-stream-offset"), d.body().toString(StandardCharsets.UTF_8));
        }

        /** "offset body", the header checked to be a number. */
        @Override
        public String toString() {
            return offsetOf(this) + " " + body;
        }
    }

    private static long offsetOf(Got g) {
        Object o = g.offsetHeader();
        assertTrue(o instanceof Number, () -> "x-stream-offset header: " + o);
        return ((Number) o).longValue();
    }

    /** Offsets delivered to one consumer, each checked against its body (mN at offset N) on the test thread. */
    private static final class Received {
        final BlockingQueue<Got> deliveries = new LinkedBlockingQueue<>();
        ConsumerHandle handle;
        Channel channel;

        void take(Delivery d) {
            deliveries.add(Got.of(d));
            d.ack();
        }

        /** The offsets received until {@code last} is, in order. */
        List<Long> until(long last) throws Exception {
            List<Long> got = new ArrayList<>();
            while (got.isEmpty() || got.get(got.size() - 1) < last) {
                Got g = deliveries.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertTrue(g != null, () -> "offset " + last + " not reached; got " + got);
                long offset = offsetOf(g);
                assertEquals("m" + offset, g.body(), "the message at its offset");
                got.add(offset);
            }
            return got;
        }

        void cancel() throws Exception {
            await(channel.close());
        }
    }

    private static Received consume(ConsumeOptions offset) throws Exception {
        Received r = new Received();
        r.channel = await(connection.openChannel());
        // a stream needs a prefetch (basic.qos) and manual acks: the acks are its consumer's credit
        r.handle = await(r.channel.consume(stream, offset.prefetch(PREFETCH), r::take));
        return r;
    }

    private static List<Long> range(long from, long toInclusive) {
        List<Long> l = new ArrayList<>();
        for (long i = from; i <= toInclusive; i++) {
            l.add(i);
        }
        return l;
    }

    @Test
    void fromFirstEveryMessageInOrder() throws Exception {
        Received r = consume(new ConsumeOptions().streamOffset("first"));
        assertEquals(range(0, 99), r.until(99));
        r.cancel();
    }

    @Test
    void fromLastTheLastChunkOnly() throws Exception {
        Received r = consume(new ConsumeOptions().streamOffset("last"));
        List<Long> got = r.until(99);
        System.out.println("[StreamIT] from last: offsets " + got.get(0) + ".." + got.get(got.size() - 1));
        assertTrue(got.get(0) >= 50, () -> "the last chunk is of the second batch: " + got);
        assertEquals(range(got.get(0), 99), got);
        r.cancel();
    }

    @Test
    void fromAnAbsoluteOffset() throws Exception {
        Received r = consume(new ConsumeOptions().streamOffset(42));
        assertEquals(range(42, 99), r.until(99));
        r.cancel();
    }

    @Test
    void fromATimestampTheFirstMessageStoredAtOrAfterIt() throws Exception {
        Received r = consume(new ConsumeOptions().streamOffset(secondBatchFrom));
        assertEquals(range(50, 99), r.until(99), "the second batch, stored from " + secondBatchFrom);
        r.cancel();
    }

    @Test
    void fromNextOnlyWhatArrivesAfterTheConsumerStarts() throws Exception {
        String own = "warren-it.cluster.stream-next." + Long.toHexString(System.nanoTime());
        declareStream(own);
        try {
            publish(own, 0, 10);
            Channel ch = await(connection.openChannel());
            BlockingQueue<Got> got = new LinkedBlockingQueue<>();
            await(ch.consume(own, new ConsumeOptions().streamOffset("next").prefetch(PREFETCH), d -> {
                got.add(Got.of(d));
                d.ack();
            }));
            publish(own, 10, 11);
            assertEquals("10 m10", String.valueOf(got.poll(T.toSeconds(), TimeUnit.SECONDS)));
            // one consumer's deliveries come in order: anything else would show ahead of m10 or between it and
            // m11 (no waiting for something not to happen)
            publish(own, 11, 12);
            assertEquals(
                    "11 m11",
                    String.valueOf(got.poll(T.toSeconds(), TimeUnit.SECONDS)),
                    "nothing stored before the consumer started");
            assertNull(got.poll(), "nothing else delivered");
            await(ch.close());
        } finally {
            Channel ch = await(connection.openChannel());
            await(ch.queueDelete(own));
            await(ch.close());
        }
    }

    @Test
    void aTrackedConsumerResumesAfterAReconnectAtTheNextOffsetWithoutGapOrRepeat() throws Exception {
        String own = "warren-it.cluster.stream-resume." + Long.toHexString(System.nanoTime());
        declareStream(own);
        int total = 1_000;
        String name = "stream-resume-" + System.nanoTime();
        Node node = RabbitCluster.NODES.get(2);
        Connection consumer = await(BrokerExtension.client()
                .connect(RabbitCluster.options(name, List.of(node))
                        .recovery(new RecoveryOptions()
                                .backoff(Duration.ofMillis(100), Duration.ofSeconds(1), 2.0, 0.2))));
        ExecutorService worker = Executors.newSingleThreadExecutor();
        try {
            publish(own, 0, total);
            StreamOffsetTracker offsets = StreamOffsetTracker.startingAt("first");
            List<Long> processed = new ArrayList<>(); // worker thread only, read after `done`
            AtomicInteger repeatsSkipped = new AtomicInteger();
            CountDownLatch some = new CountDownLatch(total / 2);
            CountDownLatch cut = new CountDownLatch(1); // the handler waits at half until the connection is cut
            QuorumQueueClusterIT.Recoveries recoveries = new QuorumQueueClusterIT.Recoveries();
            consumer.addRecoveryListener(recoveries);
            CountDownLatch done = new CountDownLatch(1);
            Channel ch = await(consumer.openChannel());
            await(ch.consume(
                    own,
                    new ConsumeOptions()
                            .prefetch(PREFETCH)
                            .streamOffset(offsets)
                            .executor(worker),
                    d -> {
                        if (offsets.isRepeat(d)) {
                            repeatsSkipped.incrementAndGet(); // delivered again after the re-consume: done already
                        } else {
                            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(200)); // the work
                            processed.add(offsets.processed(d));
                            some.countDown();
                            if (processed.size() == total / 2) {
                                cut.await(T.toSeconds(), TimeUnit.SECONDS);
                            }
                            if (offsets.lastProcessed() == total - 1) {
                                done.countDown();
                            }
                        }
                        try {
                            d.ack();
                        } catch (StaleDeliveryException e) {
                            // from the lost connection: processed and tracked, the new consumer starts after it
                        }
                    }));
            assertTrue(some.await(T.toSeconds(), TimeUnit.SECONDS));
            RabbitCluster.closeConnection(name, "StreamIT: the consumer's connection is cut");
            long cutAfter = offsets.lastProcessed();
            cut.countDown();
            assertTrue(done.await(T.toSeconds(), TimeUnit.SECONDS), () -> "processed up to " + offsets.lastProcessed());
            System.out.println("[StreamIT] consumer cut after offset " + cutAfter + ", re-consumed at the next one: "
                    + processed.size() + " processed, " + repeatsSkipped.get() + " repeats skipped by isRepeat");
            assertEquals(range(0, total - 1), processed, "every offset once, in order");
            // The re-consume asked for the offset after the last processed, so only what was in flight at the cut
            // (the prefetch, give or take a chunk) comes again; from its first offset, all 500 processed would.
            assertTrue(repeatsSkipped.get() < total / 4, () -> repeatsSkipped.get() + " delivered again");
            assertEquals(1, recoveries.succeeded.get(), "the consumer's connection was cut and recovered");
            assertTrue(cutAfter < total - 1, () -> "cut after the last message (" + cutAfter + "): nothing resumed");
        } finally {
            worker.shutdownNow();
            await(consumer.close());
            Channel ch = await(connection.openChannel());
            await(ch.queueDelete(own));
            await(ch.close());
        }
    }
}
