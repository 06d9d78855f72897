package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.DeliveryHandler;
import io.warren.GetResponse;
import io.warren.StaleDeliveryException;
import io.warren.codec.Frame;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicGetOkEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.impl.metrics.CountingMetrics;
import io.warren.impl.metrics.MetricsCollector;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * Delivery tags across recovery, without a broker: the tags the application sees on a recovered channel continue
 * above every tag it saw before (the broker numbers the new channel's deliveries from 1 again), so a tag from
 * before the loss is refused locally by {@code Channel.basicAck} and friends instead of naming another message on
 * the new channel, and a new one reaches the broker as the broker's own tag.
 */
class RecoveryDeliveryTagTest {

    private static final byte[] BODY = "m".getBytes(StandardCharsets.UTF_8);

    /** A channel with consumer "c" on queue "q" whose deliveries are kept (retained) in {@code kept}. */
    private static Channel consuming(RecoveringBrokers brokers, List<Delivery> kept) {
        Channel ch = brokers.first.openChannel(brokers.connection, 1);
        consume(brokers.first, ch, new ConsumeOptions().consumerTag("c"), d -> kept.add(d.retain()));
        return ch;
    }

    /** Consumer "c" on queue "q" with {@code options} (manual ack, the default prefetch), answered. */
    private static ConsumerHandle consume(
            FakeBroker broker, Channel ch, ConsumeOptions options, DeliveryHandler handler) {
        CompletionStage<ConsumerHandle> c = ch.consume("q", options, handler);
        answerConsume(broker);
        assertTrue(c.toCompletableFuture().isDone());
        return c.toCompletableFuture().join();
    }

    /** basic.qos with the default prefetch, then basic.consume of "c", answered. */
    private static void answerConsume(FakeBroker broker) {
        broker.expectAndRelease(1, MethodIds.BASIC_QOS);
        broker.send(1, new BasicQosOkEncoder());
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
    }

    /** Recovery to the next broker: channel 1 re-opened and consumer "c" restored. */
    private static FakeBroker recover(RecoveringBrokers brokers) {
        return restore(brokers, brokers.cutAndReconnect());
    }

    /** Answers the restore on {@code next}: channel 1 re-opened, consumer "c" again. */
    private static FakeBroker restore(RecoveringBrokers brokers, FakeBroker next) {
        RecoveringBrokers.reopen(next, 1);
        answerConsume(next);
        brokers.runAllTasks();
        return next;
    }

    private static void deliver(FakeBroker broker, long brokerTag) {
        broker.sendDeliver(1, "c", brokerTag, false, BasicProperties.EMPTY, BODY);
    }

    private static List<Long> tags(List<Delivery> deliveries) {
        return deliveries.stream().map(Delivery::deliveryTag).toList();
    }

    private static void releaseAll(List<Delivery> deliveries) {
        deliveries.forEach(Delivery::release);
    }

    /** The next settlement the client wrote on channel 1, as the broker reads it. */
    private static String settlement(FakeBroker broker) {
        Frame f = broker.next();
        return f == null ? "nothing" : FakeBroker.settlement(f);
    }

    @Test
    void withoutRecoveryTheTagsAreTheBrokersAndARawAckSendsThemAsTheyAre() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            List<Delivery> kept = new ArrayList<>();
            Channel ch = consuming(brokers, kept);
            try {
                deliver(brokers.first, 1);
                deliver(brokers.first, 2);
                assertEquals(List.of(1L, 2L), tags(kept));
                ch.basicAck(2, false);
                assertEquals("ack 2", settlement(brokers.first));
                ch.basicNack(1, false, true);
                assertEquals("nack 1 requeue", settlement(brokers.first));
                brokers.first.expectNothing();
            } finally {
                releaseAll(kept);
            }
        }
    }

    @Test
    void afterRecoveryTagsContinueAboveEveryTagSeenBeforeForDeliveriesAndGets() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            List<Delivery> kept = new ArrayList<>();
            Channel ch = consuming(brokers, kept);
            try {
                deliver(brokers.first, 1);
                deliver(brokers.first, 2);
                deliver(brokers.first, 3);
                FakeBroker second = recover(brokers);
                // the new channel numbers from 1 again; the application sees 4, 5
                deliver(second, 1);
                deliver(second, 2);
                assertEquals(List.of(1L, 2L, 3L, 4L, 5L), tags(kept));

                CompletionStage<GetResponse> get = ch.basicGet("q", false);
                second.expectAndRelease(1, MethodIds.BASIC_GET);
                second.send(
                        1,
                        new BasicGetOkEncoder()
                                .deliveryTag(3)
                                .exchange("x")
                                .routingKey("rk")
                                .messageCount(0));
                second.sendContent(1, BasicProperties.EMPTY, BODY);
                GetResponse r = get.toCompletableFuture().join();
                try {
                    assertEquals(6, r.deliveryTag());
                    r.ack(); // the response's own settlement sends the broker's tag
                    assertEquals("ack 3", settlement(second));
                } finally {
                    r.release();
                }

                // a second recovery continues above the tags of both channels before it
                FakeBroker third = recover(brokers);
                deliver(third, 1);
                assertEquals(7, kept.get(5).deliveryTag());
                kept.get(5).ack();
                assertEquals("ack 1", settlement(third));
                third.expectNothing();
            } finally {
                releaseAll(kept);
            }
        }
    }

    @Test
    void aRawSettlementOfATagFromBeforeTheLossThrowsStaleDeliveryAndWritesNothing() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            List<Delivery> kept = new ArrayList<>();
            Channel ch = consuming(brokers, kept);
            try {
                deliver(brokers.first, 1);
                deliver(brokers.first, 2);
                brokers.cut();
                // while the channel is lost every tag it could name is the old channel's
                StaleDeliveryException during = assertThrows(StaleDeliveryException.class, () -> ch.basicAck(2, false));
                assertEquals(2, during.deliveryTag());
                assertEquals(1, during.channelNumber());

                FakeBroker second = restore(brokers, brokers.cutAndReconnectAfterLoss());
                deliver(second, 1); // tag 1 on the new channel: another message than the old channel's 1

                StaleDeliveryException ack = assertThrows(StaleDeliveryException.class, () -> ch.basicAck(1, false));
                assertEquals(1, ack.deliveryTag());
                assertThrows(StaleDeliveryException.class, () -> ch.basicAck(2, true));
                assertThrows(StaleDeliveryException.class, () -> ch.basicNack(2, true, true));
                assertThrows(StaleDeliveryException.class, () -> ch.basicReject(1, false));
                second.expectNothing();

                // the new delivery is still pending: its own ack goes out under the broker's tag
                assertEquals(3, kept.get(2).deliveryTag());
                kept.get(2).ack();
                assertEquals("ack 1", settlement(second));
                second.expectNothing();
            } finally {
                releaseAll(kept);
            }
        }
    }

    @Test
    void aRawSettlementOfANewTagSendsTheBrokersTagAndMultipleCoversOnlyTheNewChannel() throws Exception {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            List<Delivery> kept = new ArrayList<>();
            Channel ch = consuming(brokers, kept);
            try {
                deliver(brokers.first, 1);
                deliver(brokers.first, 2);
                FakeBroker second = recover(brokers);
                deliver(second, 1);
                deliver(second, 2);
                deliver(second, 3);
                deliver(second, 4);
                assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), tags(kept));

                // multiple from above the old tags: the broker's tag, covering only the new channel's deliveries
                ch.basicAck(4, true);
                assertEquals("ack 2 multiple", settlement(second));
                ch.basicReject(5, true);
                assertEquals("reject 3 requeue", settlement(second));
                // from another thread: handed to the event loop with the broker's tag already worked out
                Thread t = new Thread(() -> ch.basicNack(6, false, false));
                t.start();
                t.join();
                assertEquals("nack 4", settlement(second));
                second.expectNothing();
            } finally {
                releaseAll(kept);
            }
        }
    }

    @Test
    void manualAckDeliveriesQueuedFromALostConnectionAreDroppedNotHandedToTheHandlerAfterRecovery() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<String> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    brokers.first, ch, new ConsumeOptions().consumerTag("c").initialDemand(0), d -> {
                        seen.add(d.deliveryTag() + (d.redelivered() ? " redelivered" : ""));
                        d.ack();
                    });
            deliver(brokers.first, 1);
            deliver(brokers.first, 2);
            assertEquals(2, c.queued(), "paused: both wait in the consumer's queue");

            FakeBroker second = recover(brokers);
            // the broker requeued both with the lost channel and delivers them again on the new one
            for (long tag = 1; tag <= 2; tag++) {
                second.sendDeliver(1, "c", tag, true, BasicProperties.EMPTY, BODY);
            }
            c.resume();
            brokers.runAllTasks();
            // each message once: the copies from the lost channel never reach the handler (their acks could only
            // throw StaleDeliveryException), the broker's redeliveries do
            assertEquals(List.of("3 redelivered", "4 redelivered"), seen);
            assertEquals("ack 2 multiple", settlement(second));
            second.expectNothing();
            assertEquals(0, c.queued());
        }
    }

    @Test
    void deliveriesOfTheLostChannelStillQueuedDoNotMakeTheRedeliveriesLookBeyondThePrefetch() {
        CountingMetrics metrics = new CountingMetrics();
        try (RecoveringBrokers brokers = new RecoveringBrokers(new io.warren.ConnectionOptions(), metrics)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    brokers.first,
                    ch,
                    new ConsumeOptions().consumerTag("c").prefetch(2).initialDemand(0),
                    d -> {
                        seen.add(d.deliveryTag());
                        d.ack();
                    });
            deliver(brokers.first, 1);
            deliver(brokers.first, 2);

            FakeBroker second = recover(brokers);
            // paused, the two of the lost channel still wait; the broker keeps to the prefetch on the new one
            for (long tag = 1; tag <= 2; tag++) {
                second.sendDeliver(1, "c", tag, true, BasicProperties.EMPTY, BODY);
            }
            assertEquals(0, metrics.deliveriesBeyondPrefetch(), "the broker sent no more than the prefetch");
            c.resume();
            brokers.runAllTasks();
            assertEquals(List.of(3L, 4L), seen);
            second.sendDeliver(1, "c", 3, false, BasicProperties.EMPTY, BODY);
            brokers.runAllTasks();
            assertEquals(0, metrics.deliveriesBeyondPrefetch());
        }
    }

    /**
     * Deliveries of the lost channel still queued for a paused consumer leave its queue when recovery starts it again,
     * without demand. Before, they stayed until the application took demand, and the broker's redeliveries queued
     * behind them: twice the prefetch, which reached the high-water mark and stopped the recovered connection's
     * reading.
     */
    @Test
    void deliveriesOfTheLostChannelQueuedForAPausedConsumerLeaveAtOnceSoTheRedeliveriesDoNotStopReading() {
        CountingMetrics metrics = new CountingMetrics();
        try (RecoveringBrokers brokers = new RecoveringBrokers(new io.warren.ConnectionOptions(), metrics)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = pausedWithTwo(brokers, ch, 2, 4, seen);
            assertEquals(2, c.queued());

            FakeBroker second = recover(brokers);
            assertEquals(0, c.queued(), "dropped without demand");
            assertEquals(2, metrics.staleDeliveriesDropped());
            for (long tag = 1; tag <= 2; tag++) {
                second.sendDeliver(1, "c", tag, true, BasicProperties.EMPTY, BODY);
            }
            assertEquals(2, c.queued());
            assertEquals(0, second.handler.readPauses());
            assertTrue(second.client.config().isAutoRead());

            c.resume();
            brokers.runAllTasks();
            assertEquals(List.of(3L, 4L), seen);
            assertEquals(List.of("ack 1", "ack 2"), second.written()); // half the prefetch: each at once
        }
    }

    /**
     * A paused consumer whose deliveries of the lost channel hold reading paused (its high-water mark) carries the
     * pause over to the recovered connection, and lets it go as soon as it drops them: the resume goes to the
     * connection that counts the pause. Before, the recovered connection did not read until the application took
     * demand, though nothing it had was for the application.
     */
    @Test
    void aPauseHeldOnlyByDeliveriesOfTheLostChannelEndsWithTheRecovery() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = pausedWithTwo(brokers, ch, 1, 2, seen);
            assertEquals(1, brokers.first.handler.readPauses(), "at its high-water mark");

            FakeBroker second = recover(brokers);
            assertFalse(brokers.connection.isRecovering());
            assertEquals(0, c.queued());
            assertEquals(0, second.handler.readPauses());
            assertTrue(second.client.config().isAutoRead(), "the recovered connection reads");

            second.sendDeliver(1, "c", 1, true, BasicProperties.EMPTY, BODY);
            c.fetch(1);
            brokers.runAllTasks();
            assertEquals(List.of(3L), seen);
        }
    }

    @Test
    void anAsyncConsumerHoldingDeliveriesFromALostConnectionDropsThemToo() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<String> seen = new ArrayList<>();
            CompletionStage<ConsumerHandle> stage = ch.consumeAsync(
                    "q", new ConsumeOptions().consumerTag("c").concurrency(2).initialDemand(0), d -> {
                        seen.add(d.deliveryTag() + (d.redelivered() ? " redelivered" : ""));
                        d.ack();
                        return null;
                    });
            answerConsume(brokers.first);
            ConsumerHandle c = stage.toCompletableFuture().join();
            deliver(brokers.first, 1); // counted in flight, held for want of the application's demand
            deliver(brokers.first, 2);

            FakeBroker second = recover(brokers);
            second.sendDeliver(1, "c", 1, true, BasicProperties.EMPTY, BODY);
            c.resume();
            brokers.runAllTasks();
            assertEquals(List.of("3 redelivered"), seen);
            assertEquals("ack 1", settlement(second));
            second.expectNothing();
        }
    }

    /**
     * A delivery counted in flight that took the last unit of the application's demand and waits on the executor
     * when its channel is lost gives the unit back for its redelivered copy, unless the application paused
     * meanwhile: then the copy waits for the next fetch. Before, the unit came back over the pause and the copy
     * reached the handler after pause() returned.
     */
    @Test
    void aDeliveryLostOnTheExecutorGivesNoDemandBackOverAPause() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            ArrayDeque<Runnable> executor = new ArrayDeque<>(); // run by the test, task by task
            List<String> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    brokers.first,
                    ch,
                    new ConsumeOptions()
                            .consumerTag("c")
                            .executor(executor::add)
                            .concurrency(2)
                            .initialDemand(1),
                    d -> {
                        seen.add(d.deliveryTag() + (d.redelivered() ? " redelivered" : ""));
                        d.ack();
                    });
            deliver(brokers.first, 1);
            executor.poll().run(); // the drain: the delivery takes the unit and is started on the executor
            assertEquals(1, executor.size(), "the delivery waits on the executor");

            FakeBroker second = recover(brokers);
            c.pause();
            executor.poll().run(); // lost with its channel: dropped
            second.sendDeliver(1, "c", 1, true, BasicProperties.EMPTY, BODY);
            brokers.runAllTasks();
            runAll(executor);
            assertEquals(List.of(), seen, "paused before the lost delivery gave its unit back");
            assertEquals(1, c.queued(), "the copy is held");

            c.fetch(1);
            runAll(executor);
            assertEquals(List.of("2 redelivered"), seen);
        }
    }

    private static void runAll(ArrayDeque<Runnable> executor) {
        Runnable task;
        while ((task = executor.poll()) != null) {
            task.run();
        }
    }

    /**
     * A delivery of the lost channel dropped from the queue takes no unit of the application's demand: a pause made
     * while it is dropped (here from inside the drop) stops the redelivery behind it. Before, the drop gave a unit
     * back after taking it, over the pause, and one more delivery reached the handler after pause() returned. The
     * consumer's executor is run by the test, so that the redelivery and the demand come before the drain that drops
     * the copy (recovery asks for that drain at once, demand or not).
     */
    @Test
    void aPauseWhileADeliveryOfTheLostChannelIsDroppedStopsTheOneBehindIt() {
        ConsumerHandle[] consumer = new ConsumerHandle[1];
        MetricsCollector pausesOnDrop = new MetricsCollector() {
            @Override
            public void staleDeliveryDropped() {
                consumer[0].pause();
            }
        };
        try (RecoveringBrokers brokers = new RecoveringBrokers(new io.warren.ConnectionOptions(), pausesOnDrop)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            ArrayDeque<Runnable> executor = new ArrayDeque<>(); // run by the test, task by task
            List<String> seen = new ArrayList<>();
            consumer[0] = consume(
                    brokers.first,
                    ch,
                    new ConsumeOptions()
                            .consumerTag("c")
                            .executor(executor::add)
                            .initialDemand(0),
                    d -> {
                        seen.add(d.deliveryTag() + (d.redelivered() ? " redelivered" : ""));
                        d.ack();
                    });
            deliver(brokers.first, 1);
            runAll(executor); // the drain stops for demand

            FakeBroker second = recover(brokers);
            assertEquals(1, executor.size(), "the drain that drops the copy of the lost channel waits");
            second.sendDeliver(1, "c", 1, true, BasicProperties.EMPTY, BODY);
            consumer[0].fetch(1);
            runAll(executor);
            assertEquals(List.of(), seen, "paused as the copy of the lost channel was dropped");
            consumer[0].fetch(1);
            runAll(executor);
            assertEquals(List.of("2 redelivered"), seen);
        }
    }

    /**
     * A consumer of prefetch 2 with no demand and the given water marks, which acks what it is handed (its tags in
     * {@code seen}), and the lost channel's deliveries 1 and 2 queued for it.
     */
    private static ConsumerHandle pausedWithTwo(
            RecoveringBrokers brokers, Channel ch, int low, int high, List<Long> seen) {
        ConsumerHandle c = consume(
                brokers.first,
                ch,
                new ConsumeOptions()
                        .consumerTag("c")
                        .prefetch(2)
                        .waterMarks(low, high)
                        .initialDemand(0),
                d -> {
                    seen.add(d.deliveryTag());
                    d.ack();
                });
        deliver(brokers.first, 1);
        deliver(brokers.first, 2);
        return c;
    }
}
