package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerCancelledException;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.GetResponse;
import io.warren.QueueSpec;
import io.warren.StaleDeliveryException;
import io.warren.VirtualThreads;
import io.warren.it.BrokerExtension.TestNames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Consuming against the broker: acknowledgement modes, the handler's context (event loop, worker pool, virtual
 * threads), concurrency with acks from many threads, async handlers, and how a consumer ends. Messages are
 * published with the official Java client: an independent writer.
 */
@ExtendWith(BrokerExtension.class)
class ConsumeIT {

    // ---- helpers shared with FlowControlIT and VertxIT -------------------------------------------------------

    /** Publishes {@code count} bodies of {@code size} bytes (at least 4) carrying their index in the first 4 bytes. */
    static void publishNumbered(Broker broker, String queue, int count, int size) throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(broker.uri());
        try (com.rabbitmq.client.Connection c = f.newConnection("warren-it publisher");
                com.rabbitmq.client.Channel ch = c.createChannel()) {
            ch.confirmSelect();
            byte[] body = new byte[Math.max(4, size)];
            AMQP.BasicProperties props =
                    new AMQP.BasicProperties.Builder().messageId("m").build();
            for (int i = 0; i < count; i++) {
                body[0] = (byte) (i >>> 24);
                body[1] = (byte) (i >>> 16);
                body[2] = (byte) (i >>> 8);
                body[3] = (byte) i;
                ch.basicPublish("", queue, props, body);
                if (i % 5000 == 4999) {
                    ch.waitForConfirmsOrDie(60_000);
                }
            }
            ch.waitForConfirmsOrDie(60_000);
        }
    }

    /** The index {@link #publishNumbered} wrote into a body. */
    static int numberOf(Delivery d) {
        return d.body().getInt(d.body().readerIndex());
    }

    /**
     * Messages ready in {@code queue}, from a passive declare: queue.declare-ok's message-count leaves out those
     * delivered and not yet acknowledged, so it cannot tell that acks have counted ({@link Await#queueCounts} can).
     */
    static long messageCount(Channel ch, String queue) throws Exception {
        return await(ch.queueDeclare(QueueSpec.passive(queue))).messageCount();
    }

    // ---- tests -----------------------------------------------------------------------------------------------

    @Test
    void manualAcksOnTheEventLoopDrainTheQueue(Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        publishNumbered(broker, q, 5000, 100);
        BitSet seen = new BitSet();
        AtomicInteger wrongThread = new AtomicInteger();
        CountDownLatch all = new CountDownLatch(5000);
        ConsumerHandle c = await(ch.consume(q, new ConsumeOptions().prefetch(200), d -> {
            if (!Thread.currentThread().getName().startsWith("warren-io")) {
                wrongThread.incrementAndGet();
            }
            assertEquals("", d.exchange());
            assertEquals(q, d.routingKey());
            assertEquals("m", d.properties().messageId());
            seen.set(numberOf(d));
            d.ack();
            all.countDown();
        }));
        assertTrue(all.await(60, TimeUnit.SECONDS), "5000 deliveries, got " + seen.cardinality());
        assertEquals(5000, seen.cardinality());
        assertEquals(0, wrongThread.get(), "the handler ran off the connection's event loop");
        await(c.cancel());
        assertNull(await(c.endFuture()));
        assertEquals(0, messageCount(ch, q), "every delivery acknowledged");
        Await.queueCounts(q, 0, 0, Duration.ofSeconds(10));
        await(ch.queueDelete(q));
    }

    @Test
    void multipleAcksEveryHundred(Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        publishNumbered(broker, q, 10_000, 16);
        AtomicInteger count = new AtomicInteger();
        CountDownLatch all = new CountDownLatch(1);
        ConsumerHandle c = await(ch.consume(q, new ConsumeOptions().prefetch(1000), d -> {
            int n = count.incrementAndGet();
            if (n % 100 == 0) {
                d.ack(true);
            }
            if (n == 10_000) {
                all.countDown();
            }
        }));
        assertTrue(all.await(60, TimeUnit.SECONDS), "got " + count.get());
        await(c.cancel());
        assertEquals(0, messageCount(ch, q));
    }

    @Test
    void nackWithRequeueComesBackRedelivered(Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        publishNumbered(broker, q, 1, 4);
        List<Boolean> redelivered = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch twice = new CountDownLatch(2);
        ConsumerHandle c = await(ch.consume(q, new ConsumeOptions().prefetch(1), d -> {
            redelivered.add(d.redelivered());
            if (d.redelivered()) {
                d.ack();
            } else {
                d.nack(true);
            }
            twice.countDown();
        }));
        assertTrue(twice.await(30, TimeUnit.SECONDS));
        assertEquals(List.of(false, true), redelivered);
        await(c.cancel());
        assertEquals(0, messageCount(ch, q));
    }

    /**
     * basic.recover with the whole prefetch unacknowledged: the broker redelivers every message with a new tag and
     * forgets the old ones. Warren refuses a settlement of an old one (StaleDeliveryException, nothing sent, so the
     * channel stays open), and the new tags settle the messages.
     */
    @Test
    void basicRecoverRedeliversWithNewTagsAndAnOldTagIsStale(Broker broker, Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        int prefetch = 5;
        publishNumbered(broker, q, prefetch, 4);
        List<Delivery> first = Collections.synchronizedList(new ArrayList<>());
        List<Delivery> again = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch allFirst = new CountDownLatch(prefetch);
        CountDownLatch allAgain = new CountDownLatch(prefetch);
        ConsumerHandle c = await(ch.consume(q, new ConsumeOptions().prefetch(prefetch), d -> {
            (d.redelivered() ? again : first).add(d.retain());
            (d.redelivered() ? allAgain : allFirst).countDown();
        }));
        try {
            assertTrue(allFirst.await(30, TimeUnit.SECONDS), "got " + first.size());
            Await.queueCounts(q, 0, prefetch, Duration.ofSeconds(10)); // the whole prefetch unacknowledged

            await(ch.basicRecover(true));
            assertTrue(allAgain.await(30, TimeUnit.SECONDS), "redelivered " + again.size());
            assertEquals(prefetch, first.size(), "nothing new came before the redeliveries");
            assertEquals(
                    first.stream().map(ConsumeIT::numberOf).sorted().toList(),
                    again.stream().map(ConsumeIT::numberOf).sorted().toList());
            long highestBefore = first.get(prefetch - 1).deliveryTag();
            assertTrue(again.get(0).deliveryTag() > highestBefore, "new tags");

            StaleDeliveryException stale = assertThrows(
                    StaleDeliveryException.class, () -> ch.basicAck(first.get(0).deliveryTag(), false));
            assertEquals(first.get(0).deliveryTag(), stale.deliveryTag());
            assertThrows(StaleDeliveryException.class, () -> ch.basicAck(highestBefore, true));
            assertThrows(StaleDeliveryException.class, () -> first.get(1).ack());
            assertThrows(StaleDeliveryException.class, () -> first.get(2).reject(true));
            // a round trip: had anything been sent for an old tag the broker would have closed the channel first
            assertEquals(0, messageCount(ch, q));
            assertTrue(ch.isOpen());
            assertTrue(c.isActive());

            again.get(0).ack();
            ch.basicAck(again.get(prefetch - 1).deliveryTag(), true); // the remaining redeliveries
            Await.queueCounts(q, 0, 0, Duration.ofSeconds(10));
            assertEquals(0, messageCount(ch, q));
            assertTrue(ch.isOpen());
            assertTrue(connection.isOpen());
            await(c.cancel());
            await(ch.queueDelete(q));
        } finally {
            first.forEach(Delivery::release);
            again.forEach(Delivery::release);
        }
    }

    @Test
    void aWorkerPoolHandlesUpToConcurrencyAtOnceAndAcksFromItsThreads(
            Broker broker, Connection connection, TestNames names) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(16, new DefaultThreadFactory("it-workers", true));
        try {
            concurrencyRun(broker, connection, names, pool, "it-workers", 8, false);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Virtual threads when the runtime has them (CI runs this on JDK 25 too), else a worker pool: the test runs in
     * both cases and says which it ran on, never skips.
     */
    @Test
    void virtualThreadsOrAWorkerPool(Broker broker, Connection connection, TestNames names) throws Exception {
        if (VirtualThreads.available()) {
            System.out.println("ConsumeIT: consumer on virtual threads (" + Runtime.version() + ")");
            concurrencyRun(broker, connection, names, VirtualThreads.executor(), null, 32, true);
        } else {
            System.out.println("ConsumeIT: no virtual threads on " + Runtime.version() + "; consumer on a worker pool");
            ExecutorService pool = Executors.newCachedThreadPool(new DefaultThreadFactory("it-cached", true));
            try {
                concurrencyRun(broker, connection, names, pool, "it-cached", 32, false);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    private void concurrencyRun(
            Broker broker,
            Connection connection,
            TestNames names,
            java.util.concurrent.Executor executor,
            String threadPrefix,
            int concurrency,
            boolean virtual)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        int total = 2000;
        publishNumbered(broker, q, total, 64);
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger maxInFlight = new AtomicInteger();
        AtomicInteger wrongThread = new AtomicInteger();
        BitSet seen = new BitSet();
        CountDownLatch all = new CountDownLatch(total);
        ConsumeOptions options =
                new ConsumeOptions().prefetch(500).executor(executor).concurrency(concurrency);
        ConsumerHandle c = await(ch.consume(q, options, d -> {
            int now = inFlight.incrementAndGet();
            maxInFlight.accumulateAndGet(now, Math::max);
            boolean ok = virtual
                    ? isVirtual(Thread.currentThread())
                    : Thread.currentThread().getName().startsWith(threadPrefix);
            if (!ok) {
                wrongThread.incrementAndGet();
            }
            Thread.sleep(1); // blocking is allowed off the event loop
            synchronized (seen) {
                seen.set(numberOf(d));
            }
            inFlight.decrementAndGet();
            d.ack();
            all.countDown();
        }));
        assertTrue(all.await(120, TimeUnit.SECONDS), "got " + (total - all.getCount()));
        assertEquals(total, seen.cardinality());
        assertEquals(0, wrongThread.get(), "handler on the wrong threads");
        assertTrue(maxInFlight.get() <= concurrency, "at most " + concurrency + " at once, saw " + maxInFlight.get());
        assertTrue(maxInFlight.get() > 1, "deliveries were handled in parallel: " + maxInFlight.get());
        await(c.cancel());
        // every ack (made on the handler's threads) counted: nothing ready, nothing unacknowledged
        Await.queueCounts(q, 0, 0, Duration.ofSeconds(10));
    }

    private static boolean isVirtual(Thread t) {
        try {
            return (boolean) Thread.class.getMethod("isVirtual").invoke(t);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    @Test
    void asyncHandlersKeepConcurrencyStagesInFlight(Broker broker, Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        int total = 1000;
        publishNumbered(broker, q, total, 32);
        ScheduledExecutorService timer =
                Executors.newSingleThreadScheduledExecutor(new DefaultThreadFactory("it-timer", true));
        try {
            AtomicInteger inFlight = new AtomicInteger();
            AtomicInteger maxInFlight = new AtomicInteger();
            CountDownLatch all = new CountDownLatch(total);
            ConsumerHandle c =
                    await(ch.consumeAsync(q, new ConsumeOptions().prefetch(100).concurrency(16), d -> {
                        maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                        CompletableFuture<Void> done = new CompletableFuture<>();
                        timer.schedule(
                                () -> {
                                    // still borrowed until the stage completes: the body is readable here
                                    numberOf(d);
                                    inFlight.decrementAndGet();
                                    d.ack();
                                    all.countDown();
                                    done.complete(null);
                                },
                                1,
                                TimeUnit.MILLISECONDS);
                        return done;
                    }));
            assertTrue(all.await(60, TimeUnit.SECONDS), "got " + (total - all.getCount()));
            assertTrue(maxInFlight.get() <= 16 && maxInFlight.get() > 1, "in flight: " + maxInFlight.get());
            await(c.cancel());
            assertEquals(0, messageCount(ch, q));
        } finally {
            timer.shutdownNow();
        }
    }

    @Test
    void deletingTheQueueCancelsTheConsumerWithAClearReason(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        ConsumerHandle c = await(ch.consume(q, d -> {}));
        Channel other = await(connection.openChannel());
        await(other.queueDelete(q));
        AmqpException reason = c.endFuture().toCompletableFuture().get(30, TimeUnit.SECONDS);
        ConsumerCancelledException e = assertInstanceOf(ConsumerCancelledException.class, reason);
        assertEquals(q, e.queue());
        assertEquals(c.consumerTag(), e.consumerTag());
        assertFalse(c.isActive());
        assertTrue(ch.isOpen(), "the channel stays open");
        await(ch.queueDeclare(QueueSpec.serverNamed()));
    }

    @Test
    void closingTheChannelOrConnectionEndsConsumersWithTheCause(Broker broker, Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        publishNumbered(broker, q, 50, 1024);
        CountDownLatch first = new CountDownLatch(1);
        ConsumerHandle c = await(ch.consume(q, new ConsumeOptions().prefetch(50), d -> {
            first.countDown();
        }));
        assertTrue(first.await(30, TimeUnit.SECONDS));
        c.pause(); // the rest stays queued in the client: closing must release it
        await(ch.close());
        ChannelClosedException cause = assertInstanceOf(ChannelClosedException.class, await(c.endFuture()));
        assertFalse(cause.initiatedByBroker());
        Channel check = await(connection.openChannel());
        assertEquals(50, messageCount(check, q), "the broker requeued every unacknowledged delivery");

        io.warren.Connection second = await(BrokerExtension.client().connect(broker.uri()));
        Channel ch2 = await(second.openChannel());
        ConsumerHandle c2 = await(ch2.consume(q, new ConsumeOptions().prefetch(50), d -> {}));
        c2.pause();
        await(second.close());
        assertInstanceOf(ConnectionClosedException.class, await(c2.endFuture()));
        await(check.queueDelete(q));
    }

    @Test
    void basicGetGivesADelivery(Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        publishNumbered(broker, q, 2, 8);
        try (GetResponse r = await(ch.basicGet(q, false))) {
            Delivery d = r;
            assertEquals(0, numberOf(d));
            assertEquals(q, d.routingKey());
            assertEquals("m", d.header().messageIdAsString());
            assertEquals(1, r.messageCount());
            d.ack();
        }
        try (GetResponse r = await(ch.basicGet(q, false))) {
            r.reject(false);
        }
        assertEquals(0, messageCount(ch, q));
        assertNull(await(ch.basicGet(q, true)));
    }

    @Test
    void prioritiesAndExclusiveArePassedToTheBroker(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        ConsumerHandle exclusive = await(
                ch.consume(q, new ConsumeOptions().exclusive(true).priority(10).consumerTag("mine"), d -> {}));
        assertEquals("mine", exclusive.consumerTag());
        Channel other = await(connection.openChannel());
        Throwable refused = TopologyIT.failure(other.consume(q, d -> {}));
        ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, refused);
        assertEquals(403, e.replyCode());
        await(exclusive.cancel());
        await(ch.queueDelete(q));
    }

    @Test
    void aStreamIsReadFromTheFirstOffset(Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String s = names.queue("stream");
        await(ch.queueDeclare(QueueSpec.named(s).durable(true).arguments(Map.of("x-queue-type", "stream"))));
        publishNumbered(broker, s, 20, 8);
        BitSet seen = new BitSet();
        CountDownLatch all = new CountDownLatch(20);
        ConsumerHandle c = await(ch.consume(s, new ConsumeOptions().prefetch(10).streamOffset("first"), d -> {
            seen.set(numberOf(d));
            d.ack();
            all.countDown();
        }));
        assertTrue(all.await(30, TimeUnit.SECONDS), "stream deliveries: " + seen);
        await(c.cancel());
        await(ch.queueDelete(s));
    }

    @Test
    void consumerTagsAreDistinct(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        Map<String, Boolean> tags = new ConcurrentHashMap<>();
        for (int i = 0; i < 5; i++) {
            ConsumerHandle c = await(ch.consume(q, d -> {}));
            assertTrue(c.consumerTag().startsWith("amq.ctag-"), c.consumerTag());
            tags.put(c.consumerTag(), true);
        }
        assertEquals(5, tags.size());
        await(ch.queueDelete(q));
    }
}
