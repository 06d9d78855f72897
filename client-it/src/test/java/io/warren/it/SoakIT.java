package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.QueueSpec;
import io.warren.RecoveryListener;
import io.warren.RecoveryOptions;
import io.warren.StaleDeliveryException;
import io.warren.codec.content.BasicProperties;
import io.warren.it.fault.FaultProxy;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.BitSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The soak: publishes and consumes N messages with publisher confirms and manual acks through the real broker
 * while the {@link FaultProxy} cuts every connection every few seconds, and reports published, confirmed,
 * consumed, missing (must be 0), duplicates and peak heap. The application does what the recovery contract asks
 * of it: it publishes again whatever failed with a retryable exception, and acks only deliveries of the current
 * channel (a {@link StaleDeliveryException} means the broker will deliver the message again).
 *
 * <p>CI runs 20,000 messages. The long run (not part of CI), 1,000,000 messages with a cut every 3 s:
 * <pre>
 * ./mvnw -B -o verify -pl client-it -Dit.test=SoakIT -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dwarren.soak.messages=1000000 -Dwarren.soak.cutEverySeconds=3
 * </pre>
 * {@link #main} runs the same with the broker at {@code AMQP_URI} or 127.0.0.1:5672.
 */
@ExtendWith(BrokerExtension.class)
class SoakIT {

    record Report(
            long messages,
            long published,
            long confirmed,
            long consumed,
            long missing,
            long duplicates,
            long staleAcks,
            long cuts,
            long recoveries,
            long peakHeapBytes,
            long millis) {
        @Override
        public String toString() {
            return String.format(
                    "soak: %,d messages in %,d ms: published %,d (with re-publishes), confirmed %,d, consumed"
                            + " %,d, missing %,d, duplicates %,d, stale acks %,d, cuts %,d, recoveries %,d, peak heap %,d MiB",
                    messages,
                    millis,
                    published,
                    confirmed,
                    consumed,
                    missing,
                    duplicates,
                    staleAcks,
                    cuts,
                    recoveries,
                    peakHeapBytes >> 20);
        }
    }

    @Test
    void publishAndConsumeWhileConnectionsAreCut(Broker broker) throws Exception {
        int messages = Integer.getInteger("warren.soak.messages", 20_000);
        int cutEvery = Integer.getInteger("warren.soak.cutEverySeconds", 2);
        int limitSeconds = Integer.getInteger("warren.soak.limitSeconds", Math.max(180, messages / 250));
        Report r = run(
                BrokerExtension.client(),
                broker,
                messages,
                Duration.ofSeconds(cutEvery),
                Duration.ofSeconds(limitSeconds));
        System.out.println(r);
        assertEquals(0, r.missing(), r.toString());
        assertEquals(messages, r.confirmed(), r.toString());
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int cutEvery = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        AmqpClient client = AmqpClient.create();
        try {
            Report r =
                    run(client, BrokerExtension.broker(), messages, Duration.ofSeconds(cutEvery), Duration.ofHours(2));
            System.out.println(r);
            System.exit(r.missing() == 0 ? 0 : 1);
        } finally {
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    static Report run(AmqpClient client, Broker broker, int messages, Duration cutEvery, Duration limit)
            throws Exception {
        String queue = "warren-soak." + System.nanoTime();
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        AtomicLong peakHeap = new AtomicLong();
        AtomicLong published = new AtomicLong();
        AtomicLong consumed = new AtomicLong();
        AtomicLong duplicates = new AtomicLong();
        AtomicLong staleAcks = new AtomicLong();
        AtomicLong recoveries = new AtomicLong();
        BitSet confirmed = new BitSet(messages);
        BitSet seen = new BitSet(messages);
        ConcurrentLinkedQueue<Integer> retries = new ConcurrentLinkedQueue<>();
        long start = System.nanoTime();
        ScheduledExecutorService timers = Executors.newScheduledThreadPool(1);
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            RecoveryOptions recovery =
                    new RecoveryOptions().backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 2.0, 0.5);
            ConnectionOptions options = ConnectionOptions.fromUri(broker.uri())
                    .address(proxy.host(), proxy.port())
                    .recovery(recovery)
                    .requestedHeartbeat(5);
            RecoveryListener counting = new RecoveryListener() {
                @Override
                public void recoverySucceeded(Connection c) {
                    recoveries.incrementAndGet();
                }
            };
            Connection pubConn = client.connect(new ConnectionOptions(options).connectionName("soak-publisher"))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            Connection conConn = client.connect(new ConnectionOptions(options).connectionName("soak-consumer"))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            pubConn.addRecoveryListener(counting);
            conConn.addRecoveryListener(counting);
            try {
                Channel pub = pubConn.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
                pub.queueDeclare(QueueSpec.named(queue)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                pub.confirmSelect().toCompletableFuture().get(30, TimeUnit.SECONDS);
                Channel con = conConn.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
                con.consume(queue, new ConsumeOptions().prefetch(500), d -> {
                            consumed.incrementAndGet();
                            int n = d.body().getInt(d.body().readerIndex());
                            synchronized (seen) {
                                if (seen.get(n)) {
                                    duplicates.incrementAndGet();
                                }
                                seen.set(n);
                            }
                            try {
                                d.ack();
                            } catch (StaleDeliveryException e) {
                                staleAcks.incrementAndGet();
                            }
                        })
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);

                timers.scheduleAtFixedRate(
                        proxy::cutAll, cutEvery.toMillis(), cutEvery.toMillis(), TimeUnit.MILLISECONDS);
                timers.scheduleAtFixedRate(
                        () -> peakHeap.accumulateAndGet(
                                memory.getHeapMemoryUsage().getUsed(), Math::max),
                        0,
                        100,
                        TimeUnit.MILLISECONDS);

                long deadline = start + limit.toNanos();
                // a bound on publishes in flight keeps the retries of one cut from piling up behind the next one
                Semaphore inFlight = new Semaphore(20_000);
                int next = 0;
                while (System.nanoTime() < deadline) {
                    Integer retry = retries.poll();
                    int n;
                    if (retry != null) {
                        n = retry;
                    } else if (next < messages) {
                        n = next++;
                    } else {
                        synchronized (confirmed) {
                            if (confirmed.cardinality() == messages) {
                                break;
                            }
                        }
                        Thread.sleep(5);
                        continue;
                    }
                    if (!pub.isWritable()) {
                        try {
                            pub.whenWritable().toCompletableFuture().get(30, TimeUnit.SECONDS);
                        } catch (Exception e) {
                            // recovery in progress or slow: the publish below is held or fails retryably
                        }
                    }
                    if (!inFlight.tryAcquire(30, TimeUnit.SECONDS)) {
                        retries.add(n);
                        continue;
                    }
                    published.incrementAndGet();
                    pub.publish(
                                    "",
                                    queue,
                                    false,
                                    BasicProperties.EMPTY,
                                    Unpooled.buffer(4).writeInt(n))
                            .whenComplete((o, e) -> {
                                inFlight.release();
                                if (e == null) {
                                    synchronized (confirmed) {
                                        confirmed.set(n);
                                    }
                                } else {
                                    retries.add(n); // retryable by contract: publish it again
                                }
                            });
                }
                // everything confirmed is in the queue: wait for the consumer to see it all
                while (System.nanoTime() < deadline) {
                    synchronized (seen) {
                        if (seen.cardinality() == messages) {
                            break;
                        }
                    }
                    Thread.sleep(10);
                }
            } finally {
                timers.shutdownNow();
                proxy.heal();
                try {
                    Channel cleanup =
                            conConn.openChannel().toCompletableFuture().get(60, TimeUnit.SECONDS);
                    cleanup.queueDelete(queue).toCompletableFuture().get(60, TimeUnit.SECONDS);
                } catch (Exception e) {
                    System.err.println("soak: could not delete " + queue + ": " + e);
                }
                pubConn.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
                conConn.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
            long missing;
            long confirmedCount;
            synchronized (seen) {
                missing = messages - seen.cardinality();
            }
            synchronized (confirmed) {
                confirmedCount = confirmed.cardinality();
            }
            return new Report(
                    messages,
                    published.get(),
                    confirmedCount,
                    consumed.get(),
                    missing,
                    duplicates.get(),
                    staleAcks.get(),
                    proxy.cuts(),
                    recoveries.get(),
                    peakHeap.get(),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
        } finally {
            timers.shutdownNow();
        }
    }
}
