package io.warren.impl;

import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RpcTimeoutException;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.QueueDeclareOkEncoder;
import io.warren.codec.method.QueuePurgeOkEncoder;
import io.warren.impl.PublishFixture.TrackedBody;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a channel holds while it recovers, publishes and synchronous methods, goes to the wire in one order, the
 * order of the calls; and fails when recovery's event loop goes away without recovery giving up.
 */
class RecoveryHeldOrderTest {

    private static final BasicProperties PROPS = BasicProperties.EMPTY;

    private static void declareOk(FakeBroker broker, String queue) {
        broker.send(1, new QueueDeclareOkEncoder().queue(queue).messageCount(0).consumerCount(0));
    }

    private static <T> T done(CompletionStage<T> stage) {
        assertTrue(stage.toCompletableFuture().isDone(), () -> "expected done: " + stage);
        return stage.toCompletableFuture().join();
    }

    /**
     * Before, the held publishes went first, then the held methods: the publish made after the declare reached the
     * broker before the queue existed and was routed nowhere.
     */
    @Test
    void aQueueDeclaredWhileRecoveringIsDeclaredBeforeThePublishMadeAfterIt() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            CompletionStage<PublishOutcome> before = ch.publish("", "fresh", false, PROPS, text("before"));
            var declared = ch.queueDeclare(QueueSpec.named("fresh"));
            CompletionStage<PublishOutcome> after = ch.publish("", "fresh", false, PROPS, text("after"));
            var purged = ch.queuePurge("fresh");
            brokers.runAllTasks();

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            assertEquals("before", expectPublish(second, 1).text());
            second.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            assertEquals("after", expectPublish(second, 1).text(), "behind the declare called before it");
            // one synchronous method on the wire at a time, as on an open channel: the purge waits for declare-ok
            second.expectNothing();
            declareOk(second, "fresh");
            second.expectAndRelease(1, MethodIds.QUEUE_PURGE);
            second.send(1, new QueuePurgeOkEncoder().messageCount(1));
            brokers.runAllTasks();
            assertEquals("fresh", done(declared).queue());
            assertEquals(1L, done(purged));
            done(before);
            done(after);
            second.expectNothing();
        }
    }

    /**
     * What a held method's completion does while the held ones go out (here the failure of a bind whose
     * server-named queue recovery renamed) goes behind everything held, publishes included.
     */
    @Test
    void whatIsCalledWhileTheHeldOnesGoOutGoesBehindThemAll() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var q = ch.queueDeclare(QueueSpec.serverNamed());
            brokers.first.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            declareOk(brokers.first, "amq.gen-1");
            done(q);

            brokers.cut();
            List<CompletionStage<?>> fromTheFailure = new ArrayList<>();
            var bound = ch.queueBind("amq.gen-1", "amq.fanout", "");
            bound.whenComplete((v, e) -> {
                fromTheFailure.add(ch.publish("", "q", false, PROPS, text("from the failure")));
                fromTheFailure.add(ch.queuePurge("q"));
            });
            ch.publish("", "q", false, PROPS, text("held"));
            var declared = ch.queueDeclare(QueueSpec.named("late"));
            brokers.runAllTasks();

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            RecoveringBrokers.reopen(second, 2); // recovery's own channel declares the queue again: a new name
            second.expectAndRelease(2, MethodIds.QUEUE_DECLARE);
            second.send(
                    2,
                    new QueueDeclareOkEncoder()
                            .queue("amq.gen-2")
                            .messageCount(0)
                            .consumerCount(0));
            second.expectAndRelease(2, MethodIds.CHANNEL_CLOSE);
            second.sendChannelCloseOk(2);
            brokers.runAllTasks();

            AmqpException e = assertInstanceOf(AmqpException.class, failure(bound));
            assertTrue(e.getMessage().contains("again as 'amq.gen-2'"), e.getMessage());
            assertEquals(2, fromTheFailure.size());
            assertEquals("held", expectPublish(second, 1).text());
            second.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            assertEquals("from the failure", expectPublish(second, 1).text());
            declareOk(second, "late");
            second.expectAndRelease(1, MethodIds.QUEUE_PURGE);
            second.send(1, new QueuePurgeOkEncoder().messageCount(0));
            brokers.runAllTasks();
            done(declared);
            done(fromTheFailure.get(1));
            second.expectNothing();
        }
    }

    /**
     * Recovery's event loop goes (closing the embedded channel cancels its scheduled tasks, as a loop that shuts
     * down does) while recovery waits to reconnect: nothing will send what the channel held, and nothing gave up.
     * Before, the held method and publish were never completed: their timers went with the loop.
     */
    @Test
    void whatIsHeldFailsWhenRecoverysEventLoopShutsDown() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            var declared = ch.queueDeclare(QueueSpec.named("q"));
            TrackedBody body = new TrackedBody("held".getBytes(StandardCharsets.UTF_8));
            CompletionStage<PublishOutcome> published = ch.publish("", "q", false, PROPS, body);
            brokers.runAllTasks();
            assertPending(declared);
            assertPending(published);

            brokers.first.client.close();
            ConnectionClosedException closed = assertInstanceOf(ConnectionClosedException.class, failure(declared));
            assertTrue(closed.getMessage().contains("event loop"), closed.getMessage());
            PublishNotConfirmedException notWritten =
                    assertInstanceOf(PublishNotConfirmedException.class, failure(published));
            assertFalse(notWritten.mayHaveReachedBroker());
            assertInstanceOf(ConnectionClosedException.class, notWritten.getCause());
            body.assertReleasedOnce();
        }
    }

    /** With a 10 s RPC timeout. */
    private static RecoveringBrokers tenSecondRpcs() {
        return new RecoveringBrokers(new ConnectionOptions().rpcTimeout(Duration.ofSeconds(10)));
    }

    /**
     * Cuts the connection, declares a queue while it recovers, then lets {@code seconds} of the declare's timeout
     * pass on recovery's clock (nothing runs) and reconnects; returns the declare, the new broker in {@code into}.
     */
    private static CompletionStage<?> heldDeclare(RecoveringBrokers brokers, int seconds, List<FakeBroker> into) {
        Channel ch = brokers.first.openChannel(brokers.connection, 1);
        brokers.cut();
        var declared = ch.queueDeclare(QueueSpec.named("q"));
        brokers.runAllTasks();
        brokers.first.client.advanceTimeBy(seconds, TimeUnit.SECONDS);
        into.add(brokers.cutAndReconnectAfterLoss());
        return declared;
    }

    /**
     * A method held while the channel recovered waits for its reply only what is left of the RPC timeout from its
     * call. Before, its reply was given a whole timeout more once it was sent: up to twice the timeout in all.
     */
    @Test
    void aHeldMethodsReplyIsAwaitedForWhatIsLeftOfItsTimeout() {
        try (RecoveringBrokers brokers = tenSecondRpcs()) {
            List<FakeBroker> reconnected = new ArrayList<>();
            var declared = heldDeclare(brokers, 7, reconnected); // recovery took 7 s of the declare's 10
            FakeBroker second = reconnected.get(0);
            second.client.freezeTime();
            RecoveringBrokers.reopen(second, 1);
            brokers.runAllTasks();
            second.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            assertPending(declared);

            second.client.advanceTimeBy(3_500, TimeUnit.MILLISECONDS);
            second.client.runPendingTasks();
            assertInstanceOf(RpcTimeoutException.class, failure(declared));
        }
    }

    /** A held method whose time ran out by the time the channel is back is not sent. */
    @Test
    void aHeldMethodWhoseTimeRanOutIsNotSent() {
        try (RecoveringBrokers brokers = tenSecondRpcs()) {
            List<FakeBroker> reconnected = new ArrayList<>();
            var declared = heldDeclare(brokers, 10, reconnected); // its timer is due, not run yet
            FakeBroker second = reconnected.get(0);
            RecoveringBrokers.reopen(second, 1);
            brokers.runAllTasks();
            RpcTimeoutException e = assertInstanceOf(RpcTimeoutException.class, failure(declared));
            assertTrue(e.getMessage().contains("was not sent"), e.getMessage());
            second.expectNothing();
        }
    }
}
