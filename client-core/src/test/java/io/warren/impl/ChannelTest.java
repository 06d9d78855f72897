package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionOptions;
import io.warren.DeclaredQueue;
import io.warren.GetResponse;
import io.warren.MessageTooLargeException;
import io.warren.QueueSpec;
import io.warren.RpcTimeoutException;
import io.warren.codec.Frame;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicGetEmptyEncoder;
import io.warren.codec.method.BasicGetOkEncoder;
import io.warren.codec.method.ChannelClose;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.QueueDeclareOkEncoder;
import io.warren.codec.method.QueuePurgeOkEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Channel state machines: numbers, the FIFO RPC queue, replies on many channels, both close directions. */
class ChannelTest {

    static Throwable failure(CompletionStage<?> stage) {
        CompletableFuture<?> f = stage.toCompletableFuture();
        assertTrue(f.isCompletedExceptionally(), "expected a failure, got " + f);
        try {
            f.join();
            throw new AssertionError("unreachable");
        } catch (CompletionException e) {
            return e.getCause();
        }
    }

    static String queueOf(Frame declare) {
        try {
            return new io.warren.codec.method.QueueDeclare()
                    .wrap(declare.payload(), declare.payload().readerIndex())
                    .queueAsString();
        } finally {
            declare.release();
        }
    }

