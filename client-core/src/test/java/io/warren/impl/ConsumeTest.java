package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.CompositeByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionClosedException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerCancelledException;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.GetResponse;
import io.warren.codec.Frame;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicCancel;
import io.warren.codec.method.BasicCancelEncoder;
import io.warren.codec.method.BasicCancelOkEncoder;
import io.warren.codec.method.BasicConsume;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicGetOkEncoder;
import io.warren.codec.method.BasicQos;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.BasicRecoverOkEncoder;
import io.warren.codec.method.ConnectionClose;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodTable;
import io.warren.codec.method.TxCommitOkEncoder;
import io.warren.impl.metrics.CountingMetrics;
import io.warren.testing.LeakRecorder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * Consuming through a scripted broker ({@link FakeBroker}): the handler on the event loop (the default
 * context), so every step is deterministic. Threads (executors, virtual threads, Vert.x) are covered against
 * the real broker in client-it.
 */
class ConsumeTest {

    private static final byte[] HELLO = "hello".getBytes(StandardCharsets.UTF_8);

    /** A consumer started on channel 1 with tag {@code tag}, its basic.consume checked and answered. */
    private static ConsumerHandle consume(
            FakeBroker broker, Channel ch, String tag, ConsumeOptions options, io.warren.DeliveryHandler handler) {
        CompletionStage<ConsumerHandle> stage = ch.consume("q", options, handler);
        // without one of its own, a manual-ack consumer gets the default unless the channel has its own qos
        int prefetch = options.prefetch() >= 0 || options.noAck() || ((ChannelImpl) ch).hasOwnQos()
                ? options.prefetch()
                : ConsumeOptions.DEFAULT_PREFETCH;
        if (prefetch >= 0) {
            expectQos(broker, prefetch, false);
            broker.expectNothing(); // consume waits for qos-ok
            broker.send(1, new BasicQosOkEncoder());
        }
        Frame consume = broker.expect(1, MethodIds.BASIC_CONSUME);
        BasicConsume view =
                new BasicConsume().wrap(consume.payload(), consume.payload().readerIndex());
        assertEquals("q", view.queueAsString());
        assertEquals(options.consumerTag(), view.consumerTagAsString());
        assertEquals(options.noAck(), view.noAck());
        consume.release();
        assertFalse(stage.toCompletableFuture().isDone());
        broker.send(1, new BasicConsumeOkEncoder().consumerTag(tag));
        ConsumerHandle handle = stage.toCompletableFuture().join();
        assertEquals(tag, handle.consumerTag());
        return handle;
    }

    private static void deliver(FakeBroker broker, String tag, long deliveryTag, byte[]... body) {
        broker.sendDeliver(
                1,
                tag,
                deliveryTag,
                false,
                BasicProperties.builder().messageId("m-" + deliveryTag).build(),
                body);
    }

    /** Every frame the client wrote, as text (settlements) or method names. */
    private static List<String> written(FakeBroker broker) {
        return broker.written();
    }

