package io.warren.it;

import static io.warren.it.ConsumeIT.numberOf;
import static io.warren.it.ConsumeIT.publishNumbered;
import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.QueueSpec;
import io.warren.RecoveryOptions;
import io.warren.flow.DeliveryPublisher;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link DeliveryPublisher} against the broker: demand is what reaches {@code onNext} and the broker holds the
 * backlog, demand outlives a recovery, and each way a consumer ends becomes the Reactive Streams signal the
 * class comment promises. The TCK runs in {@link DeliveryPublisherTckIT}.
 */
@ExtendWith(BrokerExtension.class)
class FlowIT {

    private static final Duration T = Duration.ofSeconds(30);

    /** Records every signal; {@link #deliveries} hold the body's number and the delivery (to settle later). */
    static final class Recorder implements Flow.Subscriber<Delivery> {
        final CompletableFuture<Flow.Subscription> subscription = new CompletableFuture<>();
        final BlockingQueue<Delivery> deliveries = new LinkedBlockingQueue<>();
        final List<Integer> numbers = new CopyOnWriteArrayList<>();
        final CompletableFuture<Throwable> end = new CompletableFuture<>(); // null: onComplete
        final boolean ackEach;

        Recorder(boolean ackEach) {
            this.ackEach = ackEach;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription.complete(s);
        }

        @Override
        public void onNext(Delivery d) {
            numbers.add(numberOf(d)); // the body is borrowed: read it here
            if (ackEach) {
                d.ack();
            }
            deliveries.add(d);
        }

        @Override
        public void onError(Throwable t) {
            end.complete(t);
        }

        @Override
        public void onComplete() {
            end.complete(null);
        }

        Flow.Subscription subscription() throws Exception {
            return subscription.get(30, TimeUnit.SECONDS);
        }

        void awaitCount(int n) throws Exception {
            try {
                Await.awaitTrue(() -> numbers.size() >= n || end.isDone(), T, n + " deliveries");
            } finally {
                assertEquals(n, numbers.size(), "deliveries (end: " + end.getNow(null) + ")");
            }
        }

        Throwable awaitEnd() throws Exception {
            return end.get(30, TimeUnit.SECONDS);
        }
    }

    /** A queue that the broker deletes a minute after its last use. */
    static String declare(Channel ch, String name) throws Exception {
        return await(ch.queueDeclare(QueueSpec.named(name).argument("x-expires", 60_000)))
                .queue();
    }

    @Test
    void requestFiveLeavesTheBacklogInTheBroker(Connection c, Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("credit"));
        publishNumbered(broker, q, 50, 16);
        Recorder r = new Recorder(false);
        DeliveryPublisher.of(ch, q, new ConsumeOptions().prefetch(5)).subscribe(r);

        r.subscription().request(5);
        r.awaitCount(5);
        long[] counts = Rabbitmqctl.queueCounts(q);
        assertTrue(counts[1] <= 5, "unacked " + counts[1]);
        assertEquals(45, counts[0], "ready: the broker holds the rest");