    @Test
    void repliesOnManyChannelsGoToTheirOwnRequests() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            List<Channel> channels = new ArrayList<>();
            for (int n = 1; n <= 5; n++) {
                channels.add(broker.openChannel(c, n));
            }
            List<CompletionStage<DeclaredQueue>> results = new ArrayList<>();
            for (Channel ch : channels) {
                results.add(ch.queueDeclare("q" + ch.channelNumber()));
            }
            for (int n = 1; n <= 5; n++) {
                assertEquals("q" + n, queueOf(broker.expect(n, MethodIds.QUEUE_DECLARE)));
            }
            // the broker answers in reverse order, and interleaves a heartbeat-free burst
            for (int n = 5; n >= 1; n--) {
                broker.send(
                        n,
                        new QueueDeclareOkEncoder()
                                .queue("q" + n)
                                .messageCount(n * 10L)
                                .consumerCount(n));
            }
            for (int n = 1; n <= 5; n++) {
                DeclaredQueue ok = results.get(n - 1).toCompletableFuture().join();
                assertEquals("q" + n, ok.queue());
                assertEquals(n * 10L, ok.messageCount());
                assertEquals(n, ok.consumerCount());
            }
        }
    }

    @Test
    void requestsOnOneChannelAreSentOneAtATimeInCallOrder() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> a = ch.queueDeclare("a");
            CompletionStage<DeclaredQueue> b = ch.queueDeclare("b");
            CompletionStage<Long> purge = ch.queuePurge("a");
            assertEquals("a", queueOf(broker.expect(1, MethodIds.QUEUE_DECLARE)));
            broker.expectNothing(); // b waits for a's reply
            broker.send(1, new QueueDeclareOkEncoder().queue("a"));
            assertEquals("a", a.toCompletableFuture().join().queue());
            assertEquals("b", queueOf(broker.expect(1, MethodIds.QUEUE_DECLARE)));
            broker.send(1, new QueueDeclareOkEncoder().queue("b"));
            broker.expectAndRelease(1, MethodIds.QUEUE_PURGE);
            broker.send(1, new QueuePurgeOkEncoder().messageCount(7));
            assertEquals("b", b.toCompletableFuture().join().queue());
            assertEquals(7L, purge.toCompletableFuture().join());
        }
    }

    @Test
    void noWaitRequestsCompleteWhenWrittenAndKeepTheOrder() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> first = ch.queueDeclare("first");
            CompletionStage<DeclaredQueue> noWait =
                    ch.queueDeclare(QueueSpec.named("second").noWait(true));
            CompletionStage<Void> bind = ch.queueBind("second", "amq.direct", "k", java.util.Map.of(), true);
            assertEquals("first", queueOf(broker.expect(1, MethodIds.QUEUE_DECLARE)));
            broker.expectNothing();
            assertFalse(noWait.toCompletableFuture().isDone());
            broker.send(1, new QueueDeclareOkEncoder().queue("first"));
            assertEquals("second", queueOf(broker.expect(1, MethodIds.QUEUE_DECLARE)));
            broker.expectAndRelease(1, MethodIds.QUEUE_BIND);
            broker.client.runPendingTasks();
            assertEquals(
                    new DeclaredQueue("second", -1, -1),
                    noWait.toCompletableFuture().join());
            bind.toCompletableFuture().join();
            assertTrue(first.toCompletableFuture().isDone());
        }
    }

    @Test
    void brokerCloseFailsEveryPendingOperationWithCodeTextClassAndMethod() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            Channel other = broker.openChannel(c, 2);
            CompletionStage<DeclaredQueue> passive = ch.queueDeclare(QueueSpec.passive("missing"));
            CompletionStage<Long> queued = ch.queuePurge("missing");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.sendChannelClose(1, 404, "NOT_FOUND - no queue 'missing' in vhost '/'", 50, 10);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            for (CompletionStage<?> s : List.of(passive, queued)) {
                ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, failure(s));
                assertEquals(404, e.replyCode());
                assertEquals("NOT_FOUND - no queue 'missing' in vhost '/'", e.replyText());
                assertEquals(50, e.classId());
                assertEquals(10, e.methodId());
                assertEquals(1, e.channelNumber());
                assertTrue(e.initiatedByBroker());
                assertTrue(e.getMessage().contains("queue.declare"), e.getMessage());
            }
            assertFalse(ch.isOpen());
            AmqpException reason = ch.closeFuture().toCompletableFuture().join();
            assertEquals(404, reason.replyCode());
            // a later call fails at once with the same cause
            ChannelClosedException later = assertInstanceOf(ChannelClosedException.class, failure(ch.queuePurge("x")));
            assertEquals(404, later.replyCode());
            broker.expectNothing();
            // the connection and the other channel go on
            assertTrue(c.isOpen());
            CompletionStage<Long> purge = other.queuePurge("q");
            broker.expectAndRelease(2, MethodIds.QUEUE_PURGE);
            broker.send(2, new QueuePurgeOkEncoder().messageCount(0));
            assertEquals(0L, purge.toCompletableFuture().join());
            // number 1 is free again: the broker forgot it when it got close-ok
            assertEquals(1, broker.handler.channelCount());
        }
    }

    @Test
    void closeWhileAnRpcIsPendingFailsItAtOnceAndDropsItsLateReply() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> pending = ch.queueDeclare("q");
            CompletionStage<DeclaredQueue> queued = ch.queueDeclare("r");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            CompletionStage<Void> closed = ch.close();
            Frame close = broker.expect(1, MethodIds.CHANNEL_CLOSE);
            ChannelClose view =
                    new ChannelClose().wrap(close.payload(), close.payload().readerIndex());
            assertEquals(200, view.replyCode());
            close.release();
            ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, failure(pending));
            assertFalse(e.initiatedByBroker());
            assertEquals(200, e.replyCode());
            assertInstanceOf(ChannelClosedException.class, failure(queued));
            assertFalse(closed.toCompletableFuture().isDone(), "completes on close-ok");
            // the broker had already answered the declare: dropped, not an error
            broker.send(1, new QueueDeclareOkEncoder().queue("q"));
            broker.sendChannelCloseOk(1);
            closed.toCompletableFuture().join();
            broker.expectNothing();
            assertTrue(c.isOpen());
            assertEquals(0, broker.handler.channelCount());
        }
    }

    @Test
    void aPublishRefusedWhileTheApplicationsCloseFailsWhatWaitedCarriesTheClosesReplyCode() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            List<CompletionStage<?>> published = new ArrayList<>();
            CompletionStage<DeclaredQueue> pending = ch.queueDeclare("q");
            // runs on the event loop while close() fails what waited: the channel is closing, not yet closed
            pending.whenComplete((ok, e) -> published.add(ch.publish("", "q", false, null, new byte[] {1})));
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            CompletionStage<Void> closed = ch.close(320, "going away");
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, failure(published.get(0)));
            assertEquals(320, e.replyCode());
            assertEquals("going away", e.replyText());
            assertFalse(e.initiatedByBroker());
            broker.sendChannelCloseOk(1);
            closed.toCompletableFuture().join();
            broker.expectNothing(); // the refused publish wrote nothing
        }
    }

    @Test
    void closeFromBothSidesAtOnce() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedChannelMax(1))) {
            ConnectionImpl c = broker.handshake(1, 131072, 0);
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<Void> closed = ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - something", 60, 80);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            closed.toCompletableFuture().join();
            // the number is still held: the close-ok for our close has not come
            assertInstanceOf(AmqpException.class, failure(c.openChannel()));
            broker.sendChannelCloseOk(1);
            broker.openChannel(c, 1);
            assertTrue(c.isOpen());
        }
    }

    @Test
    void aCloseWithoutCloseOkCompletesAfterTheRpcTimeoutButKeepsTheNumber() {
        try (FakeBroker broker =
                new FakeBroker(new ConnectionOptions().requestedChannelMax(1).rpcTimeout(Duration.ofSeconds(2)))) {
            ConnectionImpl c = broker.handshake(1, 131072, 0);
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<Void> closed = ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.client.advanceTimeBy(2, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            closed.toCompletableFuture().join();
            assertInstanceOf(AmqpException.class, failure(c.openChannel()));
            broker.sendChannelCloseOk(1);
            broker.openChannel(c, 1);
        }
    }

    @Test
    void callbacksOfFailedOperationsCannotSendOnTheClosedChannel() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            List<CompletionStage<DeclaredQueue>> retried = new ArrayList<>();
            CompletionStage<DeclaredQueue> pending = ch.queueDeclare(QueueSpec.passive("missing"));
            pending.whenComplete((ok, e) -> retried.add(ch.queueDeclare("retry"))); // runs on the event loop
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.sendChannelClose(1, 404, "NOT_FOUND - no queue 'missing'", 50, 10);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            broker.expectNothing(); // nothing sent on the channel after close-ok
            assertInstanceOf(ChannelClosedException.class, failure(retried.get(0)));
        }
    }

    @Test
    void numbersAreReusedOnlyAfterCloseOk() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().requestedChannelMax(2))) {
            ConnectionImpl c = broker.handshake(2, 131072, 0);
            Channel one = broker.openChannel(c, 1);
            broker.openChannel(c, 2);
            AmqpException full = assertInstanceOf(AmqpException.class, failure(c.openChannel()));
            assertTrue(full.getMessage().contains("channel-max"), full.getMessage());
            one.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            assertInstanceOf(AmqpException.class, failure(c.openChannel()));
            broker.sendChannelCloseOk(1);
            broker.openChannel(c, 1);
        }
    }

    @Test
    void aTimedOutRequestFailsAndItsLateReplyIsMatchedAndDropped() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().rpcTimeout(Duration.ofSeconds(5)))) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<DeclaredQueue> slow = ch.queueDeclare("slow");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.client.advanceTimeBy(3, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            CompletionStage<DeclaredQueue> next = ch.queueDeclare("next");
            broker.client.advanceTimeBy(3, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            RpcTimeoutException e = assertInstanceOf(RpcTimeoutException.class, failure(slow));
            assertEquals(50, e.classId());
            assertEquals(10, e.methodId());
            assertEquals(1, e.channelNumber());
            assertTrue(e.getMessage().contains("queue.declare"), e.getMessage());
            broker.expectNothing(); // "next" waits until the late reply arrives
            broker.send(1, new QueueDeclareOkEncoder().queue("slow"));
            assertEquals("next", queueOf(broker.expect(1, MethodIds.QUEUE_DECLARE)));
            broker.send(1, new QueueDeclareOkEncoder().queue("next"));
            assertEquals("next", next.toCompletableFuture().join().queue());
            assertTrue(ch.isOpen());
        }
    }

    @Test
    void invalidInputFailsTheStageAndWritesNothing() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            String tooLong = "q".repeat(256);
            assertInstanceOf(IllegalArgumentException.class, failure(ch.queueDeclare(tooLong)));
            assertInstanceOf(IllegalArgumentException.class, failure(ch.queueDeclare((String) null)));
            assertInstanceOf(IllegalArgumentException.class, failure(ch.exchangeDeclare(null, "direct")));
            assertInstanceOf(IllegalArgumentException.class, failure(ch.queueBind("q", tooLong, "")));
            assertInstanceOf(
                    IllegalArgumentException.class,
                    failure(ch.queueBind("q", "x", "", java.util.Map.of("k", new Object()), false)));
            assertInstanceOf(IllegalArgumentException.class, failure(ch.basicQos(-1)));
            assertInstanceOf(
                    IllegalArgumentException.class,
                    failure(ch.queueDeclare(QueueSpec.serverNamed().noWait(true))));
            broker.expectNothing();
            assertTrue(ch.isOpen());
        }
    }

    @Test
    void basicGetAssemblesAMultiFrameBodyWithoutCopyAndGetEmptyIsNull() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<GetResponse> get = ch.basicGet("q", false);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(
                    1,
                    new BasicGetOkEncoder()
                            .deliveryTag(42)
                            .redelivered(true)
                            .exchange("x")
                            .routingKey("rk")
                            .messageCount(3));
            assertFalse(get.toCompletableFuture().isDone());
            broker.sendContent(
                    1,
                    BasicProperties.builder()
                            .contentType("text/plain")
                            .messageId("m-1")
                            .build(),
                    "hello ".getBytes(StandardCharsets.UTF_8),
                    "world".getBytes(StandardCharsets.UTF_8));
            try (GetResponse r = get.toCompletableFuture().join()) {
                assertEquals(42, r.deliveryTag());
                assertTrue(r.redelivered());
                assertEquals("x", r.exchange());
                assertEquals("rk", r.routingKey());
                assertEquals(3, r.messageCount());
                assertEquals("text/plain", r.properties().contentType());
                assertEquals("m-1", r.properties().messageId());
                assertEquals("hello world", r.body().toString(StandardCharsets.UTF_8));
            }
            CompletionStage<GetResponse> single = ch.basicGet("q", true);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(1, new BasicGetOkEncoder().deliveryTag(43).exchange("").routingKey("q"));
            broker.sendContent(1, BasicProperties.EMPTY, "one".getBytes(StandardCharsets.UTF_8));
            GetResponse r = single.toCompletableFuture().join();
            assertEquals("one", r.body().toString(StandardCharsets.UTF_8));
            r.release();
            CompletionStage<GetResponse> emptyBody = ch.basicGet("q", true);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(1, new BasicGetOkEncoder().deliveryTag(44).exchange("").routingKey("q"));
            broker.sendContent(1, BasicProperties.EMPTY);
            GetResponse e = emptyBody.toCompletableFuture().join();
            assertEquals(0, e.body().readableBytes());
            e.release();
            CompletionStage<GetResponse> empty = ch.basicGet("q", true);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(1, new BasicGetEmptyEncoder());
            assertNull(empty.toCompletableFuture().join());
        }
    }

    @Test
    void aBodyOverTheLimitClosesTheChannelWith311BeforeAnythingIsKept() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().maxInboundMessageBodySize(8))) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<GetResponse> get = ch.basicGet("q", true);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            broker.send(1, new BasicGetOkEncoder().deliveryTag(1).exchange("").routingKey("q"));
            broker.sendContent(1, BasicProperties.EMPTY, new byte[6], new byte[6]);
            Frame close = broker.expect(1, MethodIds.CHANNEL_CLOSE);
            assertEquals(
                    311,
                    new ChannelClose()
                            .wrap(close.payload(), close.payload().readerIndex())
                            .replyCode());
            close.release();
            assertInstanceOf(MessageTooLargeException.class, failure(get));
            broker.sendChannelCloseOk(1);
            assertTrue(c.isOpen());
            assertEquals(0, broker.handler.channelCount());
        }
    }

    @Test
    void extensionHandlersReceiveTheirMethodsAndCloseHooksRun() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            ChannelImpl ch = (ChannelImpl) broker.openChannel(c, 1);
            List<Long> acks = new ArrayList<>();
            List<AmqpException> closes = new ArrayList<>();
            ch.state().register(60, 80, (channel, frame) -> {
                assertSame(ch.state(), channel);
                acks.add(new io.warren.codec.method.BasicAck()
                        .wrap(frame.payload(), frame.payload().readerIndex())
                        .deliveryTag());
                frame.release();
            });
            ch.state().onClose(closes::add);
            broker.send(
                    1,
                    new io.warren.codec.method.BasicAckEncoder().deliveryTag(5).multiple(true));
            assertEquals(List.of(5L), acks);
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED - unknown delivery tag 5", 60, 80);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertEquals(1, closes.size());
            assertEquals(406, closes.get(0).replyCode());
        }
    }
}
