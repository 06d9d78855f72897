package io.warren.it;

import static io.warren.it.Await.awaitTrue;
import static io.warren.it.ConsumeIT.messageCount;
import static io.warren.it.ConsumeIT.numberOf;
import static io.warren.it.ConsumeIT.publishNumbered;
import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientMetrics;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.it.BrokerExtension.TestNames;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Flow control against the broker: a paused noAck consumer stops the connection's reading, so the client's memory
 * stays bounded however much the broker has for it, or, with dropOverflow, drops what its full queue cannot take and
 * lets the connection read on; a paused consumer with manual acks and a prefetch stops at
 * the prefetch without holding up the other consumers of its connection.
 */
@ExtendWith(BrokerExtension.class)
class FlowControlIT {

    private static final int MESSAGES = 200_000;
    private static final int BODY = 1024;
    /** Generous: the messages total 200 MB; the consumer's queue holds ~1 MiB at its high-water mark. */
    private static final long MEMORY_BOUND = 48L * 1024 * 1024;

    /**
     * Bytes the connection's allocator (a {@code PooledByteBufAllocator}) holds, direct + heap: what its pooled
     * buffers, the received frames among them, keep alive.
     */
    private static long allocatorUsed(Connection connection) {
        ByteBufAllocator alloc =
                ((io.warren.impl.ConnectionImpl) connection).handler().alloc();
        ByteBufAllocatorMetric m = ((ByteBufAllocatorMetricProvider) alloc).metric();
        return m.usedDirectMemory() + m.usedHeapMemory();
    }

    /**
     * The 200 MB are in the queue before the consumer starts paused, so the broker pushes them at the client as
     * fast as the socket takes them, and the pause is short: RabbitMQ closes a connection whose socket it could
     * not write to for 30 s (Ranch's default {@code send_timeout}, with {@code send_timeout_close}), which bounds
     * how long any client may stop reading.
     */
    @Test
    void aPausedNoAckConsumerKeepsMemoryBoundedThenGetsEverythingInOrder(
            Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        long publishStart = System.nanoTime();
        publishNumbered(broker, q, MESSAGES, BODY);
        long publishMillis = (System.nanoTime() - publishStart) / 1_000_000;
        AtomicInteger received = new AtomicInteger();
        AtomicInteger outOfOrder = new AtomicInteger();
        CountDownLatch all = new CountDownLatch(1);
        long baseline = allocatorUsed(connection);
        // paused from the start (initial demand 0): the first delivery already finds no demand
        ConsumeOptions options = new ConsumeOptions().noAck(true).initialDemand(0);
        ConsumerHandle c = await(ch.consume(q, options, d -> {
            int expected = received.getAndIncrement();
            if (numberOf(d) != expected) {
                outOfOrder.incrementAndGet();
            }
            if (expected + 1 == MESSAGES) {
                all.countDown();
            }
        }));
        AtomicLong peak = new AtomicLong(baseline);
        AtomicLong peakQueued = new AtomicLong();
        long pausedUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < pausedUntil) {
            peak.accumulateAndGet(allocatorUsed(connection), Math::max);
            peakQueued.accumulateAndGet(c.queued(), Math::max);
            Thread.sleep(5);
        }
        // reading is paused on `connection`: its own replies could not be read, so ask on another one
        Connection observer = await(BrokerExtension.client().connect(broker.uri()));
        long ready;
        try {
            ready = messageCount(await(observer.openChannel()), q);
        } finally {
            await(observer.close());
        }
        System.gc();
        long heapAfterGc =
                ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        System.out.printf(
                "FlowControlIT: %,d x %d B published in %,d ms; consumer paused 5 s: client queue peak %,d "
                        + "deliveries; allocator used %,d -> peak %,d bytes (+%,d); %,d still in the broker; heap "
                        + "after GC %,d bytes%n",
                MESSAGES,
                BODY,
                publishMillis,
                peakQueued.get(),
                baseline,
                peak.get(),
                peak.get() - baseline,
                ready,
                heapAfterGc);
        assertEquals(0, received.get(), "paused: nothing handed over");
        assertTrue(peakQueued.get() >= ConsumeOptions.DEFAULT_HIGH_WATER_MARK, "the queue filled to its mark");
        assertTrue(
                peakQueued.get() <= ConsumeOptions.DEFAULT_HIGH_WATER_MARK + 512,
                "the consumer's queue stops near its high-water mark: " + peakQueued.get());
        assertTrue(
                peak.get() - baseline < MEMORY_BOUND,
                "allocator grew by " + (peak.get() - baseline) + " bytes while 200 MB were waiting");
        assertTrue(ready > MESSAGES / 2, "the broker kept the messages the client did not read: " + ready);

