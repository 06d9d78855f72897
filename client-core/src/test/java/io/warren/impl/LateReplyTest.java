package io.warren.impl;

import static io.warren.impl.ChannelTest.failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.GetResponse;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.RpcTimeoutException;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicCancelOkEncoder;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicGetOkEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.ConfirmSelectOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.TxCommitOkEncoder;
import io.warren.codec.method.TxSelectOkEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The reply to a request that timed out, when it changes what the broker holds for the channel: the client acts on
 * it rather than drop it, so that what follows (a message's content, deliveries) finds the two agreeing.
 */
class LateReplyTest {

    private static final byte[] BODY = "late".getBytes(StandardCharsets.UTF_8);

    private static FakeBroker broker() {
        return new FakeBroker(new ConnectionOptions().rpcTimeout(Duration.ofSeconds(5)));
    }

    private static void timeOut(FakeBroker broker) {
        broker.client.advanceTimeBy(6, TimeUnit.SECONDS);
        broker.client.runScheduledPendingTasks();
    }

    /** A consumer on queue "q" (prefetch 10, qos-ok answered), its basic.consume read and not answered yet. */
    private static CompletionStage<ConsumerHandle> consumeUpToConsumeOk(
            FakeBroker broker, Channel ch, io.warren.DeliveryHandler handler) {
        CompletionStage<ConsumerHandle> consume = ch.consume("q", new ConsumeOptions().prefetch(10), handler);
        broker.expectAndRelease(1, MethodIds.BASIC_QOS);
        broker.send(1, new BasicQosOkEncoder());
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        return consume;
    }

    /** Every frame the client wrote, as text (settlements) or method names. */
    private static List<String> written(FakeBroker broker) {
        broker.client.runPendingTasks();
        return broker.written();
    }

    /** Before: the content after a late get-ok found no assembler, and the connection closed with 505. */
    @Test
    void aLateGetOkIsAssembledAndItsMessageGivenBack() {
        try (FakeBroker broker = broker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<GetResponse> get = ch.basicGet("q", false);
            broker.expectAndRelease(1, MethodIds.BASIC_GET);
            timeOut(broker);
            assertInstanceOf(RpcTimeoutException.class, failure(get));

            broker.send(1, new BasicGetOkEncoder().deliveryTag(1).exchange("").routingKey("q"));
            broker.sendContent(1, BasicProperties.EMPTY, BODY);
            assertEquals(List.of("reject 1 requeue"), written(broker), "nobody has the message: it goes back");
            assertTrue(c.isOpen());
            assertTrue(ch.isOpen());
        }
    }

    /** Before: the broker kept a consumer the client did not know, whose deliveries were dropped unsettled. */
    @Test
    void aLateConsumeOkCancelsTheConsumerAndGivesItsDeliveriesBack() {
        try (FakeBroker broker = broker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            List<String> handled = new ArrayList<>();
            CompletionStage<ConsumerHandle> consume =
                    consumeUpToConsumeOk(broker, ch, d -> handled.add(d.body().toString(StandardCharsets.UTF_8)));
            timeOut(broker);
            assertInstanceOf(RpcTimeoutException.class, failure(consume));

            broker.send(1, new BasicConsumeOkEncoder().consumerTag("late"));
            broker.sendDeliver(1, "late", 1, false, BasicProperties.EMPTY, BODY);
            List<String> out = written(broker);
            assertTrue(out.contains("method basic.cancel"), "the consumer is cancelled: " + out);
            assertTrue(out.contains("reject 1 requeue"), "its delivery goes back to the queue: " + out);
            broker.send(1, new BasicCancelOkEncoder().consumerTag("late"));
            assertEquals(List.of(), handled, "the application was told it has no such consumer");
            assertEquals(List.of(), written(broker));
            assertTrue(ch.isOpen());
        }
    }

    /** Before: the consumer stayed active for ever, its end never came. */
    @Test
    void aLateCancelOkEndsTheConsumer() {
        try (FakeBroker broker = broker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<ConsumerHandle> consume = consumeUpToConsumeOk(broker, ch, d -> {});
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            ConsumerHandle handle = consume.toCompletableFuture().join();
            CompletionStage<Void> cancel = handle.cancel();
            broker.client.runPendingTasks();
            broker.expectAndRelease(1, MethodIds.BASIC_CANCEL);
            timeOut(broker);
            assertInstanceOf(RpcTimeoutException.class, failure(cancel));
            assertTrue(handle.isActive());

            broker.send(1, new BasicCancelOkEncoder().consumerTag("c"));
            assertFalse(handle.isActive());
            assertTrue(handle.endFuture().toCompletableFuture().isDone());
            assertTrue(ch.isOpen());
        }
    }

    /**
     * Before: the publish held during the select went out unnumbered while the broker, in confirm mode, counted it;
     * a retried select numbered from 1 again, and acks named the wrong publishes. Whether the broker is in confirm
     * mode is unknown: the channel closes.
     */
    @Test
    void aConfirmSelectTimedOutOnTheWireClosesTheChannel() {
        try (FakeBroker broker = broker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<Void> select = ch.confirmSelect();
            broker.expectAndRelease(1, MethodIds.CONFIRM_SELECT);
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, BasicProperties.EMPTY, BODY);
            timeOut(broker);
            assertInstanceOf(RpcTimeoutException.class, failure(select));
            assertInstanceOf(PublishNotConfirmedException.class, failure(held));
            assertEquals(List.of("method channel.close"), written(broker), "the held publish is not written");
            assertFalse(ch.isOpen());
            assertInstanceOf(
                    ChannelClosedException.class, failure(ch.publish("", "q", false, BasicProperties.EMPTY, BODY)));

            broker.send(1, new ConfirmSelectOkEncoder()); // late: dropped while closing
            broker.sendChannelCloseOk(1);
            assertEquals(List.of(), written(broker));
            assertTrue(c.isOpen());
        }
    }

    /** Before: the late tx.select-ok was dropped and the channel went on in tx mode, its publishes never committed. */
    @Test
    void aTxSelectTimedOutOnTheWireClosesTheChannel() {
        try (FakeBroker broker = broker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            CompletionStage<Void> select = ch.txSelect();
            broker.expectAndRelease(1, MethodIds.TX_SELECT);
            timeOut(broker);
            assertInstanceOf(RpcTimeoutException.class, failure(select));
            assertEquals(List.of("method channel.close"), written(broker));
            assertFalse(ch.isOpen());

            broker.send(1, new TxSelectOkEncoder());
            broker.sendChannelCloseOk(1);
            assertEquals(List.of(), written(broker));
            assertTrue(c.isOpen());
        }
    }

    /**
     * A tx.commit timed out on the wire may still be being committed, and RabbitMQ closes the connection (504) over any
     * command on the channel but channel.close until it answers. Before, the publish held for the commit was written
     * at the timeout; now the channel closes and the held publish fails unwritten.
     */
    @Test
    void aTxCommitTimedOutOnTheWireClosesTheChannel() {
        try (FakeBroker broker = broker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            ch.txSelect();
            broker.expectAndRelease(1, MethodIds.TX_SELECT);
            broker.send(1, new TxSelectOkEncoder());
            CompletionStage<Void> commit = ch.txCommit();
            broker.expectAndRelease(1, MethodIds.TX_COMMIT);
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, BasicProperties.EMPTY, BODY);
            timeOut(broker);
            assertInstanceOf(RpcTimeoutException.class, failure(commit));
            assertInstanceOf(ChannelClosedException.class, failure(held));
            assertEquals(List.of("method channel.close"), written(broker), "the held publish is not written");
            assertFalse(ch.isOpen());

            broker.send(1, new TxCommitOkEncoder()); // late: dropped while closing
            broker.sendChannelCloseOk(1);
            assertEquals(List.of(), written(broker));
            assertTrue(c.isOpen());
        }
    }

    /** A select that timed out before it was sent changed nothing at the broker: the channel stays open. */
    @Test
    void aConfirmSelectTimedOutBeforeItWasSentLeavesTheChannelOpen() {
        try (FakeBroker broker = broker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            ch.queueDeclare("q");
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            CompletionStage<Void> select = ch.confirmSelect();
            timeOut(broker);
            assertInstanceOf(RpcTimeoutException.class, failure(select));
            assertEquals(List.of(), written(broker));
            assertTrue(ch.isOpen());
        }
    }
}
