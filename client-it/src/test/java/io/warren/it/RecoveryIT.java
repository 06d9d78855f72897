package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionLostException;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.ExchangeSpec;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RecoveryListener;
import io.warren.RecoveryOptions;
import io.warren.StaleDeliveryException;
import io.warren.it.fault.FaultProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Automatic recovery against the real broker, the connection cut by the {@link FaultProxy} or closed by
 * {@code rabbitmqctl}: channels, modes, topology (a server-named queue gets a new name and its binding and
 * consumer follow) and consumers come back on the same objects; in-doubt publishes fail retryably; acks of
 * deliveries from before the loss fail locally; bounds are kept.
 */
@ExtendWith(BrokerExtension.class)
class RecoveryIT {

    static final Duration T = Duration.ofSeconds(30);

    static <T> T await(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(T.toSeconds(), TimeUnit.SECONDS);
    }

    /** Options through the proxy with a quick backoff (tests should not wait seconds for the first attempt). */
    static ConnectionOptions through(FaultProxy proxy, Broker broker, String name) {
        return Connections.quick(broker, name).address(proxy.host(), proxy.port());
    }

    /** With {@link RecoveryOptions#awaitExclusiveRelease} on. */
    static ConnectionOptions awaitingExclusives(ConnectionOptions options) {
        return options.recovery(new RecoveryOptions(options.recovery()).awaitExclusiveRelease(true));
    }

    /** Counts recovery events; {@link #succeeded} is awaited by the tests. */
    static final class Events implements RecoveryListener {
        final BlockingQueue<Object> succeeded = new LinkedBlockingQueue<>();
        final AtomicInteger started = new AtomicInteger();
        final List<Throwable> failed = new CopyOnWriteArrayList<>();
        final List<Boolean> willRetry = new CopyOnWriteArrayList<>();

        @Override
        public void recoveryStarted(Connection c, ConnectionLostException cause) {
            started.incrementAndGet();
        }

        @Override
        public void recoverySucceeded(Connection c) {
            succeeded.add(c);
        }

        @Override
        public void recoveryFailed(Connection c, Throwable cause, boolean retry) {
            failed.add(cause);
            willRetry.add(retry);
        }

        void awaitRecovery() throws InterruptedException {
            assertTrue(succeeded.poll(T.toSeconds(), TimeUnit.SECONDS) != null, "recovered within " + T);
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aCutConnectionComesBackWithItsChannelsTopologyAndConsumers(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-cut")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            String x = names.exchange("x");
            await(ch.exchangeDeclare(ExchangeSpec.of(x, "direct")));
            String q = await(ch.queueDeclare(QueueSpec.serverNamed())).queue();
            await(ch.queueBind(q, x, "k"));
            await(ch.confirmSelect());
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            ConsumerHandle consumer = await(ch.consume(
                    q, new ConsumeOptions().noAck(true), d -> got.add(d.body().toString(StandardCharsets.UTF_8))));
            String tag = consumer.consumerTag();
            assertEquals(PublishOutcome.CONFIRMED, await(ch.publish(x, "k", false, null, bytes("before"))));
            assertEquals("before", got.poll(30, TimeUnit.SECONDS));

            assertEquals(1, proxy.cutAll());
            events.awaitRecovery();

            assertTrue(c.isOpen());
            assertFalse(c.isRecovering());
            assertTrue(ch.isOpen(), "the same channel object is open again");
            assertFalse(ch.closeFuture().toCompletableFuture().isDone());
            assertTrue(consumer.isActive());
            assertEquals(tag, consumer.consumerTag(), "same tag");
            assertNotEquals(q, consumer.queue(), "the server-named queue has a new name, and the consumer follows");
            // the exchange, the new queue's binding, confirm mode and the consumer all work again
            assertEquals(PublishOutcome.CONFIRMED, await(ch.publish(x, "k", false, null, bytes("after"))));
            assertEquals("after", got.poll(30, TimeUnit.SECONDS));
            assertEquals(1, events.started.get());
        }
    }

