package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.WriteBufferWaterMark;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.DeliveryHandler;
import io.warren.GetResponse;
import io.warren.RpcTimeoutException;
import io.warren.StaleDeliveryException;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicCancelOkEncoder;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicGetOkEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.BasicRecoverOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodTable;
import io.warren.impl.consume.ConsumerImpl;
import io.warren.impl.metrics.CountingMetrics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * basic.recover through a scripted broker: RabbitMQ requeues every delivery of the channel still unsettled when it
 * reads the method, answers recover-ok and delivers them again with new tags, and forgets the old ones. So a
 * settlement of a delivery from before it, made once it is written, is refused with {@link StaleDeliveryException}
 * and never written (the broker would close the channel with 406 unknown delivery tag), and nothing from before it
 * still counts as waiting for the application: not in the acks held back, not against the prefetch, and not against
 * the consumer's demand.
 */
class BasicRecoverTest {

    private static final byte[] BODY = "m".getBytes(StandardCharsets.UTF_8);
    private static final String BASIC_RECOVER =
            "method " + MethodTable.lookup(60, 110).name();

    /** Consumer "c" on queue "q" with {@code options} (manual ack, the default prefetch unless set), answered. */
    /** A test's body over a channel whose consumer "c" keeps every delivery ({@link #withKeptDeliveries}). */
    @FunctionalInterface
    private interface KeptDeliveriesTest {
        void run(FakeBroker broker, Channel ch, List<Delivery> kept) throws Exception;
    }