        // settled, the five make room for the next five asked for
        r.subscription().request(5);
        for (int i = 0; i < 5; i++) {
            r.deliveries.take().ack();
        }
        r.awaitCount(10);
        counts = Rabbitmqctl.queueCounts(q);
        assertTrue(counts[1] <= 5, "unacked " + counts[1]);
        assertEquals(40, counts[0], "ready");
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), r.numbers);
        assertNull(r.end.getNow(null));
    }

    @Test
    void nothingBeyondTheDemandReachesOnNext(Connection c, Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("demand"));
        publishNumbered(broker, q, 50, 16);
        Recorder r = new Recorder(true);
        DeliveryPublisher.of(ch, q, new ConsumeOptions().prefetch(20)).subscribe(r);

        r.subscription().request(3);
        r.awaitCount(3);
        // the broker sent the prefetch, 20, and one more for each of the 3 acked: 23 sent, 20 of them waiting for
        // demand in the client
        Await.queueCounts(q, 27, 20, T);
        long[] counts = Rabbitmqctl.queueCounts(q);
        assertEquals(3, r.numbers.size(), "no onNext beyond request(3) though the broker sent " + counts[1]);
        assertTrue(counts[1] <= 20, "unacked " + counts[1] + " within the prefetch");
        assertTrue(counts[0] >= 50 - 3 - 20, "ready " + counts[0] + ": the broker holds the backlog");
        r.subscription().request(47);
        r.awaitCount(50);
    }

    /** Without a prefetch of its own, a subscription gets the channel's basic.qos, as Channel.consume does. */
    @Test
    void withoutAPrefetchTheChannelsBasicQosHolds(Connection c, Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("qos"));
        publishNumbered(broker, q, 20, 16);
        await(ch.basicQos(7));
        Recorder r = new Recorder(false);
        DeliveryPublisher.of(ch, q).subscribe(r);

        r.subscription().request(1);
        r.awaitCount(1);
        // 7 unacknowledged (the one emitted and 6 waiting for demand), 13 left in the broker
        Await.queueCounts(q, 13, 7, T);
        r.subscription().request(19);
        for (int i = 0; i < 20; i++) {
            r.deliveries.take().ack();
        }
        r.awaitCount(20);
        Await.queueCounts(q, 0, 0, T);
    }

    @Test
    void demandOutlivesARecovery(Broker broker, BrokerExtension.TestNames names) throws Exception {
        String name = "flow-recovery-" + System.nanoTime();
        Connection c = Connections.connect(Connections.quick(broker, name), names);
        RecoveryIT.Events events = new RecoveryIT.Events();
        c.addRecoveryListener(events);
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("recovery"));
        publishNumbered(broker, q, 3, 16);
        Recorder r = new Recorder(true);
        DeliveryPublisher.of(ch, q, new ConsumeOptions().prefetch(10)).subscribe(r);
        r.subscription().request(8);
        r.awaitCount(3);

        Rabbitmqctl.closeConnection(name, "closed by FlowIT");
        events.awaitRecovery();

        // the five still asked for are served by the consumer on the new connection, without a new request
        publishNumbered(broker, q, 5, 16);
        r.awaitCount(8);
        assertEquals(List.of(0, 1, 2, 0, 1, 2, 3, 4), r.numbers);
        assertNull(r.end.getNow(null), "no terminal signal across the recovery");
    }

    @Test
    void deliveriesWaitingWhenTheConnectionWasLostAreNotEmittedAndKeepNoDemand(
            Broker broker, BrokerExtension.TestNames names) throws Exception {
        String name = "flow-stale-" + System.nanoTime();
        Connection c = Connections.connect(Connections.quick(broker, name), names);
        RecoveryIT.Events events = new RecoveryIT.Events();
        c.addRecoveryListener(events);
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("stale"));
        publishNumbered(broker, q, 10, 16);
        Recorder r = new Recorder(true); // an ack of a stale delivery would throw, and so cancel the subscription
        DeliveryPublisher.of(ch, q, new ConsumeOptions().prefetch(10)).subscribe(r);
        r.subscription().request(2);
        r.awaitCount(2);
        // the other 8 wait in the client, without demand: nothing ready, the 2 emitted acked
        Await.queueCounts(q, 0, 8, T);
        assertEquals(0, Rabbitmqctl.queueCounts(q)[0], "the other 8 wait in the client, without demand");

        Rabbitmqctl.closeConnection(name, "closed by FlowIT");
        events.awaitRecovery();

        // the 8 that waited belong to the lost channel: the broker requeued them and sends them again; the
        // demand asked for after the loss goes to those copies, none of it to the dropped ones
        r.subscription().request(8);
        r.awaitCount(10);
        assertEquals(
                List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                r.numbers.stream().sorted().toList());
        assertNull(r.end.getNow(null), "no terminal signal");
    }

    @Test
    void cancelCancelsTheConsumer(Connection c, Broker broker, BrokerExtension.TestNames names) throws Exception {
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("cancel"));
        publishNumbered(broker, q, 10, 16);
        Recorder r = new Recorder(false);
        DeliveryPublisher.of(ch, q, new ConsumeOptions().prefetch(10)).subscribe(r);
        r.subscription().request(2);
        r.awaitCount(2);
        assertEquals(1, await(ch.queueDeclare(QueueSpec.passive(q))).consumerCount());

        r.subscription().cancel();
        Await.awaitQuery(() -> consumerCount(ch, q) == 0, T, "basic.cancel");
        assertEquals(0, consumerCount(ch, q), "basic.cancel sent");
        // the two emitted are still the subscriber's to settle; the rest went back to the queue
        r.deliveries.take().ack();
        r.deliveries.take().ack();
        Await.queueCounts(q, 8, 0, T);
        assertEquals(8, await(ch.queueDeclare(QueueSpec.passive(q))).messageCount());
        assertTrue(ch.isOpen());
        assertEquals(2, r.numbers.size());
        assertNull(r.end.getNow(null), "no signal after cancel");
    }

    @Test
    void theBrokerCancellingTheConsumerCompletes(Connection c, BrokerExtension.TestNames names) throws Exception {
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("deleted"));
        Recorder r = new Recorder(true);
        DeliveryPublisher.of(ch, q).subscribe(r);
        r.subscription().request(1);
        awaitConsumer(ch, q);
        Channel other = await(c.openChannel());
        await(other.queueDelete(q));
        assertNull(r.awaitEnd(), "onComplete");
    }

    @Test
    void anOrderlyCloseCompletes(Connection c, BrokerExtension.TestNames names) throws Exception {
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("close"));
        Recorder r = new Recorder(true);
        DeliveryPublisher.of(ch, q).subscribe(r);
        r.subscription().request(1);
        awaitConsumer(ch, q);
        await(ch.close());
        assertNull(r.awaitEnd(), "onComplete");
    }

    @Test
    void aLostConnectionWithoutRecoveryFails(Broker broker, BrokerExtension.TestNames names) throws Exception {
        String name = "flow-lost-" + System.nanoTime();
        Connection c = Connections.connect(
                Connections.quick(broker, name).recovery(new RecoveryOptions().enabled(false)), names);
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("lost"));
        Recorder r = new Recorder(true);
        DeliveryPublisher.of(ch, q).subscribe(r);
        r.subscription().request(1);
        awaitConsumer(ch, q);
        Rabbitmqctl.closeConnection(name, "closed by FlowIT");
        assertInstanceOf(ConnectionClosedException.class, r.awaitEnd());
    }

    @Test
    void aMissingQueueFailsAfterOnSubscribe(Connection c, BrokerExtension.TestNames names) throws Exception {
        Channel ch = await(c.openChannel());
        Recorder r = new Recorder(true);
        DeliveryPublisher.of(ch, names.queue("never-declared")).subscribe(r);
        assertNotNull(r.subscription());
        ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, r.awaitEnd());
        assertEquals(404, e.replyCode());
    }

    @Test
    void signalsAreSerialOnAWorkerPoolAndRequestFromOnNextIsSafe(
            Connection c, Broker broker, BrokerExtension.TestNames names) throws Exception {
        Channel ch = await(c.openChannel());
        String q = declare(ch, names.queue("pool"));
        publishNumbered(broker, q, 250, 16);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        names.onCleanup(pool::shutdownNow);
        AtomicInteger inSignal = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger depth = new AtomicInteger();
        AtomicInteger maxDepth = new AtomicInteger();
        List<Integer> numbers = new CopyOnWriteArrayList<>();
        CompletableFuture<Throwable> end = new CompletableFuture<>();
        DeliveryPublisher publisher = DeliveryPublisher.of(
                        ch, q, new ConsumeOptions().noAck(true).executor(pool))
                .limit(200);
        publisher.subscribe(new Flow.Subscriber<>() {
            private Flow.Subscription s;

            private void enter() {
                if (inSignal.getAndIncrement() != 0) {
                    overlaps.incrementAndGet();
                }
            }

            @Override
            public void onSubscribe(Flow.Subscription s) {
                enter();
                this.s = s;
                s.request(1);
                inSignal.decrementAndGet();
            }

            @Override
            public void onNext(Delivery d) {
                enter();
                maxDepth.accumulateAndGet(depth.incrementAndGet(), Math::max);
                numbers.add(numberOf(d));
                s.request(1); // rule 3.3: must not call onNext again from here
                depth.decrementAndGet();
                inSignal.decrementAndGet();
            }

            @Override
            public void onError(Throwable t) {
                enter();
                end.complete(t);
                inSignal.decrementAndGet();
            }

            @Override
            public void onComplete() {
                enter();
                end.complete(null);
                inSignal.decrementAndGet();
            }
        });
        assertNull(end.get(30, TimeUnit.SECONDS), "onComplete after the limit");
        assertEquals(200, numbers.size());
        for (int i = 0; i < 200; i++) {
            assertEquals(i, numbers.get(i), "in order");
        }
        assertEquals(0, overlaps.get(), "signals overlapped");
        assertEquals(1, maxDepth.get(), "onNext re-entered from request");
    }

    private static void awaitConsumer(Channel ch, String q) throws Exception {
        Await.awaitQuery(() -> consumerCount(ch, q) == 1, T, "the consumer");
        assertEquals(1, consumerCount(ch, q));
    }

    private static long consumerCount(Channel ch, String q) throws Exception {
        return await(ch.queueDeclare(QueueSpec.passive(q))).consumerCount();
    }
}