    @Test
    void aBrokerSideCloseIsRecovered(Broker broker, BrokerExtension.TestNames names) throws Exception {
        String name = "recovery-320-" + System.nanoTime();
        Connection c = Connections.connect(Connections.quick(broker, name), names);
        Events events = new Events();
        c.addRecoveryListener(events);
        Channel ch = await(c.openChannel());
        String q = names.queue("durable-ish");
        await(ch.queueDeclare(QueueSpec.named(q)));
        deleteOnCleanup(names, broker, q);
        Rabbitmqctl.closeConnection(name, "closed by RecoveryIT");
        events.awaitRecovery();
        assertEquals(0L, await(ch.queuePurge(q)), "the channel works again");
        assertFalse(c.closeFuture().toCompletableFuture().isDone());
    }

    @Test
    void unconfirmedPublishesFailRetryablyAndStaleAcksFailLocally(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-stale")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            String q = await(ch.queueDeclare(QueueSpec.serverNamed())).queue();
            BlockingQueue<Delivery> got = new LinkedBlockingQueue<>();
            ConsumerHandle consumer = await(ch.consume(q, new ConsumeOptions().prefetch(10), d -> got.add(d.retain())));
            await(ch.publish("", q, false, null, bytes("m1")));
            Delivery first = got.poll(30, TimeUnit.SECONDS);
            assertFalse(first.redelivered());

            await(ch.confirmSelect());
            proxy.stall(true); // the publish is written, its confirm cannot come back
            CompletionStage<PublishOutcome> inDoubt =
                    ch.publish("", "nowhere-" + System.nanoTime(), false, null, bytes("in doubt"));
            Thread.sleep(200);
            proxy.cutAll();
            proxy.stall(false);
            ExecutionException e = assertThrows(
                    ExecutionException.class,
                    () -> inDoubt.toCompletableFuture().get(30, TimeUnit.SECONDS));
            PublishNotConfirmedException pnc = assertInstanceOf(PublishNotConfirmedException.class, e.getCause());
            assertInstanceOf(ConnectionLostException.class, pnc.getCause(), "retryable: the connection is lost");

            events.awaitRecovery();
            StaleDeliveryException stale = assertThrows(StaleDeliveryException.class, first::ack);
            assertEquals(first.deliveryTag(), stale.deliveryTag());
            first.release();
            // the consumer goes on: a message published now reaches it (its queue is the recovered one)
            String now = consumer.queue();
            assertEquals(PublishOutcome.CONFIRMED, await(ch.publish("", now, false, null, bytes("m2"))));
            Delivery second = got.poll(30, TimeUnit.SECONDS);
            assertEquals("m2", second.body().toString(StandardCharsets.UTF_8));
            second.ack();
            second.release();
        }
    }

    @Test
    void rawAcksOfTagsFromBeforeACutFailLocallyAndTheRedeliveriesTagsContinueAboveThem(
            Broker broker, BrokerExtension.TestNames names) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-tags")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            // a named queue outlives the connection, so its unacknowledged messages are redelivered after the cut
            String q = names.queue("tags");
            await(ch.queueDeclare(QueueSpec.named(q)));
            deleteOnCleanup(names, broker, q);
            BlockingQueue<Delivery> got = new LinkedBlockingQueue<>();
            await(ch.consume(q, new ConsumeOptions().prefetch(10), d -> got.add(d.retain())));
            for (int i = 1; i <= 3; i++) {
                await(ch.publish("", q, false, null, bytes("m" + i)));
            }
            long highestBefore = 0;
            for (int i = 1; i <= 3; i++) {
                Delivery d = got.poll(30, TimeUnit.SECONDS);
                assertFalse(d.redelivered());
                highestBefore = Math.max(highestBefore, d.deliveryTag());
                d.release(); // unacknowledged: the broker requeues it with the lost channel
            }
            assertEquals(3, highestBefore);

            proxy.cutAll();
            events.awaitRecovery();
            long before = highestBefore;
            // on the new channel the broker's tags 1..3 are the redeliveries: acking them by the old tags would
            // acknowledge messages the application has not seen again yet
            assertEquals(
                    before,
                    assertThrows(StaleDeliveryException.class, () -> ch.basicAck(before, true))
                            .deliveryTag());
            assertThrows(StaleDeliveryException.class, () -> ch.basicReject(1, true));