    @Test
    void deliveriesReachTheHandlerOnTheEventLoopAsBorrowedViews() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<String> seen = new ArrayList<>();
            List<Delivery> kept = new ArrayList<>();
            ConsumerHandle c = consume(broker, ch, "ctag-1", new ConsumeOptions().prefetch(10), d -> {
                assertTrue(broker.client.eventLoop().inEventLoop());
                seen.add(d.consumerTag() + " " + d.deliveryTag() + " " + d.exchange() + " " + d.routingKey() + " "
                        + d.redelivered() + " " + d.header().messageIdAsString() + " "
                        + d.properties().messageId() + " "
                        + d.body().toString(StandardCharsets.UTF_8));
                assertSame(ch, d.channel());
                kept.add(d);
            });
            assertEquals("q", c.queue());
            assertSame(ch, c.channel());
            assertTrue(c.isActive());
            deliver(broker, "ctag-1", 1, HELLO);
            deliver(broker, "ctag-1", 2, "two ".getBytes(), "frames".getBytes());
            assertEquals(List.of("ctag-1 1 x rk false m-1 m-1 hello", "ctag-1 2 x rk false m-2 m-2 two frames"), seen);
            // released when the handler returned: the buffers are gone, the tag and settlement still work
            for (Delivery d : kept) {
                assertEquals(0, d.refCnt());
                assertThrows(IllegalReferenceCountException.class, d::body);
            }
            kept.get(1).ack(true);
            assertEquals(List.of("ack 2 multiple"), written(broker));
        }
    }

    @Test
    void aRetainedDeliveryOutlivesTheHandlerAndABodyInFramesIsAComposite() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), d -> kept.add(d.retain()));
            deliver(broker, "c", 1, "a".getBytes(), "b".getBytes(), "c".getBytes());
            Delivery d = kept.get(0);
            assertEquals(1, d.refCnt());
            assertInstanceOf(CompositeByteBuf.class, d.body());
            assertEquals("abc", d.body().toString(StandardCharsets.UTF_8));
            assertTrue(d.release());
            d.ack();
            assertEquals(List.of("ack 1"), written(broker));
        }
    }

    /**
     * bodyBytes / bodyAsString copy the readable bytes (a body in one frame and one in three), leave the reader
     * index alone, and the copies outlive the delivery; after the release they refuse, as body() does.
     */
    @Test
    void bodyBytesAndBodyAsStringAreCopiesTakenWhileTheDeliveryIsValid() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<byte[]> arrays = new ArrayList<>();
            List<String> strings = new ArrayList<>();
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), d -> {
                int readerIndex = d.body().readerIndex();
                byte[] copy = d.bodyBytes();
                assertEquals(readerIndex, d.body().readerIndex(), "bodyBytes does not read the body away");
                copy[0] = 'X'; // the copy is ours: the body is untouched
                arrays.add(copy);
                strings.add(d.bodyAsString(StandardCharsets.UTF_8));
                assertEquals(readerIndex, d.body().readerIndex(), "bodyAsString does not read the body away");
                d.body().skipBytes(1); // a handler that read a byte: the copies start at the reader index
                strings.add(d.bodyAsString(StandardCharsets.UTF_8));
                kept.add(d);
            });
            deliver(broker, "c", 1, "h\u00e9llo".getBytes(StandardCharsets.UTF_8));
            deliver(broker, "c", 2, "a".getBytes(), "b".getBytes(), "c".getBytes());
            assertArrayEquals("X\u00e9llo".getBytes(StandardCharsets.UTF_8), arrays.get(0));
            assertArrayEquals("Xbc".getBytes(StandardCharsets.UTF_8), arrays.get(1));
            assertEquals(List.of("h\u00e9llo", "\u00e9llo", "abc", "bc"), strings);
            for (Delivery d : kept) {
                assertEquals(0, d.refCnt());
                assertThrows(IllegalReferenceCountException.class, d::bodyBytes);
                assertThrows(IllegalReferenceCountException.class, () -> d.bodyAsString(StandardCharsets.UTF_8));
            }
        }
    }

    /** Checks the basic.qos the client wrote on channel 1 (not answered here). */
    private static void expectQos(FakeBroker broker, int prefetch, boolean global) {
        Frame qos = broker.expect(1, MethodIds.BASIC_QOS);
        BasicQos view = new BasicQos().wrap(qos.payload(), qos.payload().readerIndex());
        assertEquals(prefetch, view.prefetchCount());
        assertEquals(global, view.global());
        qos.release();
    }

    /** Checks and answers the channel's own basic.qos and lets its acceptance reach the consumers. */
    private static void channelQos(FakeBroker broker, CompletionStage<Void> qos, int prefetch, boolean global) {
        expectQos(broker, prefetch, global);
        broker.send(1, new BasicQosOkEncoder());
        qos.toCompletableFuture().join();
        broker.client.runPendingTasks();
    }

    /** Deliveries {@code from..to} to consumer {@code tag} in ONE buffer: one socket read, one read batch. */
    private static io.netty.buffer.ByteBuf oneRead(String tag, long from, long to) {
        io.netty.buffer.CompositeByteBuf read = FakeBroker.ALLOC.compositeBuffer(Integer.MAX_VALUE);
        for (long t = from; t <= to; t++) {
            read.addComponent(
                    true,
                    io.warren.codec.Frames.method(
                            FakeBroker.ALLOC,
                            1,
                            new BasicDeliverEncoder()
                                    .consumerTag(tag)
                                    .deliveryTag(t)
                                    .exchange("x")
                                    .routingKey("rk")));
            read.addComponent(
                    true,
                    io.warren.codec.Frames.contentHeader(FakeBroker.ALLOC, 1, HELLO.length, BasicProperties.EMPTY));
            read.addComponent(
                    true,
                    io.warren.codec.Frames.body(FakeBroker.ALLOC, 1, io.netty.buffer.Unpooled.wrappedBuffer(HELLO)));
        }
        return read;
    }

    @Test
    void acksMadeOnTheEventLoopAreCoalescedOncePerPassUpToALimit() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            consume(broker, ch, "c", new ConsumeOptions().prefetch(100), Delivery::ack);
            // 20 deliveries in one socket read: EmbeddedChannel runs the loop's tasks once, after it
            broker.sendRaw(oneRead("c", 1, 20));
            assertEquals(List.of("ack 20 multiple"), written(broker));
            deliver(broker, "c", 21, HELLO);
            assertEquals(List.of("ack 21"), written(broker));
            // 60 in one read: no more than half the prefetch (50) waits for the end of the pass
            broker.sendRaw(oneRead("c", 22, 81));
            assertEquals(List.of("ack 71 multiple", "ack 81 multiple"), written(broker));
        }
    }

    @Test
    void acksAreFlushedDuringALongReadBatchSoThePrefetchWindowStaysOpen() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Integer> flushedBefore = new ArrayList<>();
            // acknowledges every 25th with multiple=true, as warren-perf -A 25 does
            consume(broker, ch, "c", new ConsumeOptions().prefetch(100), d -> {
                if (d.deliveryTag() % 25 == 1 && d.deliveryTag() > 1) {
                    // what reached the socket before this delivery, in the same read batch
                    flushedBefore.add(broker.client.outboundMessages().size());
                }
                if (d.deliveryTag() % 25 == 0) {
                    d.ack(true);
                }
            });
            // the whole window in one read (a broker with a backlog): before, no ack left until the batch ended,
            // so the broker saw 100 unacknowledged deliveries and sent nothing more until then
            broker.sendRaw(oneRead("c", 1, 100));
            assertEquals(List.of(0, 1, 1), flushedBefore, "the first half of the window acked within the read batch");
            assertEquals(List.of("ack 50 multiple", "ack 100 multiple"), written(broker));
        }
    }

    @Test
    void theChannelsOwnQosBoundsTheAcksHeldBackForConsumersWithoutAPrefetch() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            channelQos(broker, ch.basicQos(10), 10, false);
            consume(broker, ch, "c", new ConsumeOptions(), Delivery::ack);
            broker.sendRaw(oneRead("c", 1, 10));
            assertEquals(List.of("ack 5 multiple", "ack 10 multiple"), written(broker));
        }
    }

    @Test
    void aManualAckConsumerWithoutAPrefetchGetsTheDefaultOneAndANoAckConsumerNone() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<ConsumerHandle> manual = ch.consume("q", new ConsumeOptions(), Delivery::ack);
            // a paused consumer without a bound would make the broker fill the socket until it drops the connection
            expectQos(broker, ConsumeOptions.DEFAULT_PREFETCH, false);
            broker.send(1, new BasicQosOkEncoder());
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("a"));
            assertEquals("a", manual.toCompletableFuture().join().consumerTag());

            CompletionStage<ConsumerHandle> noAck = ch.consume("q", new ConsumeOptions().noAck(true), d -> {});
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME); // RabbitMQ ignores a prefetch without acks
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("b"));
            assertEquals("b", noAck.toCompletableFuture().join().consumerTag());

            CompletionStage<ConsumerHandle> unbounded =
                    ch.consume("q", new ConsumeOptions().prefetch(0), Delivery::ack);
            expectQos(broker, 0, false); // asked for explicitly
            broker.send(1, new BasicQosOkEncoder());
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            assertEquals("c", unbounded.toCompletableFuture().join().consumerTag());
            broker.expectNothing();
        }
    }

    @Test
    void aGlobalChannelQosBoundsTheAcksHeldBackEvenForConsumersWithALargerPrefetch() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            channelQos(broker, ch.basicQos(0, 10, true), 10, true);
            consume(broker, ch, "c", new ConsumeOptions().prefetch(1000), Delivery::ack);
            broker.sendRaw(oneRead("c", 1, 10));
            assertEquals(List.of("ack 5 multiple", "ack 10 multiple"), written(broker));
        }
    }

    @Test
    void aSmallPrefetchHoldsBackAtMostHalfOfItsWindow() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            consume(broker, ch, "c", new ConsumeOptions().prefetch(10), Delivery::ack);
            broker.sendRaw(oneRead("c", 1, 10));
            assertEquals(List.of("ack 5 multiple", "ack 10 multiple"), written(broker));
        }
    }

    /**
     * An ack made while basic.recover waits for its turn goes before it: the broker forgets the tags of what it
     * requeues, so an ack of one written after basic.recover closes the channel (406 unknown delivery tag). Here the
     * delivery's ack and the reply that lets basic.recover go are read in one pass of the event loop, before its
     * acks are flushed.
     */
    @Test
    void anAckMadeWhileBasicRecoverWaitsItsTurnGoesBeforeIt() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            consume(broker, ch, "c", new ConsumeOptions(), Delivery::ack);
            CompletionStage<Long> purged = ch.queuePurge("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_PURGE);
            CompletionStage<Void> recovered = ch.basicRecover(true);
            broker.expectNothing(); // behind the purge
            broker.client.writeInbound(
                    io.warren.codec.Frames.method(
                            FakeBroker.ALLOC,
                            1,
                            new BasicDeliverEncoder()
                                    .consumerTag("c")
                                    .deliveryTag(1)
                                    .exchange("x")
                                    .routingKey("rk")),
                    io.warren.codec.Frames.contentHeader(FakeBroker.ALLOC, 1, HELLO.length, BasicProperties.EMPTY),
                    io.warren.codec.Frames.body(FakeBroker.ALLOC, 1, io.netty.buffer.Unpooled.wrappedBuffer(HELLO)),
                    io.warren.codec.Frames.method(
                            FakeBroker.ALLOC, 1, new io.warren.codec.method.QueuePurgeOkEncoder().messageCount(0)));
            purged.toCompletableFuture().join();
            assertEquals(
                    List.of("ack 1", "method " + MethodTable.lookup(60, 110).name()), written(broker));
            broker.send(1, new BasicRecoverOkEncoder());
            recovered.toCompletableFuture().join();
        }
    }

    /** RabbitMQ answers requeue=false with 540 NOT_IMPLEMENTED, closing the connection: refused, nothing written. */
    @Test
    void basicRecoverWithoutRequeueIsRefused() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletableFuture<Void> recovered = ch.basicRecover(false).toCompletableFuture();
            broker.expectNothing();
            assertTrue(recovered.isCompletedExceptionally());
            assertInstanceOf(
                    IllegalArgumentException.class,
                    recovered.handle((v, e) -> e).join());
            assertTrue(ch.isOpen());
        }
    }

    @Test
    void outOfOrderAcksNeverCoverAWaitingDelivery() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), d -> kept.add(d.retain()));
            for (long t = 1; t <= 4; t++) {
                deliver(broker, "c", t, HELLO);
            }
            kept.get(1).ack();
            kept.get(3).ack();
            assertEquals(List.of("ack 2", "ack 4"), written(broker));
            kept.get(0).nack(true);
            kept.get(2).reject(false);
            assertEquals(List.of("nack 1 requeue", "reject 3"), written(broker));
            kept.forEach(Delivery::release);
        }
    }

    /**
     * A delivery for a consumer tag the channel does not have is the broker's error: dropped, its tag would be unknown
     * to the acks (a multiple ack would settle a message nobody handled). The connection closes with 505 instead, and
     * the broker gives every unacknowledged message back to the queue.
     */
    @Test
    void aDeliveryForAnUnknownConsumerClosesTheConnection() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), d -> kept.add(d.retain()));
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "unknown", 2, HELLO);
            Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
            assertEquals(
                    505,
                    new ConnectionClose()
                            .wrap(close.payload(), close.payload().readerIndex())
                            .replyCode());
            close.release();
            assertEquals(1, kept.size(), "the unknown consumer's delivery reached nobody");
            kept.forEach(Delivery::release);
        }
    }

    @Test
    void settlingTwiceOrANoAckDeliveryIsRefused() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "manual", new ConsumeOptions(), kept::add);
            consume(broker, ch, "auto", new ConsumeOptions().noAck(true).consumerTag("auto"), kept::add);
            deliver(broker, "manual", 1, HELLO);
            deliver(broker, "auto", 2, HELLO);
            kept.get(0).ack();
            assertThrows(IllegalStateException.class, () -> kept.get(0).ack());
            assertThrows(IllegalStateException.class, () -> kept.get(0).nack(true));
            IllegalStateException noAck =
                    assertThrows(IllegalStateException.class, () -> kept.get(1).ack());
            assertTrue(noAck.getMessage().contains("noAck"), noAck.getMessage());
            assertEquals(List.of("ack 1"), written(broker));
            // Channel.basicAck of a tag already settled is dropped, not sent for the broker to close the channel
            ch.basicAck(1, false);
            assertEquals(List.of(), written(broker));
        }
    }

    /**
     * "Every outstanding delivery" (tag 0 with multiple) when none is outstanding settles nothing: nothing is written
     * and nothing is logged as a fault, whether nothing was delivered yet or everything is settled. Before, the first
     * wrote a pointless basic.ack and counted it as an acknowledged message, and the second logged a warning that tag
     * 0 was already settled.
     */
    @Test
    void settlingEveryOutstandingDeliveryWhenNoneIsOutstandingWritesAndWarnsNothing() {
        CountingMetrics metrics = new CountingMetrics();
        try (FakeBroker broker = new FakeBroker(new io.warren.ConnectionOptions(), null, metrics)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            String beforeAnyDelivery = Logged.during(() -> {
                ch.basicAck(0, true);
                ch.basicNack(0, true, true);
                assertEquals(List.of(), written(broker));
            });
            assertEquals("", beforeAnyDelivery);
            assertEquals(0, metrics.acknowledged());
            assertEquals(0, metrics.rejected());

            consume(broker, ch, "c", new ConsumeOptions(), Delivery::ack);
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, HELLO);
            assertEquals(List.of("ack 1", "ack 2"), written(broker));
            String allSettled = Logged.during(() -> {
                ch.basicAck(0, true);
                ch.basicNack(0, true, false);
                assertEquals(List.of(), written(broker));
            });
            assertEquals("", allSettled);
            assertEquals(2, metrics.acknowledged());
            assertEquals(0, metrics.rejected());

            // a second settlement of a tag is still worth a warning (the application settles twice)
            String twice = Logged.during(() -> ch.basicAck(2, false));
            assertTrue(twice.contains("delivery tag 2 is already settled"), twice);
            assertTrue(ch.isOpen());
        }
    }

    @Test
    void getResponsesAndDeliveriesShareTheChannelsTagsAndAccessors() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), d -> kept.add(d.retain()));
            deliver(broker, "c", 1, HELLO);
            CompletionStage<GetResponse> get = ch.basicGet("q", false);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(
                    1,
                    new BasicGetOkEncoder()
                            .deliveryTag(2)
                            .exchange("ex")
                            .routingKey("key")
                            .messageCount(5));
            broker.sendContent(
                    1, BasicProperties.builder().contentType("text/plain").build(), HELLO);
            deliver(broker, "c", 3, HELLO);
            GetResponse r = get.toCompletableFuture().join();
            Delivery asDelivery = r;
            assertNull(asDelivery.consumerTag());
            assertEquals(2, asDelivery.deliveryTag());
            assertEquals("ex", asDelivery.exchange());
            assertEquals("key", asDelivery.routingKey());
            assertEquals("text/plain", asDelivery.header().contentTypeAsString());
            assertEquals("text/plain", asDelivery.properties().contentType());
            assertEquals(5, r.messageCount());
            kept.get(0).ack();
            kept.get(1).ack();
            // 1 and 3 acked, 2 (the get) waits: no multiple ack may cover it
            assertEquals(List.of("ack 1", "ack 3"), written(broker));
            r.ack();
            r.close();
            assertEquals(0, r.refCnt());
            assertEquals(List.of("ack 2"), written(broker));
            kept.forEach(Delivery::release);
        }
    }

    @Test
    void settlementsGoOutBeforeALaterSynchronousMethodOrClose() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), kept::add);
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, HELLO);
            kept.get(0).ack();
            CompletionStage<Void> commit = ch.txCommit();
            kept.get(1).ack();
            ch.close();
            assertEquals(List.of("ack 1", "method tx.commit", "ack 2", "method channel.close"), written(broker));
            broker.send(1, new TxCommitOkEncoder());
            broker.sendChannelCloseOk(1);
            assertTrue(commit.toCompletableFuture().isCompletedExceptionally(), "failed by the close");
        }
    }

    @Test
    void theBrokersCancelEndsTheConsumerWithAClearReason() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumerHandle c = consume(broker, ch, "c", new ConsumeOptions(), d -> {});
            broker.send(1, new BasicCancelEncoder().consumerTag("c").nowait(false));
            Frame ok = broker.expect(1, MethodIds.BASIC_CANCEL_OK);
            ok.release();
            AmqpException reason = c.endFuture().toCompletableFuture().join();
            ConsumerCancelledException e = assertInstanceOf(ConsumerCancelledException.class, reason);
            assertEquals("c", e.consumerTag());
            assertEquals("q", e.queue());
            assertTrue(e.getMessage().contains("cancelled by the broker"), e.getMessage());
            assertFalse(c.isActive());
            assertTrue(ch.isOpen());
            // (the broker sends it nothing after its cancel: a delivery for it now would be the broker's error,
            // aDeliveryForAnUnknownConsumerClosesTheConnection)
            assertTrue(c.cancel().toCompletableFuture().isDone(), "cancelling an ended consumer completes at once");
            broker.expectNothing();
        }
    }

    @Test
    void cancelByTheApplicationRequeuesWhatTheHandlerDidNotGet() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = consume(broker, ch, "c", new ConsumeOptions().prefetch(10), d -> {
                seen.add(d.deliveryTag());
                d.ack();
            });
            deliver(broker, "c", 1, HELLO);
            c.pause();
            deliver(broker, "c", 2, HELLO);
            deliver(broker, "c", 3, HELLO);
            assertEquals(2, c.queued());
            CompletionStage<Void> cancel = c.cancel();
            assertEquals(List.of("ack 1", "method basic.cancel"), written(broker));
            deliver(broker, "c", 4, HELLO); // before cancel-ok: still the consumer's
            broker.send(1, new BasicCancelOkEncoder().consumerTag("c"));
            assertTrue(cancel.toCompletableFuture().isDone());
            assertNull(c.endFuture().toCompletableFuture().join());
            assertEquals(List.of(1L), seen);
            assertEquals(List.of("reject 2 requeue", "reject 3 requeue", "reject 4 requeue"), written(broker));
        }
    }

    /**
     * With concurrency above 1 each delivery is a task on the executor: one still waiting there when the consumer
     * ends is requeued without reaching the handler, as a queued one is. Before, the handler still got it.
     */
    @Test
    void aDeliveryStillWaitingOnTheExecutorWhenTheConsumerEndsDoesNotReachTheHandler() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            java.util.Deque<Runnable> tasks = new java.util.ArrayDeque<>();
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    broker,
                    ch,
                    "c",
                    new ConsumeOptions().prefetch(10).executor(tasks::add).concurrency(2),
                    d -> seen.add(d.deliveryTag()));
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, HELLO);
            List<Runnable> started = new ArrayList<>(); // the deliveries' own tasks, kept waiting
            Runnable task;
            while ((task = tasks.pollFirst()) != null) {
                if (task instanceof Delivery) {
                    started.add(task);
                } else {
                    task.run(); // the queue's drain
                }
            }
            assertEquals(2, started.size(), "both started on the executor");
            CompletionStage<Void> cancel = c.cancel();
            broker.expectAndRelease(1, MethodIds.BASIC_CANCEL);
            broker.send(1, new BasicCancelOkEncoder().consumerTag("c"));
            assertTrue(cancel.toCompletableFuture().isDone());

            started.forEach(Runnable::run);
            broker.client.runPendingTasks();
            assertEquals(List.of(), seen, "the consumer had ended");
            assertEquals(List.of("reject 1 requeue", "reject 2 requeue"), written(broker));
        }
    }

    @Test
    void theChannelsCloseEndsItsConsumersAndReleasesWhatIsQueued() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumerHandle c = consume(broker, ch, "c", new ConsumeOptions(), d -> {});
            c.pause();
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, "a".getBytes(), "b".getBytes());
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - unknown delivery tag 9", 60, 80);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            ChannelClosedException e = assertInstanceOf(
                    ChannelClosedException.class,
                    c.endFuture().toCompletableFuture().join());
            assertEquals(406, e.replyCode());
            broker.expectNothing(); // nothing requeued on a closed channel: the broker did it
            // paranoid leak detection fails the test if the two queued deliveries were not released
        }
    }

    @Test
    void theConnectionsCloseEndsConsumersWithItsCause() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl connection = broker.handshake();
            Channel ch = broker.openChannel(connection, 1);
            ConsumerHandle c = consume(broker, ch, "c", new ConsumeOptions(), d -> {});
            c.pause();
            deliver(broker, "c", 1, HELLO);
            broker.client.close();
            assertInstanceOf(
                    ConnectionClosedException.class,
                    c.endFuture().toCompletableFuture().join());
        }
    }

    @Test
    void aTagAboveTheHighestDeliveredIsRefusedLocallyAndNothingIsSent() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            consume(broker, ch, "c", new ConsumeOptions(), d -> {});
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, HELLO);
            // the broker would close the channel with 406 PRECONDITION_FAILED - unknown delivery tag 999999
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ch.basicAck(999999, false));
            assertTrue(
                    e.getMessage().contains("999999") && e.getMessage().contains("highest delivered is 2"),
                    e::getMessage);
            assertThrows(IllegalArgumentException.class, () -> ch.basicAck(3, true));
            assertThrows(IllegalArgumentException.class, () -> ch.basicNack(3, false, true));
            assertThrows(IllegalArgumentException.class, () -> ch.basicReject(3, false));
            broker.expectNothing();
            assertTrue(ch.isOpen());
            ch.basicAck(2, true); // the highest delivered is fine
            assertEquals(List.of("ack 2 multiple"), written(broker));
        }
    }

    @Test
    void settlingOnAClosedChannelIsRefusedWithWhyItClosed() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> kept = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), kept::add);
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, HELLO);
            broker.sendChannelClose(1, 404, "NOT_FOUND - no queue 'q'", 50, 10);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            ChannelClosedException byTag = assertThrows(ChannelClosedException.class, () -> ch.basicAck(1, false));
            assertEquals(404, byTag.replyCode());
            assertEquals(1, byTag.channelNumber());
            assertTrue(byTag.getMessage().contains("delivery tag 1"), byTag::getMessage);
            assertThrows(ChannelClosedException.class, () -> ch.basicNack(2, true, true));
            assertThrows(ChannelClosedException.class, () -> ch.basicReject(2, true));
            ChannelClosedException byDelivery =
                    assertThrows(ChannelClosedException.class, () -> kept.get(1).ack());
            assertEquals(404, byDelivery.replyCode());
            assertThrows(ChannelClosedException.class, () -> kept.get(0).nack(true));
            broker.expectNothing();
        }
    }

    @Test
    void noAckConsumersOverTheirHighWaterMarkStopReadingUntilAllDrained() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumeOptions noAck = new ConsumeOptions().noAck(true).waterMarks(2, 4);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle a = consume(
                    broker, ch, "a", new ConsumeOptions(noAck).consumerTag("a"), d -> seen.add(d.deliveryTag()));
            ConsumerHandle b = consume(
                    broker, ch, "b", new ConsumeOptions(noAck).consumerTag("b"), d -> seen.add(d.deliveryTag()));
            a.pause();
            b.pause();
            for (long t = 1; t <= 4; t++) {
                deliver(broker, "a", t, HELLO);
            }
            assertFalse(broker.client.config().isAutoRead(), "a reached its high-water mark");
            assertEquals(1, broker.handler.readPauses());
            for (long t = 5; t <= 8; t++) {
                deliver(broker, "b", t, HELLO);
            }
            assertEquals(2, broker.handler.readPauses());
            a.resume();
            broker.client.runPendingTasks();
            assertEquals(List.of(1L, 2L, 3L, 4L), seen);
            assertEquals(1, broker.handler.readPauses());
            assertFalse(broker.client.config().isAutoRead(), "b still holds reading");
            b.fetch(2);
            broker.client.runPendingTasks();
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), seen);
            assertEquals(1, broker.handler.readPauses(), "b holds 2, not below its low-water mark of 2");
            b.fetch(1);
            broker.client.runPendingTasks();
            assertEquals(0, broker.handler.readPauses());
            assertTrue(broker.client.config().isAutoRead());
            broker.expectNothing(); // noAck: nothing to settle
            b.resume();
        }
    }

    @Test
    void aBrokerIgnoringThePrefetchIsStoppedAtTheHighWaterMarkAndCounted() {
        CountingMetrics metrics = new CountingMetrics();
        try (FakeBroker broker = new FakeBroker(new io.warren.ConnectionOptions(), null, metrics)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            int prefetch = 10;
            ConsumeOptions options = new ConsumeOptions().prefetch(prefetch);
            int high = options.highWaterMark();
            assertEquals(ConsumeOptions.DEFAULT_HIGH_WATER_MARK, high, "twice a small prefetch is below the floor");
            ConsumerHandle c = consume(broker, ch, "c", options, Delivery::ack);
            c.pause(); // a slow consumer: it takes 100 whenever the connection stops reading
            long sent = 0;
            int stops = 0;
            boolean reading = true;
            while (sent < 3 * high) {
                if (broker.client.config().isAutoRead()) { // a socket delivers only while the channel reads
                    reading = true;
                    deliver(broker, "c", ++sent, HELLO);
                    long queued = sent;
                    assertTrue(
                            c.queued() <= high,
                            () -> "the queue stops at its high-water mark " + high + ", the socket read on: " + queued
                                    + " sent");
                } else {
                    if (reading) {
                        reading = false;
                        stops++;
                        assertEquals(high, c.queued());
                    }
                    c.fetch(100);
                    broker.client.runPendingTasks();
                    written(broker); // the acks, for the broker to ignore
                }
            }
            assertTrue(stops >= 4, "reading stopped at the mark again and again: " + stops);
            assertEquals(sent - prefetch, metrics.deliveriesBeyondPrefetch(), "every delivery past the prefetch");
            c.resume();
            broker.client.runPendingTasks();
            assertTrue(broker.client.config().isAutoRead());
            assertEquals(0, broker.handler.readPauses());
            written(broker);
        }
    }

    /**
     * A paused noAck consumer with {@code dropOverflow}: its queue keeps the first four (its high-water mark), drops
     * and counts what comes after, and the connection never stops reading. Without it, reading stops at the mark
     * ({@link #noAckConsumersOverTheirHighWaterMarkStopReadingUntilAllDrained}).
     */
    @Test
    void aPausedNoAckConsumerThatDropsOverflowKeepsItsQueueBoundedAndTheConnectionReading() {
        CountingMetrics metrics = new CountingMetrics();
        try (FakeBroker broker = new FakeBroker(new io.warren.ConnectionOptions(), null, metrics)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    broker,
                    ch,
                    "c",
                    new ConsumeOptions().noAck(true).waterMarks(2, 4).dropOverflow(true),
                    d -> seen.add(d.deliveryTag()));
            c.pause();
            for (long t = 1; t <= 7; t++) {
                deliver(broker, "c", t, HELLO);
            }
            assertEquals(4, c.queued(), "the queue stops at its high-water mark");
            assertEquals(3, metrics.overflowDeliveriesDropped(), "what came after was dropped, and counted");
            assertTrue(broker.client.config().isAutoRead(), "the connection goes on reading");
            assertEquals(0, broker.handler.readPauses());

            c.resume();
            broker.client.runPendingTasks();
            assertEquals(List.of(1L, 2L, 3L, 4L), seen, "the oldest were kept");
            deliver(broker, "c", 8, HELLO);
            assertEquals(List.of(1L, 2L, 3L, 4L, 8L), seen);
            assertEquals(3, metrics.overflowDeliveriesDropped());
            broker.expectNothing(); // noAck: nothing to settle
        }
    }

    /** dropOverflow is for noAck: with manual acks a dropped delivery would stay unacknowledged at the broker. */
    @Test
    void dropOverflowWithManualAcknowledgementFailsBeforeAnythingIsWritten() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<ConsumerHandle> stage =
                    ch.consume("q", new ConsumeOptions().prefetch(10).dropOverflow(true), Delivery::ack);
            broker.client.runPendingTasks();
            CompletionException e = assertThrows(
                    CompletionException.class, () -> stage.toCompletableFuture().join());
            assertInstanceOf(IllegalArgumentException.class, e.getCause());
            broker.expectNothing();
            assertTrue(ch.isOpen());
        }
    }

    @Test
    void aPausedManualAckConsumerWithAPrefetchDoesNotStopReading() {
        CountingMetrics metrics = new CountingMetrics();
        try (FakeBroker broker = new FakeBroker(new io.warren.ConnectionOptions(), null, metrics)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumerHandle c = consume(broker, ch, "c", new ConsumeOptions().prefetch(8), Delivery::ack);
            c.pause();
            for (long t = 1; t <= 8; t++) {
                deliver(broker, "c", t, HELLO);
            }
            assertEquals(8, c.queued());
            assertTrue(broker.client.config().isAutoRead(), "the prefetch bounds the broker, not the socket");
            assertEquals(0, broker.handler.readPauses());
            assertEquals(0, metrics.deliveriesBeyondPrefetch());
            c.resume();
            // acks wait for at most half the prefetch (4) before they are written
            assertEquals(List.of("ack 4 multiple", "ack 8 multiple"), written(broker));
        }
    }

    @Test
    void handlerFailuresAreLoggedAndTheDeliveryReleased() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Long> seen = new ArrayList<>();
            consume(broker, ch, "c", new ConsumeOptions(), d -> {
                seen.add(d.deliveryTag());
                if (d.deliveryTag() == 1) {
                    throw new IllegalStateException("boom");
                }
                d.ack();
            });
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, HELLO);
            assertEquals(List.of(1L, 2L), seen);
            assertEquals(List.of("ack 2"), written(broker), "1 stays unacknowledged");
        }
    }

    @Test
    void asyncHandlersHoldTheirDeliveryUntilTheStageCompletesAndCountTowardsConcurrency() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<java.util.concurrent.CompletableFuture<Void>> stages = new ArrayList<>();
            List<Delivery> seen = new ArrayList<>();
            CompletionStage<ConsumerHandle> stage = ch.consumeAsync("q", new ConsumeOptions().concurrency(2), d -> {
                seen.add(d);
                var f = new java.util.concurrent.CompletableFuture<Void>();
                stages.add(f);
                return f.thenRun(d::ack);
            });
            expectQos(broker, ConsumeOptions.DEFAULT_PREFETCH, false);
            broker.send(1, new BasicQosOkEncoder());
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            ConsumerHandle c = stage.toCompletableFuture().join();
            for (long t = 1; t <= 4; t++) {
                deliver(broker, "c", t, HELLO);
            }
            assertEquals(2, seen.size(), "two in flight");
            assertEquals(2, c.queued());
            assertEquals("hello", seen.get(0).body().toString(StandardCharsets.UTF_8), "still borrowed");
            stages.get(1).complete(null);
            broker.client.runPendingTasks();
            assertEquals(0, seen.get(1).refCnt());
            assertEquals(3, seen.size());
            c.pause();
            stages.get(0).complete(null);
            broker.client.runPendingTasks();
            assertEquals(3, seen.size(), "paused: the free slot is not used");
            c.resume();
            broker.client.runPendingTasks();
            assertEquals(4, seen.size());
            stages.get(2).complete(null);
            stages.get(3).complete(null);
            // 2 and 1 were flushed as they completed (1 while 3 waited); 3 and 4 in one pass
            assertEquals(List.of("ack 2", "ack 1", "ack 4 multiple"), written(broker));
        }
    }

    /**
     * An asynchronous handler is called one delivery at a time and in order, also for deliveries held for demand
     * and let go by a fetch. Before, each held one was started as its own executor task: on a pool they were called
     * at once and in any order (here the executor runs its tasks last first, as two pool threads may).
     */
    @Test
    void anAsyncHandlerIsCalledInOrderOnDeliveriesHeldForDemand() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            java.util.Deque<Runnable> tasks = new java.util.ArrayDeque<>();
            List<Long> called = new ArrayList<>();
            ConsumerHandle c = heldAsyncConsumer(broker, ch, tasks::add, d -> {
                called.add(d.deliveryTag());
                return null;
            });
            deliver(broker, "a", 1, HELLO);
            deliver(broker, "a", 2, HELLO);
            runLastFirst(tasks);
            assertEquals(List.of(), called, "no demand: both held");
            assertEquals(2, c.queued());

            c.fetch(2);
            runLastFirst(tasks);
            assertEquals(List.of(1L, 2L), called);
            assertEquals(0, c.queued());
        }
    }

    /**
     * A noAck consumer "a" of "q" on channel 1 with an asynchronous handler, its tasks on {@code executor}, two in
     * flight at most, started without demand (what arrives is held until a fetch); consume-ok answered.
     */
    static ConsumerHandle heldAsyncConsumer(
            FakeBroker broker,
            Channel ch,
            java.util.concurrent.Executor executor,
            io.warren.AsyncDeliveryHandler handler) {
        CompletionStage<ConsumerHandle> stage = ch.consumeAsync(
                "q",
                new ConsumeOptions()
                        .noAck(true)
                        .executor(executor)
                        .concurrency(2)
                        .initialDemand(0),
                handler);
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("a"));
        return stage.toCompletableFuture().join();
    }

    private static void runLastFirst(java.util.Deque<Runnable> tasks) {
        Runnable task;
        while ((task = tasks.pollLast()) != null) {
            task.run();
        }
    }

    @Test
    void badOptionsFailBeforeAnythingIsSent() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            Consumer<CompletionStage<ConsumerHandle>> refused =
                    stage -> assertInstanceOf(IllegalArgumentException.class, ChannelTest.failure(stage));
            refused.accept(ch.consume("q", new ConsumeOptions().concurrency(4), d -> {}));
            refused.accept(ch.consume("q", new ConsumeOptions().argument("bad", new Object()), d -> {}));
            refused.accept(ch.consume("q".repeat(300), new ConsumeOptions(), d -> {}));
            refused.accept(ch.consume(null, new ConsumeOptions(), d -> {}));
            assertThrows(IllegalArgumentException.class, () -> new ConsumeOptions().waterMarks(5, 4));
            assertThrows(IllegalArgumentException.class, () -> new ConsumeOptions().prefetch(70000));
            broker.expectNothing();
            assertEquals(
                    Map.of("x-priority", 5, "x-stream-offset", "first"),
                    new ConsumeOptions().priority(5).streamOffset("first").arguments());
        }
    }

    @Test
    void aBasicConsumeThatCannotBeBuiltReleasesTheBasicQosBuiltBeforeIt() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            // basic.qos is built first (it goes first); the argument is refused when basic.consume is built
            CompletionStage<ConsumerHandle> stage =
                    ch.consume("q", new ConsumeOptions().prefetch(10).argument("bad", new Object()), d -> {});
            IllegalArgumentException refused =
                    assertInstanceOf(IllegalArgumentException.class, ChannelTest.failure(stage));
            assertTrue(refused.getMessage().contains("bad"), refused::getMessage);
            broker.expectNothing();
        }
        assertEquals(
                List.of(),
                LeakRecorder.take("ConsumeFrames.basicQos"),
                "the basic.qos frame built before the refusal is released");
    }

    @Test
    void theDefaultWaterMarksLieAboveThePrefetchAndSetOnesAreKept() {
        ConsumeOptions big = new ConsumeOptions().prefetch(2000);
        assertEquals(List.of(2000, 4000), List.of(big.lowWaterMark(), big.highWaterMark()));
        assertEquals(
                List.of(512, 1024),
                List.of(
                        new ConsumeOptions().prefetch(100).lowWaterMark(),
                        new ConsumeOptions().prefetch(100).highWaterMark()));
        ConsumeOptions noAck = new ConsumeOptions().prefetch(2000).noAck(true);
        assertEquals(1024, noAck.highWaterMark(), "with noAck the broker ignores the prefetch");
        assertEquals(1024, new ConsumeOptions(big).prefetch(0).highWaterMark(), "derived marks follow the prefetch");
        ConsumeOptions set = new ConsumeOptions().waterMarks(2, 4).prefetch(2000);
        assertEquals(List.of(2, 4), List.of(set.lowWaterMark(), set.highWaterMark()));
        assertEquals(4, new ConsumeOptions(set).prefetch(10).highWaterMark(), "set marks are kept");
    }

    @Test
    void anInitialDemandOfZeroStartsPausedSoNothingArrivesBeforeTheApplicationAsks() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Long> seen = new ArrayList<>();
            CompletionStage<ConsumerHandle> stage =
                    ch.consume("q", new ConsumeOptions().initialDemand(0), d -> seen.add(d.deliveryTag()));
            expectQos(broker, ConsumeOptions.DEFAULT_PREFETCH, false);
            broker.send(1, new BasicQosOkEncoder());
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
            // consume-ok and the first deliveries in one read: the handle is not even returned yet
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, HELLO);
            ConsumerHandle c = stage.toCompletableFuture().join();
            assertEquals(List.of(), seen);
            assertEquals(2, c.queued());
            c.fetch(1);
            broker.client.runPendingTasks(); // the drain is handed to the consumer's context, the loop
            assertEquals(List.of(1L), seen);
            c.resume();
            broker.client.runPendingTasks();
            assertEquals(List.of(1L, 2L), seen);
        }
    }

    @Test
    void queuedIsExactInTheHandlerWhileARoundIsHandedOver() throws Exception {
        java.util.concurrent.ExecutorService worker = java.util.concurrent.Executors.newSingleThreadExecutor();
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumerHandle[] handle = new ConsumerHandle[2];
            List<Long> onLoop = new ArrayList<>();
            List<Long> onWorker = java.util.Collections.synchronizedList(new ArrayList<>());
            handle[0] = consume(
                    broker,
                    ch,
                    "a",
                    new ConsumeOptions().consumerTag("a").prefetch(10),
                    d -> onLoop.add(handle[0].queued()));
            handle[1] = consume(
                    broker,
                    ch,
                    "b",
                    new ConsumeOptions()
                            .consumerTag("b")
                            .prefetch(10)
                            .executor(worker)
                            .initialDemand(0),
                    d -> onWorker.add(handle[1].queued()));
            handle[0].pause();
            for (long t = 1; t <= 10; t++) {
                deliver(broker, t <= 5 ? "a" : "b", t, HELLO);
            }
            assertEquals(5, handle[0].queued());
            handle[0].resume();
            broker.client.runPendingTasks();
            // the handler holds one, the rest wait: never more than the broker's prefetch allows
            assertEquals(List.of(4L, 3L, 2L, 1L, 0L), onLoop);
            handle[1].resume();
            worker.submit(() -> {}).get(); // the drain ran before this task on the single worker
            assertEquals(List.of(4L, 3L, 2L, 1L, 0L), onWorker);
            assertEquals(0, handle[1].queued());
        } finally {
            worker.shutdownNow();
        }
    }

    @Test
    void onTheEventLoopAReleasedDeliveryIsReusedOnceItsTagIsSettled() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> noAckSeen = new ArrayList<>();
            consume(broker, ch, "n", new ConsumeOptions().noAck(true).consumerTag("n"), noAckSeen::add);
            for (long t = 1; t <= 3; t++) {
                deliver(broker, "n", t, HELLO);
            }
            assertSame(noAckSeen.get(0), noAckSeen.get(2), "noAck: released, so the next message reuses it");

            List<Delivery> seen = new ArrayList<>();
            List<Long> tags = new ArrayList<>();
            consume(broker, ch, "m", new ConsumeOptions().consumerTag("m"), d -> {
                seen.add(d);
                tags.add(d.deliveryTag());
                if (d.deliveryTag() == 6) {
                    d.ack(true); // covers 4, 5, 6
                }
            });
            for (long t = 4; t <= 8; t++) {
                deliver(broker, "m", t, HELLO);
            }
            assertEquals(List.of(4L, 5L, 6L, 7L, 8L), tags);
            assertEquals(
                    3,
                    new java.util.HashSet<>(seen.subList(0, 3)).size(),
                    "4, 5, 6 were unsettled when the next came: new objects");
            assertSame(seen.get(0), seen.get(3), "7 reuses 4's object once 4 is acked");
            assertSame(seen.get(1), seen.get(4), "8 reuses 5's");
            assertEquals(8, seen.get(4).deliveryTag());
            seen.get(4).ack(); // the reused object names its new message
            assertEquals(List.of("ack 6 multiple", "ack 8"), written(broker));
        }
    }

    @Test
    void anExecutorThatRefusesEndsTheConsumerRatherThanRequeueingForEver() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Long> seen = new ArrayList<>();
            ConsumerHandle c = consume(
                    broker,
                    ch,
                    "c",
                    new ConsumeOptions().executor(task -> {
                        throw new java.util.concurrent.RejectedExecutionException("shut down");
                    }),
                    d -> seen.add(d.deliveryTag()));
            deliver(broker, "c", 1, HELLO);
            broker.client.runPendingTasks();
            List<String> out = written(broker);
            assertTrue(out.contains("reject 1 requeue"), () -> "the refused delivery goes back: " + out);
            assertEquals(2, out.size(), () -> "and a basic.cancel: " + out);
            assertTrue(c.isActive(), "until cancel-ok");
            deliver(broker, "c", 2, HELLO); // sent before the broker saw the cancel: requeued, released
            broker.send(1, new BasicCancelOkEncoder().consumerTag("c"));
            broker.client.runPendingTasks();
            assertFalse(c.isActive());
            AmqpException cause = c.endFuture().toCompletableFuture().join();
            assertInstanceOf(java.util.concurrent.RejectedExecutionException.class, cause.getCause());
            assertEquals(List.of("reject 2 requeue"), written(broker));
            assertEquals(List.of(), seen);
        }
    }

    @Test
    void anExecutorThatDropsTheDrainItAcceptedLeavesNothingQueuedWhenTheConsumerEnds() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Runnable> dropped = new ArrayList<>(); // what shutdownNow() returns, never run
            ConsumerHandle c = consume(broker, ch, "c", new ConsumeOptions().executor(dropped::add), d -> {});
            deliver(broker, "c", 1, HELLO);
            deliver(broker, "c", 2, "a".getBytes(), "b".getBytes());
            assertEquals(1, dropped.size(), "one drain for both");
            assertEquals(2, c.queued());

            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - unknown delivery tag 9", 60, 80);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);

            assertInstanceOf(
                    ChannelClosedException.class,
                    c.endFuture().toCompletableFuture().join());
            assertEquals(0, c.queued(), "the end took the drain back and released both");
            dropped.get(0).run(); // run after all: nothing changes
            assertEquals(0, c.queued());
            broker.expectNothing();
        }
    }

    @Test
    void aBodyRetainedWithoutItsDeliveryOutlivesTheReuseOfTheDeliveryObject() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> seen = new ArrayList<>();
            List<io.netty.buffer.ByteBuf> bodies = new ArrayList<>();
            consume(broker, ch, "n", new ConsumeOptions().noAck(true).consumerTag("n"), d -> {
                seen.add(d);
                bodies.add(d.body().retain()); // the body only: the delivery is released when the handler returns
            });
            deliver(broker, "n", 1, "one".getBytes(StandardCharsets.UTF_8));
            deliver(broker, "n", 2, "two".getBytes(StandardCharsets.UTF_8));
            assertSame(seen.get(0), seen.get(1), "the released delivery object is reused");
            assertEquals(1, bodies.get(0).refCnt());
            assertEquals("one", bodies.get(0).toString(StandardCharsets.UTF_8), "the kept body is still its own");
            assertEquals("two", bodies.get(1).toString(StandardCharsets.UTF_8));
            bodies.forEach(io.netty.buffer.ByteBuf::release); // paranoid leak detection checks the rest
        }
    }

    @Test
    void aDeliveryNeverSettledDoesNotStopReuseForGood() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Delivery> seen = new ArrayList<>();
            consume(broker, ch, "m", new ConsumeOptions().consumerTag("m"), d -> {
                seen.add(d);
                if (d.deliveryTag() == 1) {
                    throw new IllegalStateException("boom"); // 1 stays unacknowledged until the channel closes
                }
                d.ack();
            });
            // 4096: the reuse pool's size; once full its oldest (1, never settled) is dropped
            int count = 4096 + 2;
            for (long t = 1; t <= count; t++) {
                deliver(broker, "m", t, HELLO);
            }
            assertEquals(count, seen.size());
            assertSame(seen.get(1), seen.get(count - 1), "the last reuses 2's object: 1 no longer blocks the pool");
            written(broker);
        }
    }

    @Test
    void theBrokerGeneratedTagIsTheConsumersAndACancelNamesIt() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConsumerHandle c = consume(broker, ch, "amq.ctag-xyz", new ConsumeOptions(), d -> {});
            CompletionStage<Void> cancel = c.cancel();
            Frame f = broker.expect(1, MethodIds.BASIC_CANCEL);
            assertEquals(
                    "amq.ctag-xyz",
                    new BasicCancel()
                            .wrap(f.payload(), f.payload().readerIndex())
                            .consumerTagAsString());
            f.release();
            broker.send(1, new BasicCancelOkEncoder().consumerTag("amq.ctag-xyz"));
            assertTrue(cancel.toCompletableFuture().isDone());
        }
    }
}
