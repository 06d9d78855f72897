package io.warren.impl;

import static io.warren.impl.PublishFixture.expectPublish;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.PublishOptions;
import io.warren.codec.Frame;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.ConnectionBlockedEncoder;
import io.warren.codec.method.ConnectionUnblockedEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.rpc.RpcServer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * RpcServer against a scripted broker: what it publishes and how it settles the request, whatever fails: the
 * handler, the reply's publish, or the request's acknowledgement.
 */
class RpcServerTest {

    private static final BasicProperties REQUEST =
            BasicProperties.builder().replyTo("reply-q").correlationId("c-1").build();

    /** Starts a server of {@code handler} on channel 1, its basic.qos and basic.consume answered. */
    private static RpcServer serve(FakeBroker broker, Channel ch, RpcServer.Handler handler) {
        CompletionStage<RpcServer> started = RpcServer.start(ch, "rpc", new ConsumeOptions().prefetch(10), handler);
        broker.expectAndRelease(1, MethodIds.BASIC_QOS);
        broker.send(1, new BasicQosOkEncoder());
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("server"));
        return started.toCompletableFuture().join();
    }

    private static void request(FakeBroker broker, long deliveryTag, String body) {
        broker.sendDeliver(1, "server", deliveryTag, false, REQUEST, body.getBytes(StandardCharsets.UTF_8));
    }

    /** The handler of the tests: the request's body upper-cased. */
    private static CompletionStage<RpcServer.Reply> upperCase(Delivery request) {
        String text = request.bodyAsString(StandardCharsets.UTF_8).toUpperCase(Locale.ROOT);
        return CompletableFuture.completedFuture(RpcServer.Reply.of(text.getBytes(StandardCharsets.UTF_8)));
    }

    /** The settlement the client wrote next ("ack 1", "reject 1 requeue", ...), after running its tasks. */
    private static String settlement(FakeBroker broker) {
        Frame f = broker.next();
        if (f == null) {
            throw new AssertionError("expected a settlement, the client wrote nothing");
        }
        return FakeBroker.settlement(f);
    }

    @Test
    void theReplyGoesToReplyToWithTheCorrelationIdThenTheRequestIsAcknowledged() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            serve(broker, ch, RpcServerTest::upperCase);
            request(broker, 1, "hello");
            PublishFixture.Published reply = expectPublish(broker, 1);
            assertEquals("", reply.exchange());
            assertEquals("reply-q", reply.routingKey());
            assertEquals("c-1", reply.properties().correlationId());
            assertEquals("HELLO", reply.text());
            assertEquals("ack 1", settlement(broker));
            broker.expectNothing();
        }
    }

    @Test
    void aFailingHandlerRejectsTheRequestWithoutRequeue() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            serve(broker, ch, request -> CompletableFuture.failedFuture(new IllegalStateException("cannot price")));
            String log = Logged.during(() -> request(broker, 1, "XAUUSD"));
            assertEquals("reject 1", settlement(broker), "a poison request must not loop");
            broker.expectNothing();
            assertTrue(log.contains("the RPC handler failed on request 1"), log);
            assertFalse(log.contains("stays unacknowledged"), "logged once, by the server, which settled it: " + log);
        }
    }

    /**
     * A handler that throws an Error (an assertion, a class that failed to initialise) rejects its request as one that
     * throws a RuntimeException does. Before, the request was left unsettled, holding a prefetch slot until the channel
     * closed: after as many as the prefetch, the server received nothing more.
     */
    @Test
    void aHandlerThatThrowsAnErrorRejectsTheRequestWithoutRequeue() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            serve(broker, ch, request -> {
                throw new AssertionError("a bug in the handler");
            });
            String log = Logged.during(() -> request(broker, 1, "XAUUSD"));
            assertEquals("reject 1", settlement(broker));
            broker.expectNothing();
            assertTrue(log.contains("a bug in the handler"), log);
        }
    }

    /** A reply the channel refuses as it is (IllegalArgumentException) would be refused on every attempt. */
    @Test
    void aReplyThatCannotBePublishedAsItIsRejectsTheRequestWithoutRequeue() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            serve(broker, ch, request -> {
                ByteBuf released = Unpooled.copiedBuffer("gone", StandardCharsets.UTF_8);
                released.release();
                return CompletableFuture.completedFuture(RpcServer.Reply.of(null, released));
            });
            request(broker, 1, "hello");
            assertEquals("reject 1", settlement(broker), "IllegalArgumentException: the next attempt would fail alike");
            broker.expectNothing();
        }
    }

    @Test
    void aReplyRefusedForBackPressureRequeuesTheRequest() {
        ConnectionOptions options = new ConnectionOptions()
                .publishOptions(new PublishOptions().maxPendingBytes(65536).writeBufferHighWaterMark(65536));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(2047, 0, 0), 1);
            serve(broker, ch, RpcServerTest::upperCase);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            // nothing pending: a message over the bound is accepted and stays in Netty's buffer, so the reply is not
            ch.publish("", "elsewhere", false, null, Unpooled.wrappedBuffer(new byte[70_000]));
            request(broker, 1, "hello");
            socket.drain();
            assertEquals(70_000, expectPublish(broker, 1).body().length);
            assertEquals("reject 1 requeue", settlement(broker), "no reply went out: another attempt must answer");
            broker.expectNothing();
        }
    }

    /**
     * A reply refused while the broker blocks the connection leaves its request unsettled until the channel is
     * writable again: requeued at once, it would come straight back and the handler would run again for nothing.
     */
    @Test
    void aReplyRefusedForABlockedConnectionRequeuesTheRequestOnlyOnceTheChannelIsWritableAgain() {
        ConnectionOptions options = new ConnectionOptions()
                .publishOptions(new PublishOptions().blockedPolicy(PublishOptions.BlockedPolicy.FAIL));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            serve(broker, ch, RpcServerTest::upperCase);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            request(broker, 1, "hello");
            assertFalse(ch.isWritable());
            broker.expectNothing(); // no reply (refused) and, while unwritable, no reject of the request
            broker.send(0, new ConnectionUnblockedEncoder());
            assertEquals("reject 1 requeue", settlement(broker), "writable again: another attempt may answer");
            broker.expectNothing();
        }
    }

    @Test
    void aReplyTheBrokerNacksRequeuesTheRequest() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            PublishFixture.confirmMode(broker, ch);
            serve(broker, ch, RpcServerTest::upperCase);
            request(broker, 1, "hello");
            assertEquals("HELLO", expectPublish(broker, 1).text());
            broker.expectNothing(); // the request waits for the reply's confirm
            PublishFixture.nack(broker, 1, 1, false);
            assertEquals("reject 1 requeue", settlement(broker));

            request(broker, 2, "again");
            assertEquals("AGAIN", expectPublish(broker, 1).text());
            PublishFixture.ack(broker, 1, 2, false);
            assertEquals("ack 2", settlement(broker));
            broker.expectNothing();
        }
    }

    @Test
    void aRedeliveredRequestWhoseReplyTheBrokerNacksAgainIsNotRequeuedAgain() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            PublishFixture.confirmMode(broker, ch);
            serve(broker, ch, RpcServerTest::upperCase);
            broker.sendDeliver(1, "server", 1, true, REQUEST, "hello".getBytes(StandardCharsets.UTF_8));
            assertEquals("HELLO", expectPublish(broker, 1).text());
            PublishFixture.nack(broker, 1, 1, false);
            assertEquals("reject 1", settlement(broker), "requeued once already: not round and round");
            broker.expectNothing();
        }
    }

    /** A handler that settles the request itself, against the Handler's rules: the server's ack then fails. */
    @Test
    void anAcknowledgementThatFailsIsLoggedAsSuchAndNotAsTheHandlersFailure() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<Long> handled = new ArrayList<>();
            serve(broker, ch, request -> {
                handled.add(request.deliveryTag());
                request.ack();
                return upperCase(request);
            });
            String log = Logged.during(() -> request(broker, 1, "hello"));
            assertEquals(List.of(1L), handled);
            assertEquals("HELLO", expectPublish(broker, 1).text());
            assertEquals("ack 1", settlement(broker), "the handler's own ack");
            broker.expectNothing();
            assertTrue(log.contains("acknowledging RPC request 1"), log);
            assertFalse(log.contains("the handler failed"), log);
        }
    }
}
