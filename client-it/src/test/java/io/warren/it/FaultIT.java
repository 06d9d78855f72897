package io.warren.it;

import static io.warren.it.RecoveryIT.await;
import static io.warren.it.RecoveryIT.through;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionLostException;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerCancelledException;
import io.warren.ConsumerHandle;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RecoveryOptions;
import io.warren.StaleDeliveryException;
import io.warren.codec.content.BasicProperties;
import io.warren.it.RecoveryIT.Events;
import io.warren.it.fault.FaultProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Faults injected under load: a connection cut in the middle of 50,000 confirmed publishes, a black-holed
 * connection, the broker stopping its application under a consumer, a consumer whose queue is deleted.
 */
@ExtendWith(BrokerExtension.class)
class FaultIT {

    /** The message's number, as its 4-byte body. */
    static int number(io.netty.buffer.ByteBuf body) {
        return body.getInt(body.readerIndex());
    }

    static io.netty.buffer.ByteBuf body(int i) {
        return Unpooled.buffer(4).writeInt(i);
    }

    /** Publishes {@code count} messages (bodies 0..count-1) with confirms, whenWritable between, cut at {@code cutAt}. */
    static final class ConfirmedRun {
        final int count;
        final AtomicIntegerArray completions;
        final BitSet confirmed = new BitSet();
        final List<Integer> failed = new ArrayList<>();
        final AtomicInteger retryableFailures = new AtomicInteger();
        final AtomicReference<Throwable> unexpected = new AtomicReference<>();

        ConfirmedRun(int count) {
            this.count = count;
            this.completions = new AtomicIntegerArray(count);
        }

        void publish(Channel ch, String queue, int[] numbers, Runnable atHalf) throws Exception {
            List<CompletableFuture<PublishOutcome>> all = new ArrayList<>(numbers.length);
            for (int k = 0; k < numbers.length; k++) {
                int i = numbers[k];
                if (k == numbers.length / 2 && atHalf != null) {
                    atHalf.run();
                }
                if (!ch.isWritable()) {
                    try {
                        ch.whenWritable().toCompletableFuture().get(60, TimeUnit.SECONDS);
                    } catch (java.util.concurrent.ExecutionException lost) {
                        // The cut can land while we wait: the wait ends with the loss, and the next
                        // publish reports the outcome (held during recovery, or failed retryably).
                    }
                }
                CompletableFuture<PublishOutcome> f = ch.publish("", queue, false, BasicProperties.EMPTY, body(i))
                        .toCompletableFuture();
                // Wait for the recording stage, not for f: a future runs its dependents last-registered first,
                // so allOf(f...) could complete, and the caller read `failed`, before outcome(i) had run.
                all.add(f.whenComplete((o, e) -> outcome(i, o, e)));
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                    .handle((v, e) -> null)
                    .get(120, TimeUnit.SECONDS);
        }

        private void outcome(int i, PublishOutcome o, Throwable e) {
            if (completions.incrementAndGet(i) != 1) {
                unexpected.compareAndSet(null, new AssertionError("publish " + i + " completed twice"));
            }
            synchronized (this) {
                if (e == null) {
                    confirmed.set(i);
                } else {
                    Throwable cause = e instanceof java.util.concurrent.CompletionException ? e.getCause() : e;
                    if (cause instanceof PublishNotConfirmedException pnc
                            && (pnc.getCause() instanceof ConnectionLostException || !pnc.mayHaveReachedBroker())) {
                        retryableFailures.incrementAndGet();
                    } else {
                        unexpected.compareAndSet(null, cause);
                    }
                    failed.add(i);
                }
            }
        }

        synchronized int[] takeFailed() {
            int[] f = failed.stream().mapToInt(Integer::intValue).toArray();
            failed.clear();
            for (int i : f) {
                completions.set(i, 0); // a new publish of the same number
            }
            return f;
        }
    }

