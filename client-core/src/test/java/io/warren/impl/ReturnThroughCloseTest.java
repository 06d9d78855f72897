package io.warren.impl;

import static io.warren.impl.PublishFixture.ack;
import static io.warren.impl.PublishFixture.confirmMode;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionOptions;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicReturnEncoder;
import io.warren.codec.method.MethodIds;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * A mandatory publish the broker returned, in confirm mode, when the channel closes around its basic.return: RabbitMQ
 * returns and acks what it read before our channel.close, so the return's outcome must not turn into CONFIRMED.
 */
class ReturnThroughCloseTest {

    private static void returnUnroutable(FakeBroker broker) {
        broker.send(
                1,
                new BasicReturnEncoder()
                        .replyCode(ReplyCode.NO_ROUTE)
                        .replyText("NO_ROUTE")
                        .exchange("")
                        .routingKey("nowhere"));
    }

    /** A mandatory publish in confirm mode, written, and the broker's basic.return method for it (its content next). */
    private record Returned(
            Channel channel, CompletionStage<PublishOutcome> outcome, PublishFixture.Published published) {}

    /** {@link Returned} with a body over the 16 bytes {@code broker}'s client takes inbound. */
    private static Returned returnedOverTheLimit(FakeBroker broker) {
        Channel ch = broker.openChannel(broker.handshake(), 1);
        confirmMode(broker, ch);
        CompletionStage<PublishOutcome> f =
                ch.publish("", "nowhere", true, BasicProperties.EMPTY, text("a body of more than 16 bytes"));
        PublishFixture.Published p = expectPublish(broker, 1);
        returnUnroutable(broker);
        return new Returned(ch, f, p);
    }

    /**
     * The return's method frame is read before the application's close and its content after it (a large body
     * spans reads; the loop runs the close between them). Before, the close dropped the return half-read: the ack
     * that followed made the publish CONFIRMED and the return listeners never heard of it.
     */
    @Test
    void aReturnWhoseContentArrivesAfterTheApplicationsCloseStillReturnsItsPublish() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            List<String> returned = new ArrayList<>();
            ch.addReturnListener(m -> returned.add(m.body().toString(StandardCharsets.UTF_8)));
            confirmMode(broker, ch);
            CompletionStage<PublishOutcome> f = ch.publish("", "nowhere", true, BasicProperties.EMPTY, text("lost"));
            PublishFixture.Published p = expectPublish(broker, 1);
            returnUnroutable(broker);
            CompletionStage<Void> closed = ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.sendContent(1, p.properties(), p.body());
            ack(broker, 1, 1, false);
            broker.sendChannelCloseOk(1);
            assertTrue(closed.toCompletableFuture().isDone());
            PublishOutcome outcome = f.toCompletableFuture().join();
            assertTrue(outcome.isReturned(), "outcome of an unroutable mandatory publish: " + outcome);
            assertEquals(List.of("lost"), returned, "the return listener heard of the return");
        }
    }

    /**
     * A return over the inbound size limit is dropped and the channel closed (311): which publish it returned is not
     * known, so the outstanding ones fail as unconfirmed at that close instead of waiting for acks that would make
     * the returned one CONFIRMED.
     */
    @Test
    void aReturnOverTheInboundLimitLeavesNoPublishConfirmed() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().maxInboundMessageBodySize(16))) {
            Returned r = returnedOverTheLimit(broker);
            broker.sendContent(1, r.published().properties(), r.published().body());
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE); // 311, the client's limit
            ack(broker, 1, 1, false);
            broker.sendChannelCloseOk(1);
            PublishNotConfirmedException e =
                    assertInstanceOf(PublishNotConfirmedException.class, ChannelTest.failure(r.outcome()));
            assertTrue(e.mayHaveReachedBroker());
            ChannelClosedException closed = assertInstanceOf(ChannelClosedException.class, e.getCause());
            assertEquals(ReplyCode.CONTENT_TOO_LARGE, closed.replyCode());
        }
    }

    /**
     * The same when the oversized return's content is read after the application's close (the return goes on
     * through it): the close has come already, so the outstanding publishes fail as the return is dropped. Found by a
     * review of the commit that let returns through the close: the ack that followed made it CONFIRMED.
     */
    @Test
    void aReturnOverTheInboundLimitReadThroughTheApplicationsCloseLeavesNoPublishConfirmed() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().maxInboundMessageBodySize(16))) {
            Returned r = returnedOverTheLimit(broker);
            CompletionStage<Void> closed = r.channel().close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.sendContent(1, r.published().properties(), r.published().body()); // over the limit: dropped
            ack(broker, 1, 1, false);
            broker.sendChannelCloseOk(1);
            assertTrue(closed.toCompletableFuture().isDone());
            PublishNotConfirmedException e =
                    assertInstanceOf(PublishNotConfirmedException.class, ChannelTest.failure(r.outcome()));
            assertInstanceOf(io.warren.MessageTooLargeException.class, e.getCause());
        }
    }
}
