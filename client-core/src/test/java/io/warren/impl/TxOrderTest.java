package io.warren.impl;

import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.PublishOutcome;
import io.warren.RpcTimeoutException;
import io.warren.codec.Frame;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.BasicRecoverOkEncoder;
import io.warren.codec.method.ConnectionBlockedEncoder;
import io.warren.codec.method.ConnectionUnblockedEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.QueueDeclareOkEncoder;
import io.warren.codec.method.TxCommitOkEncoder;
import io.warren.codec.method.TxRollbackOkEncoder;
import io.warren.codec.method.TxSelectOkEncoder;
import io.warren.impl.PublishFixture.TrackedBody;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * tx.select, tx.commit and tx.rollback reach the wire in the order the application called them with the channel's
 * publishes, whatever the publisher holds and whatever waits in the channel's RPC queue: a commit covers exactly the
 * publishes made before it.
 */
class TxOrderTest {

    private static final BasicProperties PROPS = BasicProperties.EMPTY;

    /** Before: the commit went out at once, past the publish held while blocked (committed without it). */
    @Test
    void aCommitWaitsBehindAPublishHeldWhileBlocked() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, text("held"));
            CompletionStage<Void> commit = ch.txCommit();
            broker.expectNothing();
            assertPending(commit);

            broker.send(0, new ConnectionUnblockedEncoder());
            assertEquals("held", expectPublish(broker, 1).text());
            broker.expectAndRelease(1, MethodIds.TX_COMMIT);
            broker.expectNothing();
            broker.send(1, new TxCommitOkEncoder());
            commit.toCompletableFuture().join();
            assertSame(PublishOutcome.SENT, held.toCompletableFuture().join());
        }
    }

    /**
     * Before: "next" was written at once, before the second commit, which then committed it. And it waits for that
     * commit's commit-ok: RabbitMQ closes the connection (504) over any command on a channel while it commits.
     */
    @Test
    void aPublishAfterACommitWaitingForItsTurnFollowsThatCommit() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<Void> c1 = ch.txCommit();
            broker.expectAndRelease(1, MethodIds.TX_COMMIT);
            CompletionStage<Void> c2 = ch.txCommit();
            CompletionStage<PublishOutcome> next = ch.publish("", "q", false, PROPS, text("next"));
            broker.expectNothing();
            assertFalse(ch.isWritable(), "a publish now would wait for the commit");

            broker.send(1, new TxCommitOkEncoder());
            c1.toCompletableFuture().join();
            broker.expectAndRelease(1, MethodIds.TX_COMMIT);
            broker.expectNothing(); // the second commit is being committed
            assertFalse(ch.isWritable());
            broker.send(1, new TxCommitOkEncoder());
            c2.toCompletableFuture().join();
            assertEquals("next", expectPublish(broker, 1).text());
            assertSame(PublishOutcome.SENT, next.toCompletableFuture().join());
            assertTrue(ch.isWritable());
        }
    }

    /** Before: the publish was written while tx.select waited behind queue.declare, outside the transaction. */
    @Test
    void aPublishAfterTxSelectWaitingBehindAnotherRequestFollowsIt() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ch.queueDeclare("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            CompletionStage<Void> select = ch.txSelect();
            ch.publish("", "q", false, PROPS, text("in the transaction"));
            broker.expectNothing();

            broker.send(1, new QueueDeclareOkEncoder().queue("q"));
            broker.expectAndRelease(1, MethodIds.TX_SELECT);
            assertEquals("in the transaction", expectPublish(broker, 1).text());
            broker.send(1, new TxSelectOkEncoder());
            select.toCompletableFuture().join();
        }
    }

    /** Publishes and tx methods held together keep their order when they go out. */
    @Test
    void heldPublishesAndCommitsGoOutInCallOrder() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            ch.publish("", "q", false, PROPS, text("a"));
            CompletionStage<Void> first = ch.txCommit();
            ch.publish("", "q", false, PROPS, text("b"));
            CompletionStage<Void> second = ch.txRollback();
            ch.publish("", "q", false, PROPS, text("c"));
            broker.expectNothing();

            broker.send(0, new ConnectionUnblockedEncoder());
            assertEquals("a", expectPublish(broker, 1).text());
            broker.expectAndRelease(1, MethodIds.TX_COMMIT);
            broker.expectNothing(); // "b", the rollback and "c" wait for commit-ok
            broker.send(1, new TxCommitOkEncoder());
            first.toCompletableFuture().join();
            assertEquals("b", expectPublish(broker, 1).text());
            broker.expectAndRelease(1, MethodIds.TX_ROLLBACK);
            assertEquals("c", expectPublish(broker, 1).text());
            broker.send(1, new TxRollbackOkEncoder());
            second.toCompletableFuture().join();
        }
    }

    /** A commit held behind publishes fails with the channel, its frame released; so do the publishes. */
    @Test
    void aHeldCommitFailsWhenTheChannelCloses() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            TrackedBody body = new TrackedBody("held".getBytes());
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, body);
            CompletionStage<Void> commit = ch.txCommit();
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED", 90, 20);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertEquals(
                    406,
                    assertInstanceOf(ChannelClosedException.class, failure(commit))
                            .replyCode());
            assertInstanceOf(ChannelClosedException.class, failure(held));
            body.assertReleasedOnce();
            broker.expectNothing();
        }
    }

    /** A commit that timed out before its turn was never sent: the publish held behind it goes, the channel lives. */
    @Test
    void aPublishHeldForACommitThatTimedOutUnsentGoesOut() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().rpcTimeout(Duration.ofSeconds(5)))) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ch.queueDeclare("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            CompletionStage<Void> commit = ch.txCommit();
            CompletionStage<PublishOutcome> after = ch.publish("", "q", false, PROPS, text("after"));
            broker.expectNothing();
            broker.client.advanceTimeBy(6, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertInstanceOf(RpcTimeoutException.class, failure(commit));
            assertEquals("after", expectPublish(broker, 1).text());
            broker.client.runPendingTasks();
            assertSame(PublishOutcome.SENT, after.toCompletableFuture().join());
            assertTrue(ch.isOpen());
        }
    }

    /**
     * Puts channel 1 in tx mode and starts a consumer on it that keeps its deliveries (retained: the test releases
     * them); the broker delivers {@code count}. Returns them.
     */
    private static List<Delivery> transactionalConsumer(FakeBroker broker, Channel ch, int count) {
        ch.txSelect();
        broker.expectAndRelease(1, MethodIds.TX_SELECT);
        broker.send(1, new TxSelectOkEncoder());
        List<Delivery> got = new ArrayList<>();
        ch.consume("q", new ConsumeOptions().prefetch(10), d -> got.add(d.retain()));
        broker.expectAndRelease(1, MethodIds.BASIC_QOS);
        broker.send(1, new BasicQosOkEncoder());
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
        for (int tag = 1; tag <= count; tag++) {
            broker.sendDeliver(1, "c", tag, false, PROPS, ("m" + tag).getBytes(StandardCharsets.UTF_8));
        }
        return got;
    }

    /** The methods the client wrote, in order (settlements by name and tag); content frames skipped. */
    private static List<String> methods(FakeBroker broker) {
        List<String> wire = new ArrayList<>();
        Frame f;
        while ((f = broker.next()) != null) {
            if (f.type() == FrameType.METHOD) {
                wire.add(FakeBroker.settlement(f));
            } else {
                f.release();
            }
        }
        return wire;
    }

    /**
     * A transactional consumer that commits without waiting (publish its output, ack, commit; the next message
     * likewise while the commit is on its way): each message's publish and ack go into the transaction its own commit
     * ends, and nothing is written while a commit waits for commit-ok. Before, message 3's ack went out before the
     * second commit (which committed it, while its output went into the third), and the second message's publish and
     * ack were written while the first commit was being committed, over which RabbitMQ closes the connection (504).
     */
    @Test
    void eachMessagesPublishAndAckGoIntoTheTransactionItsOwnCommitEnds() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> got = transactionalConsumer(broker, ch, 3);
            assertEquals(3, got.size());

            ch.publish("", "out", false, PROPS, text("out-1"));
            got.get(0).ack();
            CompletionStage<Void> c1 = ch.txCommit();
            assertEquals(List.of("method basic.publish", "ack 1", "method tx.commit"), methods(broker));
            ch.publish("", "out", false, PROPS, text("out-2"));
            got.get(1).ack();
            CompletionStage<Void> c2 = ch.txCommit();
            ch.publish("", "out", false, PROPS, text("out-3"));
            got.get(2).ack();
            CompletionStage<Void> c3 = ch.txCommit();
            assertEquals(List.of(), methods(broker), "nothing while the first commit is committed");
            broker.send(1, new TxCommitOkEncoder());
            assertEquals(List.of("method basic.publish", "ack 2", "method tx.commit"), methods(broker));
            broker.send(1, new TxCommitOkEncoder());
            assertEquals(List.of("method basic.publish", "ack 3", "method tx.commit"), methods(broker));
            broker.send(1, new TxCommitOkEncoder());
            c1.toCompletableFuture().join();
            c2.toCompletableFuture().join();
            c3.toCompletableFuture().join();
            got.forEach(Delivery::release);
        }
    }

    /** The same from another thread: its acks travel with its publishes and commits, not ahead of them. */
    @Test
    void anotherThreadsAcksKeepTheirPlaceAmongItsPublishesAndCommits() throws Exception {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> got = transactionalConsumer(broker, ch, 2);
            Thread t = new Thread(() -> {
                ch.publish("", "out", false, PROPS, text("out-1"));
                got.get(0).ack();
                ch.txCommit();
                ch.publish("", "out", false, PROPS, text("out-2"));
                got.get(1).ack();
                ch.txCommit();
            });
            t.start();
            t.join();
            broker.client.runPendingTasks();
            assertEquals(List.of("method basic.publish", "ack 1", "method tx.commit"), methods(broker));
            broker.send(1, new TxCommitOkEncoder());
            assertEquals(List.of("method basic.publish", "ack 2", "method tx.commit"), methods(broker));
            broker.send(1, new TxCommitOkEncoder());
            got.forEach(Delivery::release);
        }
    }

    /**
     * An ack of every delivery so far (tag 0, multiple) held behind a commit covers what had arrived at the call, not a
     * delivery that arrives while it waits (review: before, "ack 2 multiple" acked a message the application never saw).
     */
    @Test
    void aHeldAckOfEveryDeliverySoFarCoversOnlyWhatHadArrived() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> got = transactionalConsumer(broker, ch, 1);
            ch.txCommit();
            assertEquals(List.of("method tx.commit"), methods(broker));
            ch.basicAck(0, true);
            broker.sendDeliver(1, "c", 2, false, PROPS, "m2".getBytes(StandardCharsets.UTF_8));
            broker.send(1, new TxCommitOkEncoder());
            List<String> wire = methods(broker);
            assertTrue(wire.equals(List.of("ack 1")) || wire.equals(List.of("ack 1 multiple")), wire.toString());
            got.forEach(Delivery::release);
        }
    }

    /**
     * basic.recover on a transactional channel waits behind an ack held with a publish while the connection is blocked
     * (review: before, it went out at once; the broker requeued the delivery, and the ack made before the recover was
     * dropped as stale when its turn came, so the message came again).
     */
    @Test
    void aRecoverWaitsBehindAnAckHeldWithAPublishWhileBlocked() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> got = transactionalConsumer(broker, ch, 1);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            CompletionStage<PublishOutcome> out = ch.publish("", "out", false, PROPS, text("out-1"));
            got.get(0).ack();
            CompletionStage<Void> recovered = ch.basicRecover(true);
            assertEquals(List.of(), methods(broker), "nothing while blocked");
            assertPending(recovered);

            broker.send(0, new ConnectionUnblockedEncoder());
            assertEquals(List.of("method basic.publish", "ack 1", "method basic.recover"), methods(broker));
            broker.send(1, new BasicRecoverOkEncoder());
            recovered.toCompletableFuture().join();
            assertSame(PublishOutcome.SENT, out.toCompletableFuture().join());
            got.forEach(Delivery::release);
        }
    }

    /** The same behind a commit not yet answered: the ack goes at commit-ok, then the recover. */
    @Test
    void aRecoverWaitsBehindAnAckHeldForACommitOk() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> got = transactionalConsumer(broker, ch, 1);
            CompletionStage<Void> commit = ch.txCommit();
            assertEquals(List.of("method tx.commit"), methods(broker));
            got.get(0).ack();
            CompletionStage<Void> recovered = ch.basicRecover(true);
            assertEquals(List.of(), methods(broker), "nothing while the commit is committed");

            broker.send(1, new TxCommitOkEncoder());
            assertEquals(List.of("ack 1", "method basic.recover"), methods(broker));
            commit.toCompletableFuture().join();
            broker.send(1, new BasicRecoverOkEncoder());
            recovered.toCompletableFuture().join();
            got.forEach(Delivery::release);
        }
    }
}