    /**
     * Runs {@code test} on channel 1 of a fresh broker, with a consumer "c" (manual ack) that retains every delivery
     * into {@code kept}; releases them afterwards, whatever the test did.
     */
    private static void withKeptDeliveries(KeptDeliveriesTest test) throws Exception {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, new ConsumeOptions(), d -> kept.add(d.retain()));
            try {
                test.run(broker, ch, kept);
            } finally {
                kept.forEach(Delivery::release);
            }
        }
    }

    private static ConsumerHandle consume(
            FakeBroker broker, Channel ch, ConsumeOptions options, DeliveryHandler handler) {
        CompletionStage<ConsumerHandle> c = ch.consume("q", options.consumerTag("c"), handler);
        answerConsume(broker);
        return c.toCompletableFuture().join();
    }

    /** basic.qos, then basic.consume of "c", answered. */
    private static void answerConsume(FakeBroker broker) {
        broker.expectAndRelease(1, MethodIds.BASIC_QOS);
        broker.send(1, new BasicQosOkEncoder());
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
    }

    private static void deliver(FakeBroker broker, long tag, boolean redelivered) {
        broker.sendDeliver(1, "c", tag, redelivered, BasicProperties.EMPTY, BODY);
    }

    /** basic.recover, checked on the wire (nothing held before it); recover-ok is for the test to send. */
    private static CompletionStage<Void> recover(FakeBroker broker, Channel ch) {
        CompletionStage<Void> recovered = ch.basicRecover(true);
        broker.expectAndRelease(1, MethodIds.BASIC_RECOVER);
        return recovered;
    }

    private static void recoverOk(FakeBroker broker, CompletionStage<Void> recovered) {
        broker.send(1, new BasicRecoverOkEncoder());
        recovered.toCompletableFuture().join();
    }

    private static List<Long> tags(List<? extends Delivery> deliveries) {
        return deliveries.stream().map(Delivery::deliveryTag).toList();
    }

    private static long ageMillis(ConsumerHandle c) {
        return TimeUnit.NANOSECONDS.toMillis(((ConsumerImpl) c).oldestUnacknowledgedAgeNanos());
    }

    @Test
    void aTagFromBeforeBasicRecoverIsRefusedAsStaleAndNothingIsWritten() throws Exception {
        withKeptDeliveries((broker, ch, kept) -> {
            deliver(broker, 1, false);
            deliver(broker, 2, false);
            deliver(broker, 3, false);
            ch.basicAck(1, false); // made before: goes ahead of basic.recover
            CompletionStage<Void> recovered = ch.basicRecover(true);
            assertEquals(List.of("ack 1", BASIC_RECOVER), broker.written());

            // written: the broker requeues 2 and 3 when it reads it, and forgets their tags
            StaleDeliveryException during = assertThrows(StaleDeliveryException.class, () -> ch.basicAck(2, false));
            assertEquals(2, during.deliveryTag());
            assertEquals(1, during.channelNumber());
            assertTrue(during.getMessage().contains("basic.recover"), during.getMessage());
            recoverOk(broker, recovered);
            deliver(broker, 4, true); // the redeliveries, with new tags
            deliver(broker, 5, true);
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L), tags(kept));

            assertThrows(StaleDeliveryException.class, () -> ch.basicAck(3, false));
            assertThrows(StaleDeliveryException.class, () -> ch.basicAck(3, true));
            assertThrows(StaleDeliveryException.class, () -> ch.basicNack(2, true, true));
            assertThrows(StaleDeliveryException.class, () -> ch.basicNack(2, false, false));
            assertThrows(StaleDeliveryException.class, () -> ch.basicReject(3, true));
            broker.expectNothing();
            assertTrue(ch.isOpen());

            // a multiple ack from above the recover covers the redeliveries: the unacknowledged ones the broker
            // knows up to it
            ch.basicAck(5, true);
            assertEquals(List.of("ack 5 multiple"), broker.written());
        });
    }

    /**
     * The tags are marked stale right before basic.recover's frame is written, not after: the write runs callbacks
     * itself (Netty reports crossing the high-water mark from inside it, and an application's writability listener
     * hears of it there), and a settlement made in one must be refused already. Accepted, it would be written after
     * basic.recover, to a broker that has forgotten its tag and closes the channel (406).
     */
    @Test
    void aSettlementMadeByACallbackOfBasicRecoversOwnWriteIsRefusedAsStale() throws Exception {
        withKeptDeliveries((broker, ch, kept) -> {
            deliver(broker, 1, false);
            List<Object> settled = new ArrayList<>();
            ch.addWritabilityListener((channel, writable) -> {
                if (!writable && settled.isEmpty()) {
                    try {
                        channel.basicAck(1, false);
                        settled.add("accepted");
                    } catch (StaleDeliveryException e) {
                        settled.add(e);
                    }
                }
            });
            // the next frame written, basic.recover's, takes the connection over its high-water mark
            broker.client.config().setWriteBufferWaterMark(new WriteBufferWaterMark(1, 2));
            CompletionStage<Void> recovered = ch.basicRecover(true);
            assertEquals(List.of(BASIC_RECOVER), broker.written(), "nothing written after basic.recover");
            assertEquals(1, settled.size(), "the listener ran inside the write: " + settled);
            assertInstanceOf(StaleDeliveryException.class, settled.get(0));
            recoverOk(broker, recovered);
            assertTrue(ch.isOpen());
        });
    }

    @Test
    void aDeliveryOrGetResponseFromBeforeBasicRecoverIsStaleThroughItsObjectToo() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, new ConsumeOptions(), d -> kept.add(d.retain()));
            deliver(broker, 1, false);
            CompletionStage<GetResponse> get = ch.basicGet("q", false);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(
                    1,
                    new BasicGetOkEncoder()
                            .deliveryTag(2)
                            .exchange("x")
                            .routingKey("rk")
                            .messageCount(0));
            broker.sendContent(1, BasicProperties.EMPTY, BODY);
            GetResponse got = get.toCompletableFuture().join();
            try {
                recoverOk(broker, recover(broker, ch));

                Delivery before = kept.get(0);
                StaleDeliveryException stale = assertThrows(StaleDeliveryException.class, before::ack);
                assertEquals(1, stale.deliveryTag());
                assertThrows(StaleDeliveryException.class, () -> before.nack(true));
                assertThrows(StaleDeliveryException.class, () -> before.reject(false));
                assertThrows(StaleDeliveryException.class, got::ack);
                broker.expectNothing();

                deliver(broker, 3, true);
                kept.get(1).ack();
                assertEquals(List.of("ack 3"), broker.written());
                assertTrue(ch.isOpen());
            } finally {
                kept.forEach(Delivery::release);
                got.release();
            }
        }
    }

    /**
     * The broker answers recover-ok after it requeued: a delivery that comes between basic.recover and recover-ok
     * was sent before the broker read basic.recover, so it is requeued too and comes again. It never reaches the
     * handler, and its tag is stale.
     */
    @Test
    void aDeliveryBetweenBasicRecoverAndRecoverOkIsRequeuedTooAndNeverReachesTheHandler() {
        CountingMetrics metrics = new CountingMetrics();
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions(), null, metrics)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, new ConsumeOptions(), d -> kept.add(d.retain()));
            try {
                deliver(broker, 1, false);
                CompletionStage<Void> recovered = recover(broker, ch);
                deliver(broker, 2, false);
                recoverOk(broker, recovered);
                deliver(broker, 3, true);
                deliver(broker, 4, true);
                assertEquals(List.of(1L, 3L, 4L), tags(kept));
                assertEquals(1, metrics.staleDeliveriesDropped());
                assertThrows(StaleDeliveryException.class, () -> ch.basicAck(2, false));
                ch.basicAck(4, true);
                assertEquals(List.of("ack 4 multiple"), broker.written());
            } finally {
                kept.forEach(Delivery::release);
            }
        }
    }

    /**
     * What basic.recover requeued waits for no settlement any more: it does not age as unacknowledged, it does not
     * hold the redeliveries' acks back from coalescing, and "every outstanding delivery" does not name it. Before,
     * the nack below went out as "nack 2 multiple requeue", a tag the broker no longer knows (406).
     */
    @Test
    void nothingRequeuedByBasicRecoverWaitsForASettlementAnyMore() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            ConsumerHandle c = consume(broker, ch, new ConsumeOptions(), d -> kept.add(d.retain()));
            try {
                broker.client.freezeTime(); // the ages below are the test's clock only
                deliver(broker, 1, false);
                deliver(broker, 2, false);
                broker.client.advanceTimeBy(5, TimeUnit.SECONDS);
                assertEquals(5_000, ageMillis(c));
                recoverOk(broker, recover(broker, ch));
                assertEquals(0, ageMillis(c), "the broker requeued both: nothing waits for the application");

                deliver(broker, 3, true);
                deliver(broker, 4, true);
                kept.get(2).ack();
                kept.get(3).ack();
                assertEquals(List.of("ack 4 multiple"), broker.written(), "one ack: 1 and 2 hold nothing open");
                ch.basicNack(0, true, true); // every outstanding delivery: there is none
                broker.expectNothing();
                assertTrue(ch.isOpen());
            } finally {
                kept.forEach(Delivery::release);
            }
        }
    }

    /**
     * Deliveries still queued for a paused consumer when basic.recover goes out were requeued: with their
     * redeliveries the queue holds twice the prefetch, which is not the broker's fault, and they take none of the
     * application's demand (before, they were counted beyond the prefetch, and the fetch below handed them to the
     * handler, whose acks the broker would refuse with 406).
     */
    @Test
    void deliveriesQueuedAtBasicRecoverAreDroppedAndCountNeitherAgainstThePrefetchNorTheDemand() {
        CountingMetrics metrics = new CountingMetrics();
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions(), null, metrics)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<String> seen = new ArrayList<>();
            ConsumerHandle c =
                    consume(broker, ch, new ConsumeOptions().prefetch(2).initialDemand(0), d -> {
                        seen.add(d.deliveryTag() + (d.redelivered() ? " redelivered" : ""));
                        d.ack();
                    });
            deliver(broker, 1, false);
            deliver(broker, 2, false);
            assertEquals(2, c.queued());

            recoverOk(broker, recover(broker, ch));
            deliver(broker, 3, true);
            deliver(broker, 4, true);
            assertEquals(0, metrics.deliveriesBeyondPrefetch(), "the broker sent no more than the prefetch");

            c.fetch(2);
            broker.client.runPendingTasks();
            assertEquals(List.of("3 redelivered", "4 redelivered"), seen);
            assertEquals(List.of("ack 3", "ack 4"), broker.written()); // half the prefetch: each at once
            assertEquals(0, c.queued());
            assertEquals(2, metrics.staleDeliveriesDropped());
        }
    }

    /**
     * Deliveries queued for a paused consumer when basic.recover goes out leave its queue at once, without demand.
     * Before, with their redeliveries behind them the queue reached its high-water mark and stopped the whole
     * connection's reading until the application took demand.
     */
    @Test
    void deliveriesQueuedAtBasicRecoverLeaveAtOnceSoTheRedeliveriesDoNotStopTheConnectionsReading() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumerHandle c = consume(
                    broker,
                    ch,
                    new ConsumeOptions().prefetch(2).waterMarks(2, 4).initialDemand(0),
                    Delivery::ack);
            deliver(broker, 1, false);
            deliver(broker, 2, false);
            assertEquals(2, c.queued());

            recoverOk(broker, recover(broker, ch));
            assertEquals(0, c.queued(), "dropped without demand");
            deliver(broker, 3, true);
            deliver(broker, 4, true);
            assertEquals(2, c.queued());
            assertTrue(broker.client.config().isAutoRead());
            assertEquals(0, broker.handler.readPauses());
        }
    }

    /** The same for deliveries counted in flight and held for the application's demand: the unit comes back. */
    @Test
    void anAsyncConsumerHoldingDeliveriesAtBasicRecoverDropsThemAndKeepsItsDemand() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<String> seen = new ArrayList<>();
            CompletionStage<ConsumerHandle> stage = ch.consumeAsync(
                    "q", new ConsumeOptions().consumerTag("c").concurrency(2).initialDemand(0), d -> {
                        seen.add(d.deliveryTag() + (d.redelivered() ? " redelivered" : ""));
                        d.ack();
                        return null;
                    });
            answerConsume(broker);
            ConsumerHandle c = stage.toCompletableFuture().join();
            deliver(broker, 1, false); // counted in flight, held for want of the application's demand
            deliver(broker, 2, false);

            recoverOk(broker, recover(broker, ch));
            deliver(broker, 3, true);
            c.fetch(1);
            broker.client.runPendingTasks();
            assertEquals(List.of("3 redelivered"), seen);
            assertEquals(List.of("ack 3"), broker.written());
        }
    }

    /**
     * A consumer cancelled with deliveries from before basic.recover still queued gives back only what the broker
     * still counts: before, their requeueing rejects named tags it had forgotten (406).
     */
    @Test
    void deliveriesRequeuedByBasicRecoverAreNotRejectedAgainWhenTheConsumerEnds() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumerHandle c = consume(broker, ch, new ConsumeOptions().initialDemand(0), Delivery::ack);
            deliver(broker, 1, false);
            deliver(broker, 2, false);
            recoverOk(broker, recover(broker, ch));
            deliver(broker, 3, true);

            CompletionStage<Void> cancelled = c.cancel();
            broker.expectAndRelease(1, MethodIds.BASIC_CANCEL);
            broker.send(1, new BasicCancelOkEncoder().consumerTag("c"));
            cancelled.toCompletableFuture().join();
            assertEquals(List.of("reject 3 requeue"), broker.written());
            assertTrue(ch.isOpen());
        }
    }

    /**
     * On the event loop a released delivery object is reused once its tag is settled. One requeued by basic.recover
     * unsettled must never be: the application may still settle it once after its release, and must be told it is
     * stale rather than settle the message the object was reused for.
     */
    @Test
    void aDeliveryObjectRequeuedByBasicRecoverIsNotReusedSoItStaysStale() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> seen = new ArrayList<>(); // borrowed: released when the handler returns
            consume(broker, ch, new ConsumeOptions(), seen::add);
            deliver(broker, 1, false);
            deliver(broker, 2, false);
            recoverOk(broker, recover(broker, ch));
            deliver(broker, 3, true);
            deliver(broker, 4, true);

            assertEquals(4, new HashSet<>(seen).size(), "1 and 2 went back unsettled: their objects are not reused");
            assertEquals(1, seen.get(0).deliveryTag());
            assertThrows(StaleDeliveryException.class, () -> seen.get(0).ack());
            broker.expectNothing();
            seen.get(2).ack();
            assertEquals(List.of("ack 3"), broker.written());
        }
    }

    /**
     * A basic.recover whose recover-ok comes after its timeout still requeued: what arrives after the late
     * recover-ok is the broker's redelivery, handed over and settled as usual.
     */
    @Test
    void aLateRecoverOkEndsTheWaitAllTheSame() {
        ConnectionOptions options = new ConnectionOptions().rpcTimeout(Duration.ofSeconds(5));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, new ConsumeOptions(), d -> kept.add(d.retain()));
            try {
                deliver(broker, 1, false);
                CompletableFuture<Void> recovered = recover(broker, ch).toCompletableFuture();
                broker.client.advanceTimeBy(6, TimeUnit.SECONDS);
                broker.client.runPendingTasks();
                assertInstanceOf(
                        RpcTimeoutException.class, recovered.handle((v, e) -> e).join());
                broker.send(1, new BasicRecoverOkEncoder());
                deliver(broker, 2, true);
                assertEquals(List.of(1L, 2L), tags(kept));
                assertThrows(StaleDeliveryException.class, () -> kept.get(0).ack());
                kept.get(1).ack();
                assertEquals(List.of("ack 2"), broker.written());
            } finally {
                kept.forEach(Delivery::release);
            }
        }
    }
}
