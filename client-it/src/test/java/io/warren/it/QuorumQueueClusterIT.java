package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionLostException;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.PublishNackedException;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RecoveryListener;
import io.warren.RecoveryOptions;
import io.warren.StaleDeliveryException;
import io.warren.codec.content.BasicProperties;
import io.warren.it.RabbitCluster.Node;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Quorum queues replicated on all three nodes while a node is stopped ({@code stop_app}) and started again:
 * publishers lose no confirmed message and every publish ends confirmed or failed explicitly (those accepted but
 * not yet written when the connection dropped are held and written after recovery, not failed); a manual-ack
 * consumer moves to another node and handles everything, a repeat always flagged redelivered; a single active
 * consumer's standby takes over. Figures (time without confirms, recovery time) are printed, not asserted.
 */
@Tag("cluster")
class QuorumQueueClusterIT {

    private static final Duration T = Duration.ofSeconds(60);
    private static final BasicProperties PERSISTENT =
            BasicProperties.builder().deliveryMode(BasicProperties.PERSISTENT).build();

    private final List<Connection> opened = new ArrayList<>();
    private final List<String> queues = new ArrayList<>();

    @BeforeAll
    static void cluster() {
        RabbitCluster.require();
    }

    @AfterEach
    void cleanUp() throws Exception {
        RabbitCluster.startAll();
        if (!queues.isEmpty()) {
            Connection admin = connect("cleanup", RabbitCluster.NODES, new RecoveryOptions().enabled(false));
            Channel ch = await(admin.openChannel());
            for (String q : queues) {
                await(ch.queueDelete(q));
            }
        }
        for (Connection c : opened) {
            c.close().toCompletableFuture().get(T.toSeconds(), TimeUnit.SECONDS);
        }
    }

    static <T> T await(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(T.toSeconds(), TimeUnit.SECONDS);
    }

    private Connection connect(String name, List<Node> order, RecoveryOptions recovery) throws Exception {
        var options = RabbitCluster.options(name, order);
        if (recovery != null) {
            options.recovery(recovery);
        }
        Connection c = await(BrokerExtension.client().connect(options));
        opened.add(c);
        return c;
    }

    /** The nodes with {@code first} first, then the others in order. */
    private static List<Node> startingWith(Node first) {
        List<Node> order = new ArrayList<>(List.of(first));
        RabbitCluster.NODES.stream().filter(n -> !n.equals(first)).forEach(order::add);
        return order;
    }

    private static Node other(Node... not) {
        return RabbitCluster.NODES.stream()
                .filter(n -> !List.of(not).contains(n))
                .findFirst()
                .orElseThrow();
    }

    /** A quorum queue on all three nodes, declared through {@code admin}; deleted after the test. */
    private String quorumQueue(Connection admin, String what, QueueSpec declare) throws Exception {
        Channel ch = await(admin.openChannel());
        await(ch.queueDeclare(declare));
        queues.add(declare.queue());
        await(ch.close());
        return declare.queue();
    }

