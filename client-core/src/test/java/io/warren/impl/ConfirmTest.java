package io.warren.impl;

import static io.warren.impl.PublishFixture.ack;
import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.confirmMode;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.nack;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.PublishNackedException;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.ReturnedMessage;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicReturnEncoder;
import io.warren.codec.method.ConfirmSelectOkEncoder;
import io.warren.codec.method.ConnectionCloseEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.impl.PublishFixture.TrackedBody;
import io.warren.impl.publish.Publisher;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/** Publisher confirms and returns through a scripted broker. */
class ConfirmTest {

    static final BasicProperties PROPS = BasicProperties.EMPTY;

    static List<CompletionStage<PublishOutcome>> publish(Channel ch, int n, boolean mandatory) {
        List<CompletionStage<PublishOutcome>> out = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            out.add(ch.publish("", "q", mandatory, PROPS, text("m" + i)));
        }
        return out;
    }

    static void read(FakeBroker broker, int n) {
        for (int i = 0; i < n; i++) {
            expectPublish(broker, 1);
        }
    }

    /** confirm.select with nowait: written, completed as written, and the channel's publishes are numbered. */
    @Test
    void aConfirmSelectWithoutWaitIsWrittenAndNumbersThePublishes() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<Void> select = ch.confirmSelect(true);
            broker.expectAndRelease(1, MethodIds.CONFIRM_SELECT);
            select.toCompletableFuture().join();
            List<CompletionStage<PublishOutcome>> f = publish(ch, 1, false);
            read(broker, 1);
            ack(broker, 1, 1, false);
            assertSame(PublishOutcome.CONFIRMED, f.get(0).toCompletableFuture().join());
        }
    }

    @Test
    void multipleAcksCompleteTheirRangeAndSingleAcksTheirOwn() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 5, false);
            read(broker, 5);
            f.forEach(PublishFixture::assertPending);
            ack(broker, 1, 3, true);
            for (int i = 0; i < 3; i++) {
                assertSame(
                        PublishOutcome.CONFIRMED, f.get(i).toCompletableFuture().join());
            }
            assertPending(f.get(3));
            ack(broker, 1, 5, false);
            assertSame(PublishOutcome.CONFIRMED, f.get(4).toCompletableFuture().join());
            assertPending(f.get(3));
            ack(broker, 1, 4, false);
            assertSame(PublishOutcome.CONFIRMED, f.get(3).toCompletableFuture().join());
            // a late duplicate is ignored
            ack(broker, 1, 5, true);
            broker.expectNothing();
        }
    }

    @Test
    void aNackFailsExactlyTheNackedPublishes() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 5, false);
            read(broker, 5);
            nack(broker, 1, 2, false);
            PublishNackedException e = assertInstanceOf(PublishNackedException.class, failure(f.get(1)));
            assertEquals(2, e.sequenceNumber());
            assertEquals(1, e.channelNumber());
            nack(broker, 1, 4, true); // 1, 3, 4
            for (int i : new int[] {0, 2, 3}) {
                assertInstanceOf(PublishNackedException.class, failure(f.get(i)));
            }
            ack(broker, 1, 5, true);
            assertSame(PublishOutcome.CONFIRMED, f.get(4).toCompletableFuture().join());
        }
    }

    @Test
    void channelCloseFailsOutstandingPublishesWithARetryableException() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 3, false);
            read(broker, 3);
            ack(broker, 1, 1, false);
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - x", 60, 40);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertSame(PublishOutcome.CONFIRMED, f.get(0).toCompletableFuture().join());
            for (int i = 1; i < 3; i++) {
                PublishNotConfirmedException e =
                        assertInstanceOf(PublishNotConfirmedException.class, failure(f.get(i)));
                assertTrue(e.mayHaveReachedBroker());
                assertInstanceOf(ChannelClosedException.class, e.getCause());
                assertEquals(406, e.replyCode());
            }
        }
    }

    /** What a caller woken by its failed future reads: the metrics already count its publish as unconfirmed. */
    @Test
    void eachUnconfirmedPublishIsCountedBeforeItsFutureFails() {
        int[] unconfirmed = new int[1];
        io.warren.impl.metrics.MetricsCollector metrics = new io.warren.impl.metrics.MetricsCollector() {
            @Override
            public void publishesUnconfirmed(int count) {
                unconfirmed[0] += count;
            }
        };
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions(), null, metrics)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 3, false);
            read(broker, 3);
            ack(broker, 1, 1, false);
            List<Integer> seen = new ArrayList<>();
            f.get(1).whenComplete((o, e) -> seen.add(unconfirmed[0]));
            f.get(2).whenComplete((o, e) -> seen.add(unconfirmed[0]));
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - x", 60, 40);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertEquals(2, seen.size());
            assertTrue(seen.get(0) >= 1 && seen.get(1) >= 2, () -> "counts seen by the callbacks: " + seen);
            assertEquals(2, unconfirmed[0]);
        }
    }

    /**
     * RabbitMQ confirms what it read before channel.close before it answers close-ok: an application close keeps
     * matching acks and nacks until close-ok, then fails only what is left.
     */
    @Test
    void anApplicationCloseKeepsMatchingConfirmsUntilCloseOk() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 4, false);
            read(broker, 4);
            List<String> order = new ArrayList<>();
            f.get(3).whenComplete((o, e) -> order.add("publish 4"));
            CompletionStage<Void> closed = ch.close();
            closed.whenComplete((v, e) -> order.add("close"));
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            f.forEach(PublishFixture::assertPending);
            CompletionStage<PublishOutcome> late = ch.publish("", "q", false, PROPS, text("late"));
            // a publish after close() is refused, never written: the channel is closed (not "unconfirmed")
            ChannelClosedException refused = assertInstanceOf(ChannelClosedException.class, failure(late));
            assertFalse(refused.initiatedByBroker());
            ack(broker, 1, 2, true);
            nack(broker, 1, 3, false);
            assertSame(PublishOutcome.CONFIRMED, f.get(0).toCompletableFuture().join());
            assertSame(PublishOutcome.CONFIRMED, f.get(1).toCompletableFuture().join());
            assertInstanceOf(PublishNackedException.class, failure(f.get(2)));
            assertPending(f.get(3));
            assertPending(closed);
            broker.sendChannelCloseOk(1);
            PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(f.get(3)));
            assertTrue(e.mayHaveReachedBroker());
            assertInstanceOf(ChannelClosedException.class, e.getCause());
            assertEquals(List.of("publish 4", "close"), order, "outcomes are settled before close() completes");
            broker.expectNothing();
        }
    }

    @Test
    void aReturnWhileClosingStillMakesItsPublishReturned() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<String> returned = new ArrayList<>();
            ch.addReturnListener(m -> returned.add(m.body().toString(StandardCharsets.UTF_8)));
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 2, true);
            read(broker, 2);
            ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            ack(broker, 1, 1, false);
            sendReturn(broker, "m2", 2);
            ack(broker, 1, 2, false);
            broker.sendChannelCloseOk(1);
            assertSame(PublishOutcome.CONFIRMED, f.get(0).toCompletableFuture().join());
            assertTrue(f.get(1).toCompletableFuture().join().isReturned());
            assertEquals(List.of("m2"), returned);
        }
    }

    @Test
    void deliveriesWhileClosingAreStillDropped() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            CompletionStage<PublishOutcome> f = ch.publish("", "q", false, PROPS, text("m1"));
            read(broker, 1);
            ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.send(
                    1,
                    new io.warren.codec.method.BasicDeliverEncoder()
                            .consumerTag("ctag")
                            .deliveryTag(1)
                            .exchange("")
                            .routingKey("q"));
            broker.sendContent(1, PROPS, "dropped".getBytes());
            ack(broker, 1, 1, false);
            assertSame(PublishOutcome.CONFIRMED, f.toCompletableFuture().join());
            broker.sendChannelCloseOk(1);
            broker.expectNothing();
        }
    }

    /** A broker's channel.close means it sends nothing more: whatever is outstanding fails at once. */
    @Test
    void aBrokerCloseWhileClosingFailsTheRemainderAtOnce() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 3, false);
            read(broker, 3);
            CompletionStage<Void> closed = ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            ack(broker, 1, 1, false);
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - x", 60, 40);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertSame(PublishOutcome.CONFIRMED, f.get(0).toCompletableFuture().join());
            for (int i = 1; i < 3; i++) {
                PublishNotConfirmedException e =
                        assertInstanceOf(PublishNotConfirmedException.class, failure(f.get(i)));
                assertTrue(e.mayHaveReachedBroker());
                assertEquals(406, e.replyCode());
            }
            ack(broker, 1, 3, true); // too late: ignored
            broker.sendChannelCloseOk(1);
            assertTrue(closed.toCompletableFuture().isDone());
        }
    }

    @Test
    void aConnectionLostWhileClosingFailsTheRemainderWithItsCause() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 2, false);
            read(broker, 2);
            ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            ack(broker, 1, 1, false);
            broker.send(0, new ConnectionCloseEncoder().replyCode(320).replyText("CONNECTION_FORCED - shutdown"));
            assertSame(PublishOutcome.CONFIRMED, f.get(0).toCompletableFuture().join());
            PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(f.get(1)));
            assertTrue(e.mayHaveReachedBroker());
            assertInstanceOf(ConnectionClosedException.class, e.getCause());
        }
    }

    @Test
    void aCloseThatTimesOutFailsTheRemainderWhenItGivesUp() {
        ConnectionOptions options = new ConnectionOptions().rpcTimeout(java.time.Duration.ofSeconds(5));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            CompletionStage<PublishOutcome> f = ch.publish("", "q", false, PROPS, text("m1"));
            read(broker, 1);
            CompletionStage<Void> closed = ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.client.advanceTimeBy(6, java.util.concurrent.TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertTrue(closed.toCompletableFuture().isDone());
            PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(f));
            assertTrue(e.mayHaveReachedBroker());
        }
    }

    @Test
    void connectionCloseFailsOutstandingAndHeldPublishes() {
        ConnectionOptions options =
                new ConnectionOptions().publishOptions(new PublishOptions().maxOutstandingConfirms(2));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            TrackedBody heldBody = new TrackedBody("held".getBytes());
            List<CompletionStage<PublishOutcome>> f = publish(ch, 2, false);
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, heldBody);
            read(broker, 2);
            broker.expectNothing();
            broker.send(0, new ConnectionCloseEncoder().replyCode(320).replyText("CONNECTION_FORCED - shutdown"));
            for (CompletionStage<PublishOutcome> s : f) {
                PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(s));
                assertTrue(e.mayHaveReachedBroker());
                assertInstanceOf(ConnectionClosedException.class, e.getCause());
            }
            PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(held));
            assertFalse(e.mayHaveReachedBroker());
            heldBody.assertReleasedOnce();
        }
    }

    @Test
    void aReturnedMandatoryPublishCompletesAsReturnedAtItsAck() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<String> returnedBodies = new ArrayList<>();
            List<ByteBuf> seenBodies = new ArrayList<>();
            ch.addReturnListener(m -> {
                returnedBodies.add(m.replyCode() + " " + m.replyText() + " " + m.exchange() + "/" + m.routingKey() + " "
                        + m.body().toString(StandardCharsets.UTF_8) + " "
                        + m.properties().messageId());
                seenBodies.add(m.body());
                assertSame(ch, m.channel());
            });
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> f = publish(ch, 3, true);
            read(broker, 3);
            // m1 was routed to a queue that confirms late; m2 is unroutable: its return, then its ack (tag 2)
            sendReturn(broker, "m2", 2);
            ack(broker, 1, 2, false);
            assertEquals(List.of("312 NO_ROUTE /q m2 id-m2"), returnedBodies);
            assertEquals(0, seenBodies.get(0).refCnt(), "the returned body is released after the listeners");
            PublishOutcome outcome = f.get(1).toCompletableFuture().join();
            assertTrue(outcome.isReturned());
            assertEquals(312, outcome.replyCode());
            assertEquals("NO_ROUTE", outcome.replyText());
            assertPending(f.get(0)); // a FIFO would have given m2's return to m1
            ack(broker, 1, 3, true);
            assertSame(PublishOutcome.CONFIRMED, f.get(0).toCompletableFuture().join());
            assertSame(PublishOutcome.CONFIRMED, f.get(2).toCompletableFuture().join());
        }
    }

    @Test
    void byOrderAnAckOfOlderPublishesBetweenAReturnAndItsAckLeavesTheReturnToItsOwnAck() {
        try (FakeBroker broker = uncorrelated()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<CompletionStage<PublishOutcome>> routed = publish(ch, 10, false);
            CompletionStage<PublishOutcome> unroutable = ch.publish("", "nowhere", true, PROPS, text("m11"));
            read(broker, 11);
            // the return of 11 goes out at once; the queue's confirms of 1..5 and 11's own ack share a flush
            sendReturn(broker, "m11", 0);
            ack(broker, 1, 5, true);
            ack(broker, 1, 11, false);
            assertTrue(unroutable.toCompletableFuture().join().isReturned(), "11's outcome is RETURNED");
            ack(broker, 1, 10, true);
            for (CompletionStage<PublishOutcome> f : routed) {
                assertSame(PublishOutcome.CONFIRMED, f.toCompletableFuture().join());
            }
        }
    }

    /**
     * What RabbitMQ 3.10 sent with a quorum queue (ReturnIT, 1 run in ~7): the return of 194, then one flush with the
     * queue's late confirm of 1 and 194's own ack. By order alone 1 would take the return; the sequence number the
     * returned message carries back says it is 194's.
     */
    @Test
    void aReturnIsMatchedByTheSequenceNumberItsMessageCarriesBack() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            BasicProperties props = BasicProperties.builder()
                    .contentType("text/plain")
                    .headers(java.util.Map.of("app", "a"))
                    .deliveryMode(2)
                    .build();
            CompletionStage<PublishOutcome> routed = ch.publish("", "quorum", true, props, text("routed"));
            CompletionStage<PublishOutcome> plain = ch.publish("", "quorum", false, props, text("plain"));
            CompletionStage<PublishOutcome> unroutable = ch.publish("", "nowhere", true, props, text("lost"));
            PublishFixture.Published p1 = expectPublish(broker, 1);
            PublishFixture.Published p2 = expectPublish(broker, 1);
            PublishFixture.Published p3 = expectPublish(broker, 1);
            assertEquals("x-warren-pub-seq-no", SEQUENCE_HEADER_NAME, "the name the documentation gives");
            assertEquals(
                    java.util.Map.of("app", "a", SEQUENCE_HEADER_NAME, 1L),
                    p1.properties().headers());
            assertEquals(java.util.Map.of("app", "a"), p2.properties().headers(), "only mandatory publishes carry it");
            assertEquals(
                    java.util.Map.of("app", "a", SEQUENCE_HEADER_NAME, 3L),
                    p3.properties().headers());
            assertEquals("text/plain", p3.properties().contentType());
            assertEquals(2, p3.properties().deliveryMode());
            broker.send(
                    1,
                    new BasicReturnEncoder()
                            .replyCode(312)
                            .replyText("NO_ROUTE")
                            .exchange("")
                            .routingKey("nowhere"));
            broker.sendContent(1, p3.properties(), p3.body());
            ack(broker, 1, 1, true);
            assertSame(PublishOutcome.CONFIRMED, routed.toCompletableFuture().join());
            assertPending(unroutable);
            ack(broker, 1, 3, false);
            assertTrue(unroutable.toCompletableFuture().join().isReturned());
            ack(broker, 1, 2, true);
            assertSame(PublishOutcome.CONFIRMED, plain.toCompletableFuture().join());
        }
    }

    /**
     * A mandatory publish written before confirm.select is not numbered, nor stamped; its return must not be taken
     * by order for a stamped publish that was routed.
     */
    @Test
    void aReturnWithoutTheHeaderIsNotMatchedToAStampedPublish() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<String> returned = new ArrayList<>();
            ch.addReturnListener(m -> returned.add(m.body().toString(StandardCharsets.UTF_8)));
            CompletionStage<PublishOutcome> before = ch.publish("", "nowhere", true, PROPS, text("before"));
            expectPublish(broker, 1);
            confirmMode(broker, ch);
            CompletionStage<PublishOutcome> routed = ch.publish("", "q", true, PROPS, text("routed"));
            PublishFixture.Published stamped = expectPublish(broker, 1);
            assertEquals(1L, stamped.properties().headers().get(SEQUENCE_HEADER_NAME), "the routed publish is stamped");
            sendReturn(broker, "before", 0);
            ack(broker, 1, 1, false);
            assertSame(PublishOutcome.CONFIRMED, routed.toCompletableFuture().join());
            assertEquals(List.of("before"), returned);
            assertSame(PublishOutcome.SENT, before.toCompletableFuture().join());
        }
    }

    @Test
    void withCorrelationOffNothingIsAddedAndReturnsAreMatchedByOrder() {
        try (FakeBroker broker = uncorrelated()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            CompletionStage<PublishOutcome> unroutable = ch.publish("", "nowhere", true, PROPS, text("lost"));
            PublishFixture.Published p = expectPublish(broker, 1);
            assertEquals(null, p.properties().headers());
            sendReturn(broker, "lost", 0);
            ack(broker, 1, 1, false);
            assertTrue(unroutable.toCompletableFuture().join().isReturned());
        }
    }

    @Test
    void byOrderSeveralReturnsBeforeOneAckAreMatchedInPublishOrder() {
        try (FakeBroker broker = uncorrelated()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            CompletionStage<PublishOutcome> plain = ch.publish("", "q", false, PROPS, text("p"));
            List<CompletionStage<PublishOutcome>> f = publish(ch, 2, true);
            read(broker, 3);
            sendReturn(broker, "m1", 0);
            sendReturn(broker, "m2", 0);
            ack(broker, 1, 3, true);
            assertSame(PublishOutcome.CONFIRMED, plain.toCompletableFuture().join());
            assertTrue(f.get(0).toCompletableFuture().join().isReturned());
            assertTrue(f.get(1).toCompletableFuture().join().isReturned());
        }
    }

    @Test
    void returnsWithoutConfirmModeGoToTheListenerOnly() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<ReturnedMessage> seen = new ArrayList<>();
            ch.addReturnListener(m -> seen.add(m));
            CompletionStage<PublishOutcome> f = ch.publish("", "nowhere", true, PROPS, text("m1"));
            read(broker, 1);
            broker.client.runPendingTasks();
            assertSame(PublishOutcome.SENT, f.toCompletableFuture().join());
            sendReturn(broker, "m1", 0);
            assertEquals(1, seen.size());
            broker.expectNothing();
        }
    }

    @Test
    void publishesPastTheBoundAreHeldUntilConfirmsArrive() {
        ConnectionOptions options =
                new ConnectionOptions().publishOptions(new PublishOptions().maxOutstandingConfirms(2));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            List<Boolean> changes = new ArrayList<>();
            ch.addWritabilityListener((c, writable) -> changes.add(writable));
            List<CompletionStage<PublishOutcome>> f = publish(ch, 5, false);
            read(broker, 2);
            broker.expectNothing(); // 3, 4, 5 held: nothing more is written
            assertFalse(ch.isWritable());
            CompletionStage<Void> writable = ch.whenWritable();
            assertPending(writable);
            ack(broker, 1, 1, false);
            read(broker, 1); // a slot freed: the third goes out
            broker.expectNothing();
            assertPending(writable);
            ack(broker, 1, 3, true);
            read(broker, 2);
            assertPending(writable); // window full again (4, 5 outstanding)
            ack(broker, 1, 5, true);
            assertTrue(writable.toCompletableFuture().isDone());
            assertTrue(ch.isWritable());
            for (CompletionStage<PublishOutcome> s : f) {
                assertSame(PublishOutcome.CONFIRMED, s.toCompletableFuture().join());
            }
            assertEquals(List.of(false, true), changes);
        }
    }

    /**
     * Writing a released publish can take the socket over its high-water mark; Netty says so synchronously, in the
     * middle of that publish's writes. Nothing may be written then, or its bytes land inside the body frame.
     */
    @Test
    void aWritabilityChangeDuringAWriteDoesNotInterleaveAnotherPublish() {
        ConnectionOptions options = new ConnectionOptions()
                .publishOptions(new PublishOptions().maxOutstandingConfirms(2).writeBufferHighWaterMark(65536));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(2047, 0, 0), 1);
            confirmMode(broker, ch);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            ch.publish("", "q", false, PROPS, io.netty.buffer.Unpooled.wrappedBuffer(new byte[60_000]));
            ch.publish("", "q", false, PROPS, text("y"));
            // the window is full: these two are held
            ch.publish("", "q", false, PROPS, io.netty.buffer.Unpooled.wrappedBuffer(new byte[10_000]));
            ch.publish("", "q", false, PROPS, text("d"));
            ack(broker, 1, 2, true); // both released; the first one's body takes the socket over 64 KiB
            socket.drain();
            assertEquals(60_000, expectPublish(broker, 1).body().length);
            assertEquals("y", expectPublish(broker, 1).text());
            assertEquals(10_000, expectPublish(broker, 1).body().length);
            assertEquals("d", expectPublish(broker, 1).text());
        }
    }

    @Test
    void publishesAfterConfirmSelectWaitForSelectOkSoNumbersMatch() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<PublishOutcome> before = ch.publish("", "q", false, PROPS, text("before"));
            ch.queueDeclare("q"); // on the wire: the select waits behind it
            CompletionStage<Void> select = ch.confirmSelect();
            CompletionStage<PublishOutcome> after = ch.publish("", "q", false, PROPS, text("after"));
            assertEquals("before", expectPublish(broker, 1).text());
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.expectNothing();
            broker.send(1, new io.warren.codec.method.QueueDeclareOkEncoder().queue("q"));
            broker.expectAndRelease(1, MethodIds.CONFIRM_SELECT);
            broker.expectNothing(); // "after" is held until select-ok
            broker.send(1, new ConfirmSelectOkEncoder());
            select.toCompletableFuture().join();
            assertEquals("after", expectPublish(broker, 1).text());
            assertSame(PublishOutcome.SENT, before.toCompletableFuture().join());
            assertPending(after);
            ack(broker, 1, 1, false); // the broker's number 1 is "after"
            assertSame(PublishOutcome.CONFIRMED, after.toCompletableFuture().join());
        }
    }

    @Test
    void publishNoOutcomeCountsInTheWindowWithoutAFuture() {
        ConnectionOptions options =
                new ConnectionOptions().publishOptions(new PublishOptions().maxOutstandingConfirms(1));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            ch.publishNoOutcome("", "q", false, PROPS, text("a"));
            CompletionStage<PublishOutcome> b = ch.publish("", "q", false, PROPS, text("b"));
            read(broker, 1);
            broker.expectNothing();
            ack(broker, 1, 1, false);
            read(broker, 1);
            ack(broker, 1, 2, false);
            assertSame(PublishOutcome.CONFIRMED, b.toCompletableFuture().join());
        }
    }

    @Test
    void everyOutcomeCompletesOnceUnderManyPublishes() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            confirmMode(broker, ch);
            int n = 5_000;
            int[] completions = new int[n];
            List<CompletionStage<PublishOutcome>> all = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int index = i;
                CompletionStage<PublishOutcome> s = ch.publish("", "q", false, PROPS, text("x"));
                s.whenComplete((o, e) -> completions[index]++);
                all.add(s);
                if (i % 100 == 99) {
                    read(broker, 100);
                    // the broker acks in bursts, out of order within a burst, with overlapping multiples
                    ack(broker, 1, i - 50 + 1, false);
                    ack(broker, 1, i + 1, true);
                    ack(broker, 1, i - 10 + 1, true);
                }
            }
            for (int i = 0; i < n; i++) {
                assertEquals(1, completions[i], "publish " + (i + 1));
                assertSame(
                        PublishOutcome.CONFIRMED,
                        all.get(i).toCompletableFuture().join());
            }
        }
    }

    /**
     * basic.return of the message {@code body}; {@code sequence} > 0 gives it the sequence-number header the
     * publisher stamped it with (as the broker gives a returned message back whole), 0 none.
     */
    /**
     * Before: the close failed the select, which released the held publish: it was written after channel.close
     * (dropped by the broker) and completed as sent.
     */
    @Test
    void aPublishHeldForASelectIsNotWrittenAfterTheApplicationsClose() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<Void> select = ch.confirmSelect();
            broker.expectAndRelease(1, MethodIds.CONFIRM_SELECT);
            TrackedBody body = new TrackedBody("held".getBytes(StandardCharsets.UTF_8));
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, body);
            ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.expectNothing();
            assertInstanceOf(ChannelClosedException.class, failure(select));
            assertInstanceOf(ChannelClosedException.class, failure(held), "never written: the select failed");
            body.assertReleasedOnce();
            broker.sendChannelCloseOk(1);
        }
    }

    static void sendReturn(FakeBroker broker, String body, long sequence) {
        broker.send(
                1,
                new BasicReturnEncoder()
                        .replyCode(312)
                        .replyText("NO_ROUTE")
                        .exchange("")
                        .routingKey("q"));
        BasicProperties.Builder props = BasicProperties.builder().messageId("id-" + body);
        if (sequence > 0) {
            props.headers(java.util.Map.of(SEQUENCE_HEADER_NAME, sequence));
        }
        broker.sendContent(1, props.build(), body.getBytes());
    }

    /** The header a mandatory publish is stamped with in confirm mode ({@link Publisher#SEQUENCE_HEADER}). */
    static final String SEQUENCE_HEADER_NAME = Publisher.SEQUENCE_HEADER.name().toString();

    /** A broker whose client matches returns by order ({@link PublishOptions#correlateReturns} off). */
    static FakeBroker uncorrelated() {
        return new FakeBroker(new ConnectionOptions().publishOptions(new PublishOptions().correlateReturns(false)));
    }
}
