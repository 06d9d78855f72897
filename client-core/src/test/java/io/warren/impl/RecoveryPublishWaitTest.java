package io.warren.impl;

import static io.warren.impl.PublishFixture.ack;
import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.confirmMode;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ConnectionLostException;
import io.warren.ConnectionOptions;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.ConfirmSelectOkEncoder;
import io.warren.codec.method.ConnectionBlockedEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.TxSelectOkEncoder;
import io.warren.impl.PublishFixture.TrackedBody;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Publishes made while their channel is being recovered: held and sent once it is back
 * ({@link RecoveryOptions.PublishDuringRecovery#WAIT}), each for at most the wait timeout from when it was made,
 * or refused at once ({@code FAIL_FAST}). The clock is recovery's event loop's, advanced by the test.
 */
class RecoveryPublishWaitTest {

    private static final BasicProperties PROPS = BasicProperties.EMPTY;

    private static void advance(RecoveringBrokers brokers, long seconds) {
        brokers.first.client.advanceTimeBy(seconds, TimeUnit.SECONDS);
        brokers.runRecoveryTasks();
    }

    /** Not written, retryable, caused by the loss. */
    private static void assertFailedNotWritten(CompletionStage<PublishOutcome> publish) {
        PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(publish));
        assertFalse(e.mayHaveReachedBroker(), "held by the client, never written");
        assertInstanceOf(ConnectionLostException.class, e.getCause());
    }

    @Test
    void eachHeldPublishWaitsTheTimeoutFromWhenItWasMadeNotFromTheLoss() {
        RecoveryOptions options = new RecoveryOptions().publishWaitTimeout(Duration.ofSeconds(10));
        try (RecoveringBrokers brokers = new RecoveringBrokers(options)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut(); // lost at t=0; the attempt at 1 ms hangs in its handshake
            TrackedBody earlyBody = new TrackedBody("early".getBytes(StandardCharsets.UTF_8));
            CompletionStage<PublishOutcome> early = ch.publish("", "q", false, PROPS, earlyBody);
            advance(brokers, 6);
            assertTrue(brokers.connection.isRecovering());
            CompletionStage<PublishOutcome> late = ch.publish("", "q", false, PROPS, text("late"));

            advance(brokers, 5); // t=11: early waited 11 s, late 5 s
            assertFailedNotWritten(early);
            earlyBody.assertReleasedOnce();
            assertPending(late);
            CompletionStage<PublishOutcome> later = ch.publish("", "q", false, PROPS, text("later"));
            assertPending(later); // made 11 s after the loss, it has its own 10 s

            advance(brokers, 5); // t=16: late waited 10 s
            assertFailedNotWritten(late);
            assertPending(later);

            FakeBroker second = brokers.current();
            second.handshake();
            brokers.runRecoveryTasks();
            RecoveringBrokers.reopen(second, 1);
            assertFalse(brokers.connection.isRecovering());
            assertEquals("later", expectPublish(second, 1).text(), "the publish still held goes out once back");
            second.expectNothing();
            assertTrue(later.toCompletableFuture().isDone());
            assertFalse(later.toCompletableFuture().isCompletedExceptionally());
        }
    }

    @Test
    void heldPublishesGoOutInOrderBeforeALaterOne() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            ch.publish("", "q", false, PROPS, text("h1"));
            ch.publishNoOutcome("", "q", false, PROPS, text("h2"));
            ch.publish("", "q", false, PROPS, text("h3"));
            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            ch.publish("", "q", false, PROPS, text("after"));
            assertEquals("h1", expectPublish(second, 1).text());
            assertEquals("h2", expectPublish(second, 1).text());
            assertEquals("h3", expectPublish(second, 1).text());
            assertEquals("after", expectPublish(second, 1).text());
            second.expectNothing();
        }
    }

    /** Confirm mode with a window of two: the third publish and later ones are accepted but held by the channel. */
    /** Channel 1 in confirm mode and a publish held on it: the third, {@code body3}, behind a full window of two. */
    private record ThirdHeld(Channel channel, CompletionStage<PublishOutcome> publish) {}

    /** Opens channel 1 in confirm mode, publishes m1 and m2 (written: the window of two is full) and m3 (held). */
    private static ThirdHeld windowFullWithTheThirdHeld(RecoveringBrokers brokers, TrackedBody body3) {
        FakeBroker broker = brokers.first;
        Channel ch = broker.openChannel(brokers.connection, 1);
        confirmMode(broker, ch);
        ch.publish("", "q", false, PROPS, text("m1"));
        ch.publish("", "q", false, PROPS, text("m2"));
        CompletionStage<PublishOutcome> p3 = ch.publish("", "q", false, PROPS, body3);
        expectPublish(broker, 1);
        expectPublish(broker, 1);
        return new ThirdHeld(ch, p3);
    }

    private static RecoveringBrokers windowOfTwo(RecoveryOptions recovery) {
        return new RecoveringBrokers(new ConnectionOptions()
                .recovery(recovery)
                .publishOptions(new PublishOptions().maxOutstandingConfirms(2)));
    }

    @Test
    void publishesAcceptedButNotWrittenWhenTheConnectionDropsAreWrittenAfterRecoveryInOrderNumberedAgain() {
        try (RecoveringBrokers brokers = windowOfTwo(new RecoveryOptions())) {
            FakeBroker first = brokers.first;
            Channel ch = first.openChannel(brokers.connection, 1);
            confirmMode(first, ch);
            CompletionStage<PublishOutcome> p1 = ch.publish("", "q", false, PROPS, text("m1"));
            CompletionStage<PublishOutcome> p2 = ch.publish("", "q", false, PROPS, text("m2"));
            TrackedBody body3 = new TrackedBody("m3".getBytes(StandardCharsets.UTF_8));
            CompletionStage<PublishOutcome> p3 = ch.publish("", "q", false, PROPS, body3);
            CompletionStage<PublishOutcome> p4 = ch.publish("", "q", false, PROPS, text("m4"));
            assertEquals("m1", expectPublish(first, 1).text());
            assertEquals("m2", expectPublish(first, 1).text());
            first.expectNothing(); // m3 and m4 wait for the window

            brokers.cut();
            for (CompletionStage<PublishOutcome> written : List.of(p1, p2)) {
                PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(written));
                assertTrue(e.mayHaveReachedBroker(), "written before the loss: the broker may have it");
            }
            assertPending(p3); // never written: held across the loss, not failed
            assertPending(p4);
            CompletionStage<PublishOutcome> p5 = ch.publish("", "q", false, PROPS, text("m5"));

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            second.expectAndRelease(1, MethodIds.CONFIRM_SELECT);
            second.send(1, new ConfirmSelectOkEncoder());
            assertFalse(brokers.connection.isRecovering());
            assertEquals("m3", expectPublish(second, 1).text(), "accepted before the loss: first after it");
            assertEquals("m4", expectPublish(second, 1).text());
            second.expectNothing(); // m5, made during recovery, waits behind them for the new window
            body3.assertReleasedOnce();

            ack(second, 1, 1, false); // the recovered channel numbers from 1 again: 1 is m3
            assertTrue(p3.toCompletableFuture().join().isConfirmed());
            assertPending(p4);
            assertEquals("m5", expectPublish(second, 1).text());
            ack(second, 1, 3, true);
            assertTrue(p4.toCompletableFuture().join().isConfirmed());
            assertTrue(p5.toCompletableFuture().join().isConfirmed());
            second.expectNothing();
        }
    }

    @Test
    void publishesHeldWhenOnlyTheChannelIsLostAreWrittenOnTheReopenedChannelFirst() {
        try (RecoveringBrokers brokers = windowOfTwo(new RecoveryOptions())) {
            FakeBroker broker = brokers.first;
            TrackedBody body3 = new TrackedBody("m3".getBytes(StandardCharsets.UTF_8));
            ThirdHeld held = windowFullWithTheThirdHeld(brokers, body3);
            Channel ch = held.channel();
            CompletionStage<PublishOutcome> p3 = held.publish();
            broker.expectNothing(); // m3 waits for the window

            // RabbitMQ's consumer acknowledgement timeout closes the channel alone: it is reopened on the same
            // connection, and m3, accepted before, is not failed but written there first
            broker.sendChannelClose(
                    1,
                    io.warren.codec.base.ReplyCode.PRECONDITION_FAILED,
                    "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: "
                            + "1800000 ms.",
                    0,
                    0);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertPending(p3);
            CompletionStage<PublishOutcome> p4 = ch.publish("", "q", false, PROPS, text("m4"));
            RecoveringBrokers.reopen(broker, 1);
            broker.expectAndRelease(1, MethodIds.CONFIRM_SELECT);
            broker.send(1, new ConfirmSelectOkEncoder());
            brokers.runAllTasks();
            assertEquals("m3", expectPublish(broker, 1).text(), "accepted before the loss: first after it");
            assertEquals("m4", expectPublish(broker, 1).text());
            body3.assertReleasedOnce();
            ack(broker, 1, 2, true);
            assertTrue(p3.toCompletableFuture().join().isConfirmed());
            assertTrue(p4.toCompletableFuture().join().isConfirmed());
            assertEquals(1, brokers.connections(), "the connection was not touched");
        }
    }

    @Test
    void aPublishHeldAcrossTheLossStillWaitsAtMostTheTimeout() {
        try (RecoveringBrokers brokers =
                windowOfTwo(new RecoveryOptions().publishWaitTimeout(Duration.ofSeconds(10)))) {
            TrackedBody body3 = new TrackedBody("m3".getBytes(StandardCharsets.UTF_8));
            CompletionStage<PublishOutcome> p3 =
                    windowFullWithTheThirdHeld(brokers, body3).publish();
            brokers.cut(); // the attempt at 1 ms hangs in its handshake
            assertPending(p3);
            advance(brokers, 11);
            assertFailedNotWritten(p3);
            body3.assertReleasedOnce();
        }
    }

    @Test
    void failFastFailsAPublishHeldAtTheLossAsNotWritten() {
        RecoveryOptions options =
                new RecoveryOptions().publishDuringRecovery(RecoveryOptions.PublishDuringRecovery.FAIL_FAST);
        try (RecoveringBrokers brokers = windowOfTwo(options)) {
            TrackedBody body3 = new TrackedBody("m3".getBytes(StandardCharsets.UTF_8));
            CompletionStage<PublishOutcome> p3 =
                    windowFullWithTheThirdHeld(brokers, body3).publish();
            brokers.cut();
            assertFailedNotWritten(p3);
            body3.assertReleasedOnce();
        }
    }

    @Test
    void failFastRefusesAPublishDuringRecoveryAtOnceAndItIsNeverSent() {
        RecoveryOptions options =
                new RecoveryOptions().publishDuringRecovery(RecoveryOptions.PublishDuringRecovery.FAIL_FAST);
        try (RecoveringBrokers brokers = new RecoveringBrokers(options)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            TrackedBody body = new TrackedBody("refused".getBytes(StandardCharsets.UTF_8));
            CompletionStage<PublishOutcome> refused = ch.publish("", "q", false, PROPS, body);
            assertFailedNotWritten(refused);
            body.assertReleasedOnce();

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            second.expectNothing();
        }
    }

    /**
     * The broker rolls a transaction back with its connection: a transactional channel neither carries over a publish
     * it held at the loss nor holds one made during recovery (written after it, either would join the next
     * transaction); both fail as not written, and nothing is written on the recovered channel but its tx.select.
     */
    @Test
    void aTransactionalChannelCarriesAndHoldsNothingAcrossTheLoss() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            CompletionStage<Void> selected = ch.txSelect();
            brokers.first.expectAndRelease(1, MethodIds.TX_SELECT);
            brokers.first.send(1, new TxSelectOkEncoder());
            selected.toCompletableFuture().join();
            aPublishHeldAtTheLossFailsNotWritten(brokers, ch);
            TrackedBody duringRecovery = new TrackedBody("during".getBytes(StandardCharsets.UTF_8));
            assertFailedNotWritten(ch.publish("", "q", false, PROPS, duringRecovery));
            duringRecovery.assertReleasedOnce();
            recoveredTransactionalWithNothingElse(brokers);
        }
    }

    /**
     * tx.select on the wire, its select-ok not back when the connection drops: the broker may have begun the
     * transaction, so a publish held then is not carried over either, and the recovered channel is transactional.
     */
    @Test
    void aPublishHeldWhileTxSelectAwaitsItsReplyIsNotCarriedOver() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            CompletionStage<Void> selected = ch.txSelect();
            brokers.first.expectAndRelease(1, MethodIds.TX_SELECT); // no select-ok
            aPublishHeldAtTheLossFailsNotWritten(brokers, ch);
            assertInstanceOf(ConnectionLostException.class, failure(selected));
            recoveredTransactionalWithNothingElse(brokers);
        }
    }

    /** The connection blocked, a publish held by it, then the loss: failed as without recovery, the loss its cause. */
    private static void aPublishHeldAtTheLossFailsNotWritten(RecoveringBrokers brokers, Channel ch) {
        brokers.first.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
        TrackedBody heldAtLoss = new TrackedBody("held".getBytes(StandardCharsets.UTF_8));
        CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, heldAtLoss);
        brokers.first.expectNothing();
        brokers.cut();
        assertInstanceOf(ConnectionLostException.class, failure(held).getCause());
        heldAtLoss.assertReleasedOnce();
    }

    /** Recovery reopens channel 1 and selects tx again, and writes nothing more on it. */
    private static void recoveredTransactionalWithNothingElse(RecoveringBrokers brokers) {
        FakeBroker second = brokers.cutAndReconnectAfterLoss();
        RecoveringBrokers.reopen(second, 1);
        second.expectAndRelease(1, MethodIds.TX_SELECT);
        second.send(1, new TxSelectOkEncoder());
        second.expectNothing();
    }
}