    /** Waits (up to 30 s) until a live node reports a leader of {@code queue} other than {@code not}. */
    private static Node leaderOtherThan(String queue, Node not) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Node leader = RabbitCluster.leaderOf(queue);
        while (leader.equals(not)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no leader of " + queue + " other than " + not + " within 30 s");
            }
            Thread.sleep(100);
            leader = RabbitCluster.leaderOf(queue);
        }
        return leader;
    }

    private static String name(String what) {
        return "warren-it.cluster." + what + "." + Long.toHexString(System.nanoTime());
    }

    private static ByteBuf seq(int i) {
        return Unpooled.buffer(4).writeInt(i);
    }

    /** Records recovery on a connection: when it started and when it succeeded (System.nanoTime), and how often. */
    static final class Recoveries implements RecoveryListener {
        final AtomicLong startedAt = new AtomicLong();
        final AtomicLong succeededAt = new AtomicLong();
        final AtomicInteger succeeded = new AtomicInteger();
        final CountDownLatch first = new CountDownLatch(1);
        volatile Runnable onStart = () -> {};

        @Override
        public void recoveryStarted(Connection connection, ConnectionLostException cause) {
            startedAt.compareAndSet(0, System.nanoTime());
            onStart.run();
        }

        @Override
        public void recoverySucceeded(Connection connection) {
            succeededAt.compareAndSet(0, System.nanoTime());
            succeeded.incrementAndGet();
            first.countDown();
        }

        double seconds() {
            return (succeededAt.get() - startedAt.get()) / 1e9;
        }
    }

    enum Stopped {
        CONNECTED_NODE,
        LEADER
    }

    @ParameterizedTest
    @EnumSource(Stopped.class)
    void noConfirmedPublishIsLostWhileANodeStopsAndEveryPublishEndsExplicitly(Stopped which) throws Exception {
        String q = name("publish-" + which);
        Node leader0 = RabbitCluster.NODES.get(0);
        Connection admin = connect("admin", startingWith(leader0), null);
        quorumQueue(admin, q, QueueSpec.named(q).quorum());
        Node leader = RabbitCluster.leaderOf(q);
        Node publishTo = other(leader);
        Node stopped = which == Stopped.LEADER ? leader : publishTo;
        Node consumeFrom = other(leader, publishTo);

        Connection publisher = connect("publisher-" + which, startingWith(publishTo), null);
        assertEquals(publishTo.port(), publisher.address().port());
        Recoveries recoveries = new Recoveries();
        publisher.addRecoveryListener(recoveries);
        Channel ch = await(publisher.openChannel());
        await(ch.confirmSelect());

        // one publish a millisecond from one thread: 1,000 a second for 10 s, the node stopped at 2 s and started
        // again 2 s after it has stopped
        int total = 10_000;
        List<CompletableFuture<PublishOutcome>> outcomes = new ArrayList<>(total);
        AtomicLongArray confirmedAt = new AtomicLongArray(total);
        // publishes not complete when the connection dropped: accepted before the loss, their outcomes came after
        BitSet pendingAtLoss = new BitSet();
        recoveries.onStart = () -> {
            synchronized (outcomes) {
                for (int i = 0; i < outcomes.size(); i++) {
                    if (!outcomes.get(i).isDone()) {
                        pendingAtLoss.set(i);
                    }
                }
            }
        };
        // the scenario's clock, not synchronisation: the stop 2 s in, the start 2 s after the stop; the future
        // gives the leader a live node reported while the node was stopped, or the stopper's failure
        ExecutorService stopperThread = Executors.newSingleThreadExecutor(r -> new Thread(r, "node-stopper"));
        long stopAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        long start = System.nanoTime();
        CompletableFuture<Node> nodeStopper = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        Thread.sleep(2_000);
                        RabbitCluster.stopApp(stopped);
                        long startAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                        Node leaderWhileStopped = leaderOtherThan(q, stopped);
                        Thread.sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(startAt - System.nanoTime())));
                        RabbitCluster.startApp(stopped);
                        return leaderWhileStopped;
                    } catch (Exception e) {
                        throw new CompletionException(e);
                    }
                },
                stopperThread);
        stopperThread.shutdown();
        for (int i = 0; i < total; i++) {
            long due = start + TimeUnit.MILLISECONDS.toNanos(i);
            long wait = due - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait);
            }
            int index = i;
            CompletableFuture<PublishOutcome> f =
                    ch.publish("", q, false, PERSISTENT, seq(i)).toCompletableFuture();
            synchronized (outcomes) {
                outcomes.add(f);
            }
            f.thenRun(() -> confirmedAt.set(index, System.nanoTime()));
        }
        Node leaderWhileStopped = nodeStopper.get(T.toSeconds(), TimeUnit.SECONDS); // throws what the stopper threw

        int confirmed = 0;
        int inDoubt = 0;
        int notWritten = 0;
        int nacked = 0;
        BitSet confirmedSeqs = new BitSet(total);
        for (int i = 0; i < total; i++) {
            try {
                PublishOutcome o = outcomes.get(i).get(T.toSeconds(), TimeUnit.SECONDS);
                assertTrue(o.isConfirmed(), () -> "confirm mode: " + o);
                confirmed++;
                confirmedSeqs.set(i);
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof PublishNotConfirmedException n) {
                    if (n.mayHaveReachedBroker()) {
                        inDoubt++;
                    } else {
                        notWritten++;
                    }
                } else if (e.getCause() instanceof PublishNackedException) {
                    nacked++;
                } else {
                    throw new AssertionError("publish " + i + " failed unexpectedly", e.getCause());
                }
            }
        }
        int heldAcross = 0;
        for (int i = pendingAtLoss.nextSetBit(0); i >= 0; i = pendingAtLoss.nextSetBit(i + 1)) {
            if (confirmedSeqs.get(i)) {
                heldAcross++;
            }
        }
        // the longest time without a confirm after the stop: how long publishing was interrupted
        long[] times = new long[confirmed];
        int k = 0;
        for (int i = 0; i < total; i++) {
            if (confirmedSeqs.get(i)) {
                times[k++] = confirmedAt.get(i);
            }
        }
        java.util.Arrays.sort(times);
        long longestGap = 0;
        for (int i = 1; i < times.length; i++) {
            if (times[i] > stopAt) {
                longestGap = Math.max(longestGap, times[i] - Math.max(times[i - 1], stopAt));
            }
        }

        // 0 confirmed messages lost: every confirmed sequence number is in the queue
        Connection consumer = connect("drain-" + which, startingWith(consumeFrom), null);
        Channel cc = await(consumer.openChannel());
        BitSet inQueue = new BitSet(total);
        AtomicInteger read = new AtomicInteger();
        CountDownLatch all = new CountDownLatch(1);
        BitSet missing = (BitSet) confirmedSeqs.clone();
        await(cc.consume(q, new ConsumeOptions().prefetch(1000), d -> {
            int s = d.body().getInt(d.body().readerIndex());
            read.incrementAndGet();
            synchronized (inQueue) {
                inQueue.set(s);
                missing.clear(s);
                if (missing.isEmpty()) {
                    all.countDown();
                }
            }
            d.ack();
        }));
        boolean none = all.await(T.toSeconds(), TimeUnit.SECONDS);
        System.out.printf(
                "[QuorumQueueClusterIT] stop of the %s (%s), leader then %s, publisher on %s: %d publishes, %d confirmed,"
                        + " %d failed in doubt (written, unconfirmed), %d failed not written, %d nacked; %d accepted"
                        + " but not complete at the loss were confirmed after recovery; longest time without a"
                        + " confirm after the stop %.2f s; recovery %s; %d messages read back%n",
                which,
                stopped,
                leaderWhileStopped,
                publishTo,
                total,
                confirmed,
                inDoubt,
                notWritten,
                nacked,
                heldAcross,
                longestGap / 1e9,
                recoveries.succeeded.get() > 0
                        ? String.format("%.2f s", recoveries.seconds())
                        : "none (the connection stayed)",
                read.get());
        synchronized (inQueue) {
            assertTrue(
                    none,
                    () -> missing.cardinality() + " confirmed messages not in the queue, e.g. "
                            + missing.nextSetBit(0));
        }
        assertEquals(total, confirmed + inDoubt + notWritten + nacked, "every publish ended, confirmed or failed");
        assertEquals(0, notWritten, "under WAIT a publish accepted but not written is held, never failed");
        if (which == Stopped.LEADER) {
            assertNotEquals(leader, leaderWhileStopped, "another node became the queue's leader");
        }
        if (which == Stopped.CONNECTED_NODE) {
            assertTrue(recoveries.succeeded.get() > 0, "the publisher's connection recovered");
            assertNotEquals(stopped.port(), publisher.address().port(), "the publisher moved to another node");
        }
        assertTrue(confirmed > total / 2, "most publishes confirmed: " + confirmed);
    }

    @Test
    void aManualAckConsumerOnTheStoppedNodeMovesAndHandlesEveryMessageRepeatsFlaggedRedelivered() throws Exception {
        String q = name("consume");
        Node stopped = RabbitCluster.NODES.get(1);
        Node adminNode = other(stopped);
        Connection admin = connect("admin", startingWith(adminNode), null);
        quorumQueue(admin, q, QueueSpec.named(q).quorum());
        int total = 3_000;
        Channel pub = await(admin.openChannel());
        await(pub.confirmSelect());
        List<CompletableFuture<PublishOutcome>> sent = new ArrayList<>();
        for (int i = 0; i < total; i++) {
            sent.add(pub.publish("", q, false, PERSISTENT, seq(i)).toCompletableFuture());
        }
        CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).get(T.toSeconds(), TimeUnit.SECONDS);

        Connection consumer = connect("consumer", startingWith(stopped), null);
        assertEquals(stopped.port(), consumer.address().port());
        Recoveries recoveries = new Recoveries();
        consumer.addRecoveryListener(recoveries);
        Channel ch = await(consumer.openChannel());
        int[] handled = new int[total];
        AtomicInteger repeatsNotFlagged = new AtomicInteger();
        AtomicInteger repeats = new AtomicInteger();
        AtomicInteger staleAcks = new AtomicInteger();
        AtomicInteger distinct = new AtomicInteger();
        CountDownLatch halfway = new CountDownLatch(total / 4);
        CountDownLatch done = new CountDownLatch(1);
        ExecutorService worker = Executors.newSingleThreadExecutor();
        try {
            await(ch.consume(q, new ConsumeOptions().prefetch(100).executor(worker), (Delivery d) -> {
                int s = d.body().getInt(d.body().readerIndex());
                if (handled[s]++ > 0) {
                    repeats.incrementAndGet();
                    if (!d.redelivered()) {
                        repeatsNotFlagged.incrementAndGet();
                    }
                } else if (distinct.incrementAndGet() == total) {
                    done.countDown();
                }
                halfway.countDown();
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(500)); // the work: the node stops meanwhile
                try {
                    d.ack();
                } catch (StaleDeliveryException e) {
                    staleAcks.incrementAndGet(); // delivered on the lost connection: the broker requeued it
                }
            }));
            assertTrue(halfway.await(T.toSeconds(), TimeUnit.SECONDS));
            RabbitCluster.stopApp(stopped);
            assertTrue(recoveries.first.await(T.toSeconds(), TimeUnit.SECONDS), "the consumer's connection recovered");
            Node movedTo = RabbitCluster.nodeAt(consumer.address().port());
            RabbitCluster.startApp(stopped);
            assertTrue(done.await(T.toSeconds(), TimeUnit.SECONDS), () -> distinct.get() + " of " + total + " handled");
            System.out.printf(
                    "[QuorumQueueClusterIT] consumer on %s moved to %s in %.2f s: %d messages, all"
                            + " handled; %d handled twice (all redelivered: %s), %d acks of deliveries from the lost"
                            + " connection refused locally%n",
                    stopped,
                    movedTo,
                    recoveries.seconds(),
                    total,
                    repeats.get(),
                    repeatsNotFlagged.get() == 0,
                    staleAcks.get());
            assertNotEquals(stopped, movedTo);
            assertEquals(0, repeatsNotFlagged.get(), "a message handled twice carries the redelivered flag");
        } finally {
            worker.shutdownNow();
        }
    }

    @Test
    void theStandbyOfASingleActiveConsumerTakesOverWhenTheActiveConnectionDies() throws Exception {
        String q = name("sac");
        Node activeNode = RabbitCluster.NODES.get(0);
        Node standbyNode = RabbitCluster.NODES.get(1);
        Connection admin = connect("admin", startingWith(other(activeNode, standbyNode)), null);
        quorumQueue(admin, q, QueueSpec.named(q).quorum().singleActiveConsumer().deliveryLimit(10));
        String activeName = name("sac-active");
        Connection active = connect(activeName, startingWith(activeNode), new RecoveryOptions().enabled(false));
        Connection standby = connect("sac-standby", startingWith(standbyNode), null);
        ConcurrentLinkedQueue<Integer> gotActive = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Integer> gotStandby = new ConcurrentLinkedQueue<>();
        CountDownLatch firstTen = new CountDownLatch(10);
        CountDownLatch nextTen = new CountDownLatch(10);
        ConsumeOptions manual = new ConsumeOptions().prefetch(10);
        await(await(active.openChannel()).consume(q, manual, d -> {
            gotActive.add(d.body().getInt(d.body().readerIndex()));
            d.ack();
            firstTen.countDown();
        }));
        await(await(standby.openChannel()).consume(q, manual, d -> {
            gotStandby.add(d.body().getInt(d.body().readerIndex()));
            d.ack();
            nextTen.countDown();
        }));
        Channel pub = await(admin.openChannel());
        await(pub.confirmSelect());
        for (int i = 0; i < 10; i++) {
            assertTrue(await(pub.publish("", q, false, PERSISTENT, seq(i))).isConfirmed());
        }
        assertTrue(firstTen.await(T.toSeconds(), TimeUnit.SECONDS));

        RabbitCluster.closeConnection(activeName, "the active consumer's connection dies (QuorumQueueClusterIT)");
        await(active.closeFuture());
        for (int i = 10; i < 20; i++) {
            assertTrue(await(pub.publish("", q, false, PERSISTENT, seq(i))).isConfirmed());
        }
        assertTrue(nextTen.await(T.toSeconds(), TimeUnit.SECONDS), () -> "standby got " + gotStandby);
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), new ArrayList<>(gotActive), "only the active one");
        assertEquals(
                List.of(10, 11, 12, 13, 14, 15, 16, 17, 18, 19), new ArrayList<>(gotStandby), "the standby took over");
    }
}