        long resumeStart = System.nanoTime();
        c.resume();
        assertTrue(all.await(300, TimeUnit.SECONDS), "received " + received.get() + " of " + MESSAGES);
        long resumeMillis = (System.nanoTime() - resumeStart) / 1_000_000;
        System.out.printf("FlowControlIT: resumed, %,d delivered in order in %,d ms%n", received.get(), resumeMillis);
        assertEquals(0, outOfOrder.get(), "deliveries out of order");
        Thread.sleep(200);
        assertEquals(MESSAGES, received.get(), "none twice");
        assertEquals(0, messageCount(ch, q));
        await(c.cancel());
        await(ch.queueDelete(q));
    }

    /**
     * With {@link ConsumeOptions#dropOverflow}, a paused noAck consumer's queue stops at its high-water mark and what
     * arrives after is dropped and counted: the connection reads everything the broker sends, its own method replies
     * come, and the consumer gets the oldest once resumed. Without it, reading stops at the mark: the counts never add
     * up, and the passive declare's reply is not read until the consumer drains.
     */
    @Test
    void aPausedNoAckConsumerThatDropsOverflowKeepsItsConnectionReading(Broker broker, TestNames names)
            throws Exception {
        int messages = 20_000;
        AmqpClient client =
                AmqpClient.create(new ClientOptions().metricsEnabled(true).ioThreads(1));
        try {
            Connection connection = await(client.connect(broker.uri()));
            Channel ch = await(connection.openChannel());
            String q = names.queue("q");
            await(ch.queueDeclare(q));
            publishNumbered(broker, q, messages, BODY);
            List<Integer> handled = Collections.synchronizedList(new ArrayList<>());
            ConsumeOptions options = new ConsumeOptions()
                    .noAck(true)
                    .initialDemand(0)
                    .waterMarks(50, 100)
                    .dropOverflow(true);
            ConsumerHandle c = await(ch.consume(q, options, d -> handled.add(numberOf(d))));
            ClientMetrics metrics = client.metrics();
            awaitTrue(
                    () -> metrics.overflowDeliveriesDropped() + c.queued() == messages,
                    Duration.ofSeconds(60),
                    "every message read while the consumer is paused");
            assertEquals(100, c.queued(), "the queue holds its high-water mark");
            assertEquals(messages - 100, metrics.overflowDeliveriesDropped());
            assertEquals(0, messageCount(ch, q), "the connection's own replies come: it reads");
            assertEquals(List.of(), handled, "paused: nothing handed over");

            c.resume();
            awaitTrue(() -> handled.size() == 100, Duration.ofSeconds(30), "the 100 kept");
            assertEquals(IntStream.range(0, 100).boxed().toList(), handled, "the oldest were kept, in order");
            await(c.cancel());
            await(ch.queueDelete(q));
        } finally {
            await(client.close());
        }
    }

    @Test
    void aPausedManualAckConsumerStopsAtItsPrefetchAndDoesNotStallTheOthers(
            Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String slow = names.queue("slow");
        String fast = names.queue("fast");
        await(ch.queueDeclare(slow));
        await(ch.queueDeclare(fast));
        int n = 2000;
        AtomicInteger slowCount = new AtomicInteger();
        AtomicInteger fastCount = new AtomicInteger();
        // both on ONE channel and connection; the default water marks lie above the prefetch: the broker keeps to
        // it, so the paused consumer's queue never stops the connection's reading
        ConsumeOptions options = new ConsumeOptions().prefetch(20);
        ConsumerHandle paused = await(ch.consume(slow, options, d -> {
            slowCount.incrementAndGet();
            d.ack();
        }));
        paused.pause();
        ConsumerHandle running = await(ch.consume(fast, options, d -> {
            fastCount.incrementAndGet();
            d.ack();
        }));
        publishNumbered(broker, slow, n, 64);
        publishNumbered(broker, fast, n, 64);
        awaitTrue(
                () -> fastCount.get() == n,
                Duration.ofSeconds(60),
                "the running consumer to get all " + n + " (got " + fastCount.get() + ")");
        assertEquals(0, slowCount.get());
        assertEquals(20, paused.queued(), "the broker stopped at the paused consumer's prefetch");
        paused.resume();
        awaitTrue(() -> slowCount.get() == n, Duration.ofSeconds(60), "the resumed consumer to get all " + n);
        await(paused.cancel());
        await(running.cancel());
        assertEquals(0, messageCount(ch, slow));
        assertEquals(0, messageCount(ch, fast));
        await(ch.queueDelete(slow));
        await(ch.queueDelete(fast));
    }
}