    @Test
    void aCutDuringFiftyThousandConfirmedPublishesLosesNothing(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        int count = 50_000;
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "fault-50k")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            String q = names.queue("50k");
            await(ch.queueDeclare(QueueSpec.named(q)));
            names.onCleanup(() -> deleteQueue(broker, q));
            await(ch.confirmSelect());
            ConfirmedRun run = new ConfirmedRun(count);
            int[] all = new int[count];
            for (int i = 0; i < count; i++) {
                all[i] = i;
            }
            run.publish(ch, q, all, proxy::cutAll);
            assertEquals(null, run.unexpected.get(), "only retryable failures");
            for (int i = 0; i < count; i++) {
                assertEquals(1, run.completions.get(i), "publish " + i + " completed exactly once");
            }
            assertTrue(run.retryableFailures.get() > 0 || events.started.get() > 0, "the cut happened mid-run");
            events.awaitRecovery();
            // the application publishes again what failed, until everything is confirmed
            for (int round = 0; round < 5; round++) {
                int[] again = run.takeFailed();
                if (again.length == 0) {
                    break;
                }
                run.publish(ch, q, again, null);
            }
            assertEquals(count, run.confirmed.cardinality(), "every message confirmed in the end");
            BitSet seen = consumeAll(ch, q, count);
            assertEquals(count, seen.cardinality(), "every message is in the queue (duplicates allowed, none missing)");
        }
    }

    /** Consumes until every number 0..count-1 was seen (duplicates allowed) or 60 s passed. */
    static BitSet consumeAll(Channel ch, String q, int count) throws Exception {
        BitSet seen = new BitSet();
        CompletableFuture<Void> done = new CompletableFuture<>();
        ConsumerHandle h = await(ch.consume(q, new ConsumeOptions().noAck(true), d -> {
            synchronized (seen) {
                seen.set(number(d.body()));
                if (seen.cardinality() == count) {
                    done.complete(null);
                }
            }
        }));
        try {
            done.get(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            // reported by the caller's assertion
        }
        await(h.cancel());
        synchronized (seen) {
            return (BitSet) seen.clone();
        }
    }

    static void deleteQueue(Broker broker, String q) throws Exception {
        Connection o = await(BrokerExtension.client()
                .connect(ConnectionOptions.fromUri(broker.uri()).automaticRecovery(false)));
        try {
            await(await(o.openChannel()).queueDelete(q));
        } finally {
            await(o.close());
        }
    }

    @Test
    void aStalledConnectionIsFoundByHeartbeatsAndRecovered(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            ConnectionOptions o = through(proxy, broker, "fault-stall")
                    .requestedHeartbeat(1)
                    .connectionTimeout(Duration.ofSeconds(5));
            Connection c = await(BrokerExtension.client().connect(o));
            try {
                Events events = new Events();
                CompletableFuture<ConnectionLostException> started = new CompletableFuture<>();
                c.addRecoveryListener(new io.warren.RecoveryListener() {
                    @Override
                    public void recoveryStarted(Connection connection, ConnectionLostException cause) {
                        started.complete(cause);
                    }
                });
                c.addRecoveryListener(events);
                Channel ch = await(c.openChannel());
                proxy.stall(true);
                // the wait is bounded so a broken build cannot hang; detection speed belongs to benchmarks.
                // Asserted: recovery started because the heartbeat check found the silence (see FaultProxyIT).
                ConnectionLostException lost = started.get(30, TimeUnit.SECONDS);
                assertTrue(lost.getMessage().contains("missed heartbeats"), "recovery started for: " + lost);
                proxy.stall(false);
                events.awaitRecovery();
                assertTrue(ch.isOpen());
                await(ch.queueDeclare(QueueSpec.serverNamed()));
            } finally {
                await(c.close());
            }
        }
    }

    @Test
    void consumersResumeAfterTheBrokerStopsAndStarts(Broker broker, BrokerExtension.TestNames names) throws Exception {
        int count = 2_000;
        String q = names.queue("durable");
        String name = "fault-stop-app-" + System.nanoTime();
        Connection c = await(BrokerExtension.client()
                .connect(ConnectionOptions.fromUri(broker.uri())
                        .connectionName(name)
                        .recovery(new RecoveryOptions()
                                .backoff(Duration.ofMillis(200), Duration.ofSeconds(2), 2.0, 0.5))));
        names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
        names.onCleanup(() -> deleteQueue(broker, q));
        Events events = new Events();
        c.addRecoveryListener(events);
        Channel ch = await(c.openChannel());
        await(ch.queueDeclare(QueueSpec.named(q).durable(true)));
        await(ch.confirmSelect());
        BasicProperties persistent = BasicProperties.builder().deliveryMode(2).build();
        List<CompletableFuture<PublishOutcome>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sent.add(ch.publish("", q, false, persistent, body(i)).toCompletableFuture());
        }
        CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);

        Channel consumeCh = await(c.openChannel());
        BitSet seen = new BitSet();
        AtomicInteger stale = new AtomicInteger();
        AtomicInteger redelivered = new AtomicInteger();
        CompletableFuture<Void> all = new CompletableFuture<>();
        ConsumerHandle consumer = await(consumeCh.consume(
                q,
                new ConsumeOptions().prefetch(20).executor(java.util.concurrent.Executors.newSingleThreadExecutor()),
                d -> {
                    try {
                        Thread.sleep(1); // a consumer slower than the broker: deliveries are in flight at the stop
                        d.ack();
                    } catch (StaleDeliveryException e) {
                        stale.incrementAndGet(); // delivered before the loss: the broker delivers it again
                        return;
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    if (d.redelivered()) {
                        redelivered.incrementAndGet();
                    }
                    synchronized (seen) {
                        seen.set(number(d.body()));
                        if (seen.cardinality() == count) {
                            all.complete(null);
                        }
                    }
                }));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            synchronized (seen) {
                if (seen.cardinality() >= count / 5) {
                    break;
                }
            }
            Thread.sleep(5);
        }
        try {
            Rabbitmqctl.stopApp();
            Thread.sleep(1_000);
        } finally {
            Rabbitmqctl.startApp();
        }
        events.awaitRecovery();
        all.get(90, TimeUnit.SECONDS);
        assertTrue(consumer.isActive(), "the same consumer goes on");
        synchronized (seen) {
            assertEquals(count, seen.cardinality(), "nothing lost");
        }
        assertTrue(events.started.get() >= 1);
    }

    @Test
    void aConsumerWhoseQueueIsDeletedIsCancelledAndNotRecovered(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "fault-deleted")));
            try {
                Events events = new Events();
                List<String> topologyFailures = new java.util.concurrent.CopyOnWriteArrayList<>();
                c.addRecoveryListener(new io.warren.RecoveryListener() {
                    @Override
                    public void topologyRecoveryFailed(Connection connection, String entity, Throwable cause) {
                        topologyFailures.add(entity);
                    }
                });
                c.addRecoveryListener(events);
                Channel ch = await(c.openChannel());
                String q = "warren-it.fault.deleted." + System.nanoTime();
                await(ch.queueDeclare(QueueSpec.named(q)));
                ConsumerHandle consumer = await(ch.consume(q, d -> {}));
                Channel other = await(c.openChannel());
                await(other.queueDelete(q));
                CompletionStage<?> end = consumer.endFuture();
                assertInstanceOf(ConsumerCancelledException.class, await(end));
                assertFalse(consumer.isActive());
                proxy.cutAll();
                events.awaitRecovery();
                Thread.sleep(500);
                assertTrue(topologyFailures.isEmpty(), "nothing to restore failed: " + topologyFailures);
                assertTrue(ch.isOpen(), "the channel of the cancelled consumer is fine");
                assertFalse(consumer.isActive(), "the cancelled consumer stays cancelled");
                assertEquals(1, events.started.get(), "no recovery loop");
            } finally {
                await(c.close());
            }
        }
    }
}
