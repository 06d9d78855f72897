package io.warren.impl;

import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.warren.BackPressureException;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.metrics.CountingMetrics;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code failedToPublish} counts a publish refused or failed while its channel is being recovered once, as the
 * publisher counts one refused on a closed channel, and never one that is written after recovery.
 */
class RecoveryPublishFailedCountTest {

    private static final BasicProperties PROPS = BasicProperties.EMPTY;
    /** PublishOptions' smallest maxPendingBytes. */
    private static final int MIN_PENDING = 65536;

    private final CountingMetrics metrics = new CountingMetrics();

    private RecoveringBrokers brokers(RecoveryOptions recovery) {
        return brokers(new ConnectionOptions().recovery(recovery));
    }

    private RecoveringBrokers brokers(ConnectionOptions options) {
        return new RecoveringBrokers(options, metrics);
    }

    private static void advance(RecoveringBrokers brokers, long seconds) {
        brokers.first.client.advanceTimeBy(seconds, TimeUnit.SECONDS);
        brokers.runRecoveryTasks();
    }

    @Test
    void aPublishRefusedUnderFailFastIsCounted() {
        RecoveryOptions options =
                new RecoveryOptions().publishDuringRecovery(RecoveryOptions.PublishDuringRecovery.FAIL_FAST);
        try (RecoveringBrokers brokers = brokers(options)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            failure(ch.publish("", "q", false, PROPS, text("refused")));
            assertEquals(1, metrics.failedToPublish());
            assertThrows(
                    PublishNotConfirmedException.class,
                    () -> ch.publishNoOutcome("", "q", false, PROPS, text("refused too")));
            assertEquals(2, metrics.failedToPublish());
        }
    }

    @Test
    void aPublishRefusedBecauseTheHoldIsFullIsCountedAndTheHeldOneIsNot() {
        ConnectionOptions options = new ConnectionOptions()
                .recovery(new RecoveryOptions())
                .publishOptions(new PublishOptions().maxPendingBytes(MIN_PENDING));
        try (RecoveringBrokers brokers = brokers(options)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            // the first is held whatever its size; it fills the hold
            byte[] large = new byte[MIN_PENDING];
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, large);
            assertInstanceOf(BackPressureException.class, failure(ch.publish("", "q", false, PROPS, text("refused"))));
            assertEquals(1, metrics.failedToPublish());

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            assertEquals(large.length, expectPublish(second, 1).body().length);
            assertFalse(held.toCompletableFuture().isCompletedExceptionally());
            assertEquals(1, metrics.failedToPublish());
        }
    }

    @Test
    void aHeldPublishWhoseWaitRunsOutIsCounted() {
        try (RecoveringBrokers brokers = brokers(new RecoveryOptions().publishWaitTimeout(Duration.ofSeconds(10)))) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut(); // the attempt at 1 ms hangs in its handshake
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, text("held"));
            advance(brokers, 11);
            failure(held);
            assertEquals(1, metrics.failedToPublish());
        }
    }

    @Test
    void publishesHeldWhenTheApplicationClosesTheConnectionDuringRecoveryAreCountedEach() {
        try (RecoveringBrokers brokers = brokers(new RecoveryOptions())) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut(); // the attempt at 1 ms hangs in its handshake
            CompletionStage<PublishOutcome> h1 = ch.publish("", "q", false, PROPS, text("h1"));
            ch.publishNoOutcome("", "q", false, PROPS, text("h2"));
            CompletionStage<PublishOutcome> h3 = ch.publish("", "q", false, PROPS, text("h3"));
            assertPending(h1);
            brokers.connection.close();
            brokers.runAllTasks();
            failure(h1);
            failure(h3);
            assertEquals(3, metrics.failedToPublish());
        }
    }

    @Test
    void aHeldPublishWrittenAfterRecoveryIsNotCounted() {
        try (RecoveringBrokers brokers = brokers(new RecoveryOptions())) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, text("held"));
            ch.publishNoOutcome("", "q", false, PROPS, text("held too"));
            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            assertEquals("held", expectPublish(second, 1).text());
            assertEquals("held too", expectPublish(second, 1).text());
            assertEquals(PublishOutcome.SENT, held.toCompletableFuture().join());
            assertEquals(0, metrics.failedToPublish());
        }
    }

    /** Confirm mode, a window of one: the second publish is accepted and held by the channel when it is lost. */
    private static CompletionStage<PublishOutcome> secondHeldByTheWindow(RecoveringBrokers brokers) {
        FakeBroker broker = brokers.first;
        Channel ch = broker.openChannel(brokers.connection, 1);
        PublishFixture.confirmMode(broker, ch);
        ch.publish("", "q", false, PROPS, text("m1"));
        CompletionStage<PublishOutcome> second = ch.publish("", "q", false, PROPS, text("m2"));
        expectPublish(broker, 1);
        broker.expectNothing();
        return second;
    }

    private static ConnectionOptions windowOfOne(RecoveryOptions recovery) {
        return new ConnectionOptions()
                .recovery(recovery)
                .publishOptions(new PublishOptions().maxOutstandingConfirms(1));
    }

    @Test
    void aPublishCarriedOverTheLossWhoseWaitRunsOutIsCountedOnce() {
        try (RecoveringBrokers brokers =
                brokers(windowOfOne(new RecoveryOptions().publishWaitTimeout(Duration.ofSeconds(10))))) {
            CompletionStage<PublishOutcome> carried = secondHeldByTheWindow(brokers);
            brokers.cut(); // m1 fails unconfirmed (counted apart); m2 is carried over
            long unconfirmed = metrics.failedToPublish();
            assertPending(carried);
            advance(brokers, 11);
            failure(carried);
            assertEquals(unconfirmed + 1, metrics.failedToPublish());
        }
    }

    @Test
    void aPublishCarriedOverTheLossAndAbandonedIsCountedOnce() {
        try (RecoveringBrokers brokers = brokers(windowOfOne(new RecoveryOptions()))) {
            CompletionStage<PublishOutcome> carried = secondHeldByTheWindow(brokers);
            brokers.cut();
            long unconfirmed = metrics.failedToPublish();
            assertPending(carried);
            brokers.connection.close();
            brokers.runAllTasks();
            failure(carried);
            assertEquals(unconfirmed + 1, metrics.failedToPublish());
        }
    }
}
