package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.codec.Frame;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicConsume;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.MethodIds;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A consumer whose queue holds the connection's reading paused when the connection is lost holds it on the
 * recovered connection too, until it drains: its memory stays bounded across a recovery.
 */
class RecoveryReadPauseTest {

    private static final byte[] BODY = "m".getBytes(StandardCharsets.UTF_8);

    private static void deliver(FakeBroker broker, String tag, long deliveryTag) {
        broker.sendDeliver(1, tag, deliveryTag, false, BasicProperties.builder().build(), BODY);
    }

    private static ConsumerHandle consume(
            FakeBroker broker, Channel ch, String tag, ConsumeOptions options, List<Long> seen) {
        var stage = ch.consume("q", new ConsumeOptions(options).consumerTag(tag), d -> seen.add(d.deliveryTag()));
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag(tag));
        return stage.toCompletableFuture().join();
    }

    /** The restore of channel 1 with consumers {@code tags} (in the order they were started). */
    private static void restore(FakeBroker broker, String... tags) {
        RecoveringBrokers.reopen(broker, 1);
        for (String tag : tags) {
            Frame consume = broker.expect(1, MethodIds.BASIC_CONSUME);
            try {
                assertEquals(
                        tag,
                        new BasicConsume()
                                .wrap(consume.payload(), consume.payload().readerIndex())
                                .consumerTagAsString(),
                        "the consumers' restore order");
            } finally {
                consume.release();
            }
            broker.send(1, new BasicConsumeOkEncoder().consumerTag(tag));
        }
    }

    @Test
    void aConsumerOverItsHighWaterMarkAtTheLossKeepsTheRecoveredConnectionsReadingPaused() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    brokers.first, ch, "c", new ConsumeOptions().noAck(true).waterMarks(2, 4), seen);
            c.pause();
            for (long t = 1; t <= 4; t++) {
                deliver(brokers.first, "c", t);
            }
            assertEquals(1, brokers.first.handler.readPauses());

            FakeBroker second = brokers.cutAndReconnect();
            restore(second, "c");
            assertFalse(brokers.connection.isRecovering());
            assertEquals(1, second.handler.readPauses(), "the consumer still holds 4 deliveries, over its mark");
            assertFalse(second.client.config().isAutoRead(), "the recovered connection does not read");

            c.resume();
            brokers.runAllTasks();
            assertEquals(List.of(1L, 2L, 3L, 4L), seen);
            assertEquals(0, second.handler.readPauses());
            assertTrue(second.client.config().isAutoRead(), "drained: the recovered connection reads again");
            deliver(second, "c", 1);
            // the new channel's tag 1 continues above the 4 seen before the loss (RecoveryDeliveryTagTest)
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L), seen);
        }
    }

    @Test
    void twoPausedConsumersDoNotStallTheRestoreAndBothHoldReadingUntilTheyDrain() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumeOptions noAck = new ConsumeOptions().noAck(true).waterMarks(2, 4);
            ConsumerHandle a = consume(brokers.first, ch, "a", noAck, seen);
            ConsumerHandle b = consume(brokers.first, ch, "b", noAck, seen);
            a.pause();
            b.pause();
            for (long t = 1; t <= 8; t++) {
                deliver(brokers.first, t <= 4 ? "a" : "b", t);
            }
            assertEquals(2, brokers.first.handler.readPauses());

            FakeBroker second = brokers.cutAndReconnect();
            // the second consume-ok is read although the first consumer already holds reading paused: the
            // restore's own replies must get through, or a consumer that never drains would stall recovery
            restore(second, "a", "b");
            assertFalse(brokers.connection.isRecovering(), "recovery completed");
            assertEquals(2, second.handler.readPauses());
            assertFalse(second.client.config().isAutoRead());

            a.resume();
            brokers.runAllTasks();
            assertEquals(1, second.handler.readPauses());
            assertFalse(second.client.config().isAutoRead(), "b still holds reading");
            b.resume();
            brokers.runAllTasks();
            assertEquals(0, second.handler.readPauses());
            assertTrue(second.client.config().isAutoRead());
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L), seen);
        }
    }

    /**
     * Consumers holding reading paused wait for the restore's second pass. When the channel closes in the first (a
     * sibling's basic.consume refused), they end with the channel's close rather than wait for ever, and a cancel held
     * for one of them completes.
     */
    @Test
    void pausedConsumersWhoseChannelClosesDuringTheRestoreEnd() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumeOptions noAck = new ConsumeOptions().noAck(true).waterMarks(2, 4);
            ConsumerHandle paused = consume(brokers.first, ch, "paused", noAck, seen);
            ConsumerHandle cancelled = consume(brokers.first, ch, "cancelled", noAck, seen);
            consume(brokers.first, ch, "refused", noAck, seen);
            paused.pause();
            cancelled.pause();
            for (long t = 1; t <= 8; t++) {
                deliver(brokers.first, t <= 4 ? "paused" : "cancelled", t);
            }
            assertEquals(2, brokers.first.handler.readPauses());

            brokers.cut();
            java.util.concurrent.CompletionStage<Void> cancel = cancelled.cancel();
            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            second.expectAndRelease(1, MethodIds.BASIC_CONSUME); // "refused": the one not holding reading paused
            // a refusal that ends the channel (a 403 or 404 would end that consumer only, and re-open the channel)
            second.sendChannelClose(1, 406, "PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q'", 60, 20);
            second.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();

            assertFalse(brokers.connection.isRecovering());
            assertTrue(cancel.toCompletableFuture().isDone(), "the cancel held through the outage completed");
            assertFalse(cancelled.isActive());
            assertFalse(paused.isActive(), "not left waiting for a second pass that did not come");
            assertTrue(paused.endFuture().toCompletableFuture().isDone());
            second.expectNothing();
        }
    }

    @Test
    void aConsumerHoldingReadingPausedIsRestoredAfterTheOthers() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumeOptions noAck = new ConsumeOptions().noAck(true).waterMarks(2, 4);
            ConsumerHandle a = consume(brokers.first, ch, "a", noAck, seen);
            consume(brokers.first, ch, "b", noAck, seen);
            a.pause();
            for (long t = 1; t <= 4; t++) {
                deliver(brokers.first, "a", t);
            }
            FakeBroker second = brokers.cutAndReconnect();
            // b first: a's deliveries may start once its consume-ok is out, and only the restore's end stops
            // reading, so nothing else of the restore may come after it
            restore(second, "b", "a");
            assertFalse(brokers.connection.isRecovering());
            assertEquals(1, second.handler.readPauses());
            assertFalse(second.client.config().isAutoRead());
            a.resume();
            brokers.runAllTasks();
            assertTrue(second.client.config().isAutoRead());
            assertEquals(List.of(1L, 2L, 3L, 4L), seen);
        }
    }

    @Test
    void aConsumerThatDrainedWhileTheConnectionWasDownDoesNotPauseTheRecoveredOne() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    brokers.first, ch, "c", new ConsumeOptions().noAck(true).waterMarks(2, 4), seen);
            c.pause();
            for (long t = 1; t <= 4; t++) {
                deliver(brokers.first, "c", t);
            }
            brokers.cut();
            c.resume(); // drains during recovery: its resume goes to the lost connection's count
            brokers.runRecoveryTasks();
            assertEquals(List.of(1L, 2L, 3L, 4L), seen);

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            restore(second, "c");
            assertFalse(brokers.connection.isRecovering());
            assertEquals(0, second.handler.readPauses());
            assertTrue(second.client.config().isAutoRead());
        }
    }
}