            long highestAfter = 0;
            List<String> bodies = new java.util.ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                Delivery d = got.poll(30, TimeUnit.SECONDS);
                assertTrue(d.redelivered());
                assertTrue(d.deliveryTag() > before, () -> "tag " + d.deliveryTag() + " above " + before);
                highestAfter = Math.max(highestAfter, d.deliveryTag());
                bodies.add(d.body().toString(StandardCharsets.UTF_8));
                d.release();
            }
            assertEquals(List.of("m1", "m2", "m3"), bodies);
            assertEquals(6, highestAfter);
            ch.basicAck(highestAfter, true); // the broker's tag 3, multiple: the three redeliveries
            // the close goes after the ack and would requeue anything still unacknowledged; a tag unknown to the
            // new channel would have closed it with 406 instead
            await(ch.close());
            Channel check = await(c.openChannel());
            assertEquals(0, await(check.queueDeclare(QueueSpec.passive(q))).messageCount(), "all acknowledged");
        }
    }

    @Test
    void publishesDuringRecoveryWaitOrFailFast(Broker broker, BrokerExtension.TestNames names) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-wait")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            String q = names.queue("held");
            await(ch.queueDeclare(QueueSpec.named(q)));
            deleteOnCleanup(names, broker, q);
            await(ch.confirmSelect());
            proxy.refuseNew(true);
            proxy.cutAll();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!c.isRecovering() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertTrue(c.isRecovering());
            assertFalse(ch.isWritable());
            CompletionStage<PublishOutcome> held = ch.publish("", q, false, null, bytes("held"));
            Thread.sleep(300);
            assertFalse(held.toCompletableFuture().isDone(), "waits while the broker is unreachable");
            proxy.refuseNew(false);
            events.awaitRecovery();
            assertEquals(PublishOutcome.CONFIRMED, await(held), "sent once the channel was back");
            assertEquals(1L, await(ch.queuePurge(q)));
        }
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            ConnectionOptions o = through(proxy, broker, "recovery-fail-fast");
            o.recovery(o.recovery().publishDuringRecovery(RecoveryOptions.PublishDuringRecovery.FAIL_FAST));
            Connection c = await(BrokerExtension.client().connect(o));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Channel ch = await(c.openChannel());
            proxy.refuseNew(true);
            proxy.cutAll();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!c.isRecovering() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            ExecutionException e = assertThrows(
                    ExecutionException.class,
                    () -> ch.publish("", "q", false, null, bytes("x"))
                            .toCompletableFuture()
                            .get(5, TimeUnit.SECONDS));
            PublishNotConfirmedException pnc = assertInstanceOf(PublishNotConfirmedException.class, e.getCause());
            assertFalse(pnc.mayHaveReachedBroker());
            proxy.refuseNew(false);
        }
    }

    /**
     * A paused consumer over its high-water mark (manual acks, {@code prefetch(0)}: nothing but the pause bounds
     * what the broker sends) holds the connection's reading paused; after a cut the recovered connection must not
     * read for it either. The broker redelivers all 20,000 x 1 KiB (requeued at the cut) and the proxy buffers
     * whatever the client does not read, so without the pause the consumer's queue takes all of them within a
     * second. What it held from before the cut never reaches the handler: the broker redelivers it.
     */
    @Test
    void aConsumerPausedAtTheLossKeepsTheRecoveredConnectionFromReading(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        int messages = 20_000;
        String q = names.queue("paused");
        Connection admin = await(BrokerExtension.client()
                .connect(ConnectionOptions.fromUri(broker.uri()).automaticRecovery(false)));
        names.onCleanup(() -> admin.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
        Channel adminCh = await(admin.openChannel());
        await(adminCh.queueDeclare(QueueSpec.named(q)));
        names.onCleanup(() -> adminCh.queueDelete(q).toCompletableFuture().get(30, TimeUnit.SECONDS));
        ConsumeIT.publishNumbered(broker, q, messages, 1024);
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            // a connection that does not read cannot see the cut until a write fails: a 2 s heartbeat writes soon
            Connection c = await(BrokerExtension.client()
                    .connect(through(proxy, broker, "recovery-paused").requestedHeartbeat(2)));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            AtomicInteger acked = new AtomicInteger();
            AtomicInteger stale = new AtomicInteger();
            ConsumerHandle consumer = await(ch.consume(
                    q, new ConsumeOptions().prefetch(0).waterMarks(10, 50).initialDemand(0), d -> {
                        try {
                            d.ack();
                            acked.incrementAndGet();
                        } catch (StaleDeliveryException e) {
                            stale.incrementAndGet(); // came before the cut: should have been dropped
                        }
                    }));
            Await.awaitTrue(() -> consumer.queued() >= 50, T, "the consumer reached its high-water mark");
            long beforeCut = consumer.queued();
            proxy.cutAll();
            events.awaitRecovery();
            // the broker sends every message out (the proxy takes whatever the client leaves)...
            Await.awaitTrue(
                    () -> {
                        try {
                            return ConsumeIT.messageCount(adminCh, q) == 0;
                        } catch (Exception e) {
                            throw new AssertionError(e);
                        }
                    },
                    T,
                    "the broker has sent every message to the recovered consumer");
            Thread.sleep(1_000); // ...and a connection that reads takes 20 MB from a loopback proxy in far less
            long queued = consumer.queued();
            assertTrue(
                    queued < 5_000,
                    "the consumer holds " + queued + " deliveries (" + beforeCut + " before the"
                            + " cut): the recovered connection read for it regardless of its pause");

            consumer.resume();
            Await.awaitTrue(
                    () -> acked.get() == messages,
                    T,
                    "every message acknowledged once through the recovered connection");
            assertEquals(0, stale.get(), "the " + beforeCut + " held before the cut were dropped, not handed over");
        }
    }

    /**
     * A consumer the application cancels while its connection is down (the broker already dropped it with the
     * connection) stays cancelled: recovery does not start it again, and the cancel completes rather than fail on the
     * lost channel. The channel's other consumer comes back.
     */
    @Test
    void aConsumerCancelledWhileTheConnectionIsDownIsNotRecovered(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-cancelled")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            String cancelledQueue = names.queue("cancelled");
            String keptQueue = names.queue("kept");
            await(ch.queueDeclare(QueueSpec.named(cancelledQueue)));
            await(ch.queueDeclare(QueueSpec.named(keptQueue)));
            deleteOnCleanup(names, broker, cancelledQueue);
            deleteOnCleanup(names, broker, keptQueue);
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            ConsumerHandle cancelled = await(ch.consume(cancelledQueue, new ConsumeOptions(), d -> {
                got.add("cancelled: " + d.body().toString(StandardCharsets.UTF_8));
                d.ack();
            }));
            ConsumerHandle kept = await(ch.consume(keptQueue, new ConsumeOptions(), d -> {
                got.add("kept: " + d.body().toString(StandardCharsets.UTF_8));
                d.ack();
            }));

            proxy.refuseNew(true);
            proxy.cutAll();
            Await.awaitTrue(c::isRecovering, T, "the connection is recovering");
            CompletionStage<Void> cancel = cancelled.cancel();
            proxy.refuseNew(false);
            events.awaitRecovery();

            await(cancel); // completes: the consumer is gone, whether or not the broker heard a basic.cancel
            assertFalse(cancelled.isActive());
            assertTrue(kept.isActive());
            assertEquals(
                    0,
                    await(ch.queueDeclare(QueueSpec.passive(cancelledQueue))).consumerCount(),
                    "the cancelled consumer was not started again on the recovered channel");
            assertEquals(1, await(ch.queueDeclare(QueueSpec.passive(keptQueue))).consumerCount());
            await(ch.publish("", cancelledQueue, false, null, bytes("stays")));
            await(ch.publish("", keptQueue, false, null, bytes("after")));
            assertEquals("kept: after", got.poll(30, TimeUnit.SECONDS));
            Await.awaitTrue(
                    () -> {
                        try {
                            return ConsumeIT.messageCount(ch, cancelledQueue) == 1;
                        } catch (Exception e) {
                            throw new AssertionError(e);
                        }
                    },
                    T,
                    "the message published to the cancelled consumer's queue stays there");
            assertTrue(got.isEmpty(), "nothing reached the cancelled consumer: " + got);
        }
    }

    /**
     * A partition only the client noticed: the broker keeps the old connection, and the named exclusive queue it
     * owns, until its heartbeat check gives up on it, refusing the new connection's declaration with 405 meanwhile.
     * With awaitExclusiveRelease on, recovery tries again until the broker lets the queue go, then the queue and its
     * consumer are back.
     */
    @Test
    void aNamedExclusiveQueueStillHeldByTheOldConnectionComesBackWithItsConsumer(
            Broker broker, BrokerExtension.TestNames names) throws Exception {
        consumesAgainAfterAPartition(
                broker,
                names,
                "recovery-exclusive",
                QueueSpec.named(names.queue("exclusive")).exclusive(true),
                new ConsumeOptions().noAck(true));
    }

    /**
     * The same partition, with an exclusive consumer on a shared queue: the broker keeps the lost connection's
     * consumer until its heartbeat check gives up, and refuses an exclusive basic.consume with 403 meanwhile, which
     * closes the channel. With awaitExclusiveRelease on, recovery waits for the queue to have no consumer, then the
     * consumer and its channel are back.
     */
    @Test
    void anExclusiveConsumerStillAttachedForTheOldConnectionComesBackOnItsChannel(
            Broker broker, BrokerExtension.TestNames names) throws Exception {
        consumesAgainAfterAPartition(
                broker,
                names,
                "recovery-exclusive-consumer",
                QueueSpec.named(names.queue("exclusive-consumer")),
                new ConsumeOptions().noAck(true).exclusive(true));
    }

    /**
     * Declares {@code spec} and consumes from it with {@code options} through a proxy, on a connection that waits
     * for its exclusives (1 s heartbeats); partitions it; then checks that recovery reported nothing, the channel
     * and the consumer are back, and what is published to the queue reaches the consumer.
     */
    private static void consumesAgainAfterAPartition(
            Broker broker, BrokerExtension.TestNames names, String name, QueueSpec spec, ConsumeOptions options)
            throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client()
                    .connect(awaitingExclusives(through(proxy, broker, name).requestedHeartbeat(1))));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            List<String> failures = new CopyOnWriteArrayList<>();
            c.addRecoveryListener(events);
            c.addRecoveryListener(new RecoveryListener() {
                @Override
                public void topologyRecoveryFailed(Connection connection, String entity, Throwable cause) {
                    failures.add(entity + ": " + cause);
                }
            });
            Channel ch = await(c.openChannel());
            String q = await(ch.queueDeclare(spec)).queue();
            if (!spec.exclusive()) {
                deleteOnCleanup(names, broker, q);
            }
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            ConsumerHandle consumer =
                    await(ch.consume(q, options, d -> got.add(d.body().toString(StandardCharsets.UTF_8))));

            assertEquals(1, proxy.partition());
            events.awaitRecovery();

            assertTrue(failures.isEmpty(), "nothing was reported: " + failures);
            assertTrue(ch.isOpen(), "the channel was not closed by a refused basic.consume");
            assertTrue(consumer.isActive());
            await(ch.publish("", q, false, null, bytes("after")));
            assertEquals("after", got.poll(30, TimeUnit.SECONDS));
        }
    }

    /**
     * Without awaitExclusiveRelease (the default): right after the loss another connection takes the queue of the
     * channel's exclusive consumer exclusively, and the broker refuses that consumer's basic.consume with 403
     * ACCESS_REFUSED, which closes the channel. The refused consumer ends with the refusal; the channel is re-opened
     * without it, with its qos and confirm mode, its other consumer, and the publish made while it recovered.
     */
    @Test
    void anExclusiveConsumerRefusedWhileRecoveringEndsAndItsChannelComesBackWithoutIt(
            Broker broker, BrokerExtension.TestNames names) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            ConnectionOptions o = through(proxy, broker, "recovery-exclusive-refused");
            // a second for the other connection to take the queue before the first attempt
            o.recovery(o.recovery().backoff(Duration.ofSeconds(1), Duration.ofSeconds(1), 1.0, 0.0));
            Connection c = await(BrokerExtension.client().connect(o));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            String held = names.queue("held");
            String other = names.queue("other");
            await(ch.queueDeclare(QueueSpec.named(held)));
            await(ch.queueDeclare(QueueSpec.named(other)));
            deleteOnCleanup(names, broker, held);
            deleteOnCleanup(names, broker, other);
            await(ch.basicQos(0, 10, false));
            await(ch.confirmSelect());
            ConsumerHandle refused =
                    await(ch.consume(held, new ConsumeOptions().noAck(true).exclusive(true), d -> {}));
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            ConsumerHandle kept = await(ch.consume(
                    other,
                    new ConsumeOptions().noAck(true),
                    d -> got.add(d.body().toString(StandardCharsets.UTF_8))));

            assertEquals(1, proxy.cutAll());
            Connection taker = await(BrokerExtension.client()
                    .connect(ConnectionOptions.fromUri(broker.uri()).automaticRecovery(false)));
            names.onCleanup(() -> taker.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            takeExclusively(taker, held);
            CompletionStage<PublishOutcome> meanwhile = ch.publish("", other, false, null, bytes("meanwhile"));
            events.awaitRecovery();

            assertFalse(ch.closeFuture().toCompletableFuture().isDone(), "the channel was not closed for good");
            assertTrue(ch.isOpen(), "the channel is open again");
            AmqpException why = await(refused.endFuture());
            assertEquals(403, why.replyCode(), why.toString());
            assertTrue(kept.isActive(), "the channel's other consumer is back");
            assertEquals(PublishOutcome.CONFIRMED, await(meanwhile));
            assertEquals("meanwhile", got.poll(30, TimeUnit.SECONDS));
            assertEquals(PublishOutcome.CONFIRMED, await(ch.publish("", other, false, null, bytes("after"))));
            assertEquals("after", got.poll(30, TimeUnit.SECONDS));
        }
    }

    /**
     * Consumes from {@code queue} exclusively on {@code c}, trying again until the broker has dropped the consumer of
     * the connection that was cut (403 until then).
     */
    private static void takeExclusively(Connection c, String queue) throws Exception {
        long deadline = System.nanoTime() + T.toNanos();
        while (true) {
            Channel ch = await(c.openChannel());
            try {
                await(ch.consume(queue, new ConsumeOptions().noAck(true).exclusive(true), d -> {}));
                return;
            } catch (ExecutionException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(10);
            }
        }
    }

    /**
     * A declare and a consume made while the broker cannot be reached wait for the recovery, and are sent once the
     * channel is back: the queue is there and the consumer gets what is published to it. Before, both failed at
     * once with the channel closed.
     */
    @Test
    void aQueueDeclaredAndConsumedWhileRecoveringIsThereOnceRecovered(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-held-calls")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            String q = names.queue("held-calls");
            deleteOnCleanup(names, broker, q);

            proxy.refuseNew(true);
            assertEquals(1, proxy.cutAll());
            Await.awaitTrue(c::isRecovering, T, "the connection is recovering");
            CompletionStage<io.warren.DeclaredQueue> declared = ch.queueDeclare(QueueSpec.named(q));
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            CompletionStage<ConsumerHandle> consumed = ch.consume(
                    q, new ConsumeOptions().noAck(true), d -> got.add(d.body().toString(StandardCharsets.UTF_8)));
            proxy.refuseNew(false);
            events.awaitRecovery();

            assertEquals(q, await(declared).queue());
            assertTrue(await(consumed).isActive());
            await(ch.publish("", q, false, null, bytes("after")));
            assertEquals("after", got.poll(30, TimeUnit.SECONDS));
        }
    }

    /**
     * A queue declared while the connection is down, and a publish to it made right after the declare's call, from the
     * same thread: once recovered, the declare reaches the broker first and the queue has the message. Before, the
     * held publishes went before the held declare, and this one was routed nowhere.
     */
    @Test
    void aPublishMadeAfterADeclareWhileRecoveringReachesTheDeclaredQueue(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-held-order")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            await(ch.confirmSelect());
            String q = names.queue("held-order");
            deleteOnCleanup(names, broker, q);

            proxy.refuseNew(true);
            assertEquals(1, proxy.cutAll());
            Await.awaitTrue(c::isRecovering, T, "the connection is recovering");
            CompletionStage<io.warren.DeclaredQueue> declared = ch.queueDeclare(QueueSpec.named(q));
            CompletionStage<PublishOutcome> published = ch.publish("", q, true, null, bytes("held"));
            proxy.refuseNew(false);
            events.awaitRecovery();

            assertEquals(q, await(declared).queue());
            assertEquals(PublishOutcome.CONFIRMED, await(published), "routed to the queue, not returned");
            assertEquals(1L, await(ch.queuePurge(q)));
        }
    }

    @Test
    void deletedEntitiesAreForgottenAndNotDeclaredAgain(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-forget")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            List<String> failures = new CopyOnWriteArrayList<>();
            c.addRecoveryListener(events);
            c.addRecoveryListener(new RecoveryListener() {
                @Override
                public void topologyRecoveryFailed(Connection connection, String entity, Throwable cause) {
                    failures.add(entity + ": " + cause);
                }
            });
            Channel ch = await(c.openChannel());
            String deleted = names.queue("deleted");
            String autoDelete = names.queue("auto-delete");
            String x = names.exchange("deleted");
            await(ch.exchangeDeclare(x, "fanout"));
            await(ch.queueDeclare(QueueSpec.named(deleted)));
            await(ch.queueBind(deleted, x, ""));
            await(ch.queueDelete(deleted));
            await(ch.exchangeDelete(x));
            await(ch.queueDeclare(QueueSpec.named(autoDelete).autoDelete(true)));
            ConsumerHandle consumer = await(ch.consume(autoDelete, d -> {}));
            await(consumer.cancel()); // the broker deletes the auto-delete queue with its last consumer
            proxy.cutAll();
            events.awaitRecovery();
            assertTrue(failures.isEmpty(), "nothing deleted was declared again: " + failures);
            Connection other = await(BrokerExtension.client()
                    .connect(ConnectionOptions.fromUri(broker.uri()).automaticRecovery(false)));
            try {
                for (String q : List.of(deleted, autoDelete)) {
                    Channel probe = await(other.openChannel());
                    assertInstanceOf(
                            io.warren.ChannelClosedException.class,
                            TopologyIT.failure(probe.queueDeclare(QueueSpec.passive(q))),
                            q + " does not exist");
                }
            } finally {
                await(other.close());
            }
        }
    }

    @Test
    void recoveryGivesUpAfterMaxAttemptsAndSaysWhy(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            ConnectionOptions o = through(proxy, broker, "recovery-give-up");
            o.recovery(o.recovery().maxAttempts(3));
            Connection c = await(BrokerExtension.client().connect(o));
            Events events = new Events();
            c.addRecoveryListener(events);
            Channel ch = await(c.openChannel());
            proxy.refuseNew(true);
            proxy.cutAll();
            ConnectionClosedException why = await(c.closeFuture());
            assertTrue(why.getMessage().contains("3 attempts"), why.getMessage());
            assertEquals(List.of(true, true, false), events.willRetry, "two failures retried, then gave up");
            assertFalse(c.isOpen());
            assertFalse(c.isRecovering());
            assertTrue(ch.closeFuture().toCompletableFuture().isDone(), "its channels are closed too");
        }
    }

    @Test
    void anAuthenticationFailureDuringRecoveryGivesUpAtOnce(Broker broker) throws Exception {
        String user = "warren-it-recovery-" + System.nanoTime();
        Rabbitmqctl.run("add_user", user, "first-password");
        try {
            Rabbitmqctl.run("set_permissions", "-p", broker.virtualHost(), user, ".*", ".*", ".*");
            try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
                Connection c = await(BrokerExtension.client()
                        .connect(through(proxy, broker, "recovery-auth")
                                .username(user)
                                .password("first-password")));
                Events events = new Events();
                c.addRecoveryListener(events);
                Rabbitmqctl.run("change_password", user, "second-password");
                proxy.cutAll();
                ConnectionClosedException why = await(c.closeFuture());
                assertInstanceOf(io.warren.AuthenticationException.class, why, why.toString());
                assertEquals(List.of(false), events.willRetry, "one refused attempt, not retried");
                assertFalse(c.isRecovering());
            }
        } finally {
            Rabbitmqctl.run("delete_user", user);
        }
    }

    @Test
    void applicationCloseDuringRecoveryIsFinal(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "recovery-app-close")));
            Channel ch = await(c.openChannel());
            proxy.refuseNew(true);
            proxy.cutAll();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!c.isRecovering() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            await(c.close());
            assertFalse(c.isRecovering());
            assertEquals(200, await(c.closeFuture()).replyCode());
            assertTrue(ch.closeFuture().toCompletableFuture().isDone());
            long accepted = proxy.accepted();
            Thread.sleep(1_500);
            assertEquals(accepted, proxy.accepted(), "no attempt after the application's close");
        }
    }

    /** Deletes queue {@code q} after the test, on a connection of its own (the test's may be cut or closed). */
    private static void deleteOnCleanup(BrokerExtension.TestNames names, Broker broker, String q) {
        names.onCleanup(() -> BrokerExtension.client()
                .connect(broker.uri())
                .thenCompose(
                        o -> o.openChannel().thenCompose(x -> x.queueDelete(q)).thenCompose(n -> o.close()))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS));
    }
}
