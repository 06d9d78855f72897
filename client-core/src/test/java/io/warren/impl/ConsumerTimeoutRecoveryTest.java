package io.warren.impl;

import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ChannelLostException;
import io.warren.ConnectionClosedException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.DeclaredQueue;
import io.warren.Delivery;
import io.warren.DeliveryHandler;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.StaleDeliveryException;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.ConnectionCloseOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.QueueDeclareOkEncoder;
import io.warren.impl.consume.ConsumerImpl;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * RabbitMQ's delivery acknowledgement timeout ({@code consumer_timeout}) closes the consumer's channel with 406
 * PRECONDITION_FAILED: the channel is recovered on the same connection, as after a connection loss (same channel
 * and consumer objects, stale tags refused, the listener told why), and the age of the oldest unacknowledged
 * delivery showed it coming. Against a scripted broker, on its frozen clock.
 */
class ConsumerTimeoutRecoveryTest {

    private static final byte[] BODY = "m".getBytes(StandardCharsets.UTF_8);

    /** RabbitMQ 3.10's text (rabbit_channel's evaluate_consumer_timeout). */
    private static final String TIMED_OUT = "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. "
            + "Timeout value used: 1800000 ms. This timeout value can be configured, see consumers doc guide to learn "
            + "more";

    private static void deliver(FakeBroker broker, long tag, boolean redelivered) {
        broker.sendDeliver(1, "c", tag, redelivered, BasicProperties.EMPTY, BODY);
    }

    /** basic.qos with the default prefetch, then basic.consume of "c", answered. */
    private static void answerConsume(FakeBroker broker) {
        broker.expectAndRelease(1, MethodIds.BASIC_QOS);
        broker.send(1, new BasicQosOkEncoder());
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
    }

    private static long ageMillis(ConsumerHandle c) {
        return TimeUnit.NANOSECONDS.toMillis(((ConsumerImpl) c).oldestUnacknowledgedAgeNanos());
    }

    @Test
    void theAckTimeoutsChannelCloseIsRecoveredOnTheSameConnectionWithTheSameConsumer() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = broker.openChannel(brokers.connection, 1);
            List<Delivery> kept = new ArrayList<>();
            CompletionStage<ConsumerHandle> stage =
                    ch.consume("q", new ConsumeOptions().consumerTag("c"), d -> kept.add(d.retain()));
            answerConsume(broker);
            ConsumerHandle c = stage.toCompletableFuture().join();
            try {
                assertEquals(0, ageMillis(c), "nothing delivered");
                deliver(broker, 1, false);
                broker.client.advanceTimeBy(7, TimeUnit.SECONDS);
                deliver(broker, 2, false);
                broker.client.advanceTimeBy(3, TimeUnit.SECONDS);
                assertEquals(10_000, ageMillis(c), "the oldest unacknowledged delivery came 10 s ago");
                kept.get(0).ack();
                assertEquals("ack 1", FakeBroker.settlement(broker.next()));
                assertEquals(3_000, ageMillis(c), "now the second is the oldest");

                ackTimeout(broker);
                // the same number again on the same connection, then the consumer with its tag and prefetch
                RecoveringBrokers.reopen(broker, 1);
                answerConsume(broker);
                brokers.runAllTasks();
                assertEquals(List.of("channel 1 started 406", "channel 1 succeeded"), recovery.events());
                assertTrue(((ChannelLostException) recovery.cause(0))
                        .replyText()
                        .startsWith("PRECONDITION_FAILED - delivery acknowledgement"));
                assertTrue(ch.isOpen());
                assertFalse(ch.closeFuture().toCompletableFuture().isDone());
                assertTrue(c.isActive());
                assertFalse(c.endFuture().toCompletableFuture().isDone());
                assertEquals(1, brokers.connections(), "the connection was not touched");
                assertEquals(0, ageMillis(c), "the broker requeued what was unacknowledged");

                // delivery 2 is stale: its tag names nothing (or another message) on the new channel
                assertThrows(StaleDeliveryException.class, () -> kept.get(1).ack());
                broker.expectNothing();
                deliver(broker, 1, true); // the broker's redelivery of message 2
                assertEquals(3, kept.size());
                assertEquals(3, kept.get(2).deliveryTag(), "tags continue above those seen before");
                assertTrue(kept.get(2).redelivered());
                kept.get(2).ack();
                assertEquals("ack 1", FakeBroker.settlement(broker.next()));
                broker.expectNothing();
            } finally {
                kept.forEach(Delivery::release);
            }
        }
    }

    @Test
    void anotherPreconditionFailedStillEndsTheChannelAndItsConsumers() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = broker.openChannel(brokers.connection, 1);
            CompletionStage<ConsumerHandle> stage =
                    ch.consume("q", new ConsumeOptions().consumerTag("c"), Delivery::ack);
            answerConsume(broker);
            ConsumerHandle c = stage.toCompletableFuture().join();
            broker.sendChannelClose(
                    1, ReplyCode.PRECONDITION_FAILED, "PRECONDITION_FAILED - unknown delivery tag 9", 60, 80);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();
            broker.expectNothing();
            assertEquals(List.of(), recovery.events());
            assertFalse(ch.isOpen());
            ChannelClosedException closed = assertInstanceOf(
                    ChannelClosedException.class,
                    ch.closeFuture().toCompletableFuture().join());
            assertFalse(closed instanceof ChannelLostException);
            assertEquals(ReplyCode.PRECONDITION_FAILED, closed.replyCode());
            assertFalse(c.isActive());
        }
    }

    @Test
    void aChannelWhoseRestoreIsRefusedEndsForGoodAndTheListenerIsToldWhy() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = withChannelQos(brokers);
            ConsumerHandle c = consume(broker, ch, "q", "c"); // the channel's own qos applies: no default

            ackTimeout(broker);
            RecoveringBrokers.reopen(broker, 1);
            broker.expectAndRelease(1, MethodIds.BASIC_QOS); // the channel's mode first: refused this time
            broker.sendChannelClose(1, ReplyCode.ACCESS_REFUSED, "ACCESS_REFUSED - no", 60, 10);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();
            broker.expectNothing();
            assertEquals(List.of("channel 1 started 406", "channel 1 failed 403"), recovery.events());
            assertInstanceOf(ChannelClosedException.class, recovery.cause(1));
            assertFalse(ch.isOpen());
            assertEquals(
                    ReplyCode.ACCESS_REFUSED,
                    ch.closeFuture().toCompletableFuture().join().replyCode());
            assertFalse(c.isActive(), "its consumer ended with the channel");
            assertEquals(
                    ReplyCode.ACCESS_REFUSED,
                    c.endFuture().toCompletableFuture().join().replyCode());
            assertEquals(1, brokers.connections());
        }
    }

    /**
     * While the channel alone is restored, the broker refuses one consumer's basic.consume (404: its queue was deleted
     * meanwhile; 403: in another connection's exclusive use; 405: another connection's exclusive queue), which closes the channel again. That consumer ends with
     * the refusal; the channel is opened again with its mode and its other consumer, as in a connection's recovery.
     * Before, the channel and both consumers ended for good.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "404 | NOT_FOUND - no queue 'q' in vhost '/'",
                "403 | ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use",
                "405 | RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'q' in vhost '/'"
            })
    void aRestoredConsumerRefusedEndsAndTheChannelIsReopenedWithoutIt(int replyCode, String replyText) {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = withChannelQos(brokers);
            ConsumerHandle refused = consume(broker, ch, "q", "x");
            List<Long> seen = new ArrayList<>();
            ConsumerHandle kept = consume(broker, ch, "r", "y", d -> {
                seen.add(d.deliveryTag());
                d.ack();
            });

            timedOutAndReopened(broker);
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME); // x's, refused
            broker.sendChannelClose(1, replyCode, replyText, MethodIds.CLASS_BASIC, 20);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();
            RecoveringBrokers.reopen(broker, 1);
            broker.expectAndRelease(1, MethodIds.BASIC_QOS);
            broker.send(1, new BasicQosOkEncoder());
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME); // y's
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("y"));
            brokers.runAllTasks();
            broker.expectNothing();

            assertEquals(List.of("channel 1 started 406", "channel 1 succeeded"), recovery.events());
            assertTrue(ch.isOpen(), "the channel is open again");
            assertFalse(ch.closeFuture().toCompletableFuture().isDone());
            assertFalse(refused.isActive());
            assertEquals(
                    replyCode,
                    refused.endFuture().toCompletableFuture().getNow(null).replyCode());
            assertTrue(kept.isActive());
            broker.sendDeliver(1, "y", 1, true, BasicProperties.EMPTY, BODY);
            assertEquals(List.of(1L), seen);
            assertEquals("ack 1", FakeBroker.settlement(broker.next()));
            assertEquals(1, brokers.connections(), "the connection was not touched");
        }
    }

    /**
     * What the application calls while the channel alone is restored is held through a consumer's refusal (it closes the
     * channel again) and goes out, in its order, once the channel is back with its other consumer.
     */
    @Test
    void whatIsHeldSurvivesARefusedConsumerOfTheRestore() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            Channel ch = withChannelQos(brokers);
            ConsumerHandle refused = consume(broker, ch, "q", "x");
            ConsumerHandle kept = consume(broker, ch, "r", "y");

            timedOutAndReopened(broker);
            CompletionStage<PublishOutcome> published = ch.publish("", "r", false, BasicProperties.EMPTY, text("held"));
            CompletionStage<DeclaredQueue> declared = ch.queueDeclare(QueueSpec.named("s"));
            brokers.runAllTasks();
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME); // x's, refused
            broker.sendChannelClose(1, ReplyCode.NOT_FOUND, "NOT_FOUND - no queue 'q' in vhost '/'", 60, 20);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();
            RecoveringBrokers.reopen(broker, 1);
            broker.expectAndRelease(1, MethodIds.BASIC_QOS);
            broker.send(1, new BasicQosOkEncoder());
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME); // y's
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("y"));
            brokers.runAllTasks();
            assertEquals("held", expectPublish(broker, 1).text());
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.send(1, new QueueDeclareOkEncoder().queue("s"));
            brokers.runAllTasks();
            broker.expectNothing();

            assertTrue(published.toCompletableFuture().isDone(), "the held publish was written");
            assertFalse(published.toCompletableFuture().isCompletedExceptionally());
            assertEquals("s", declared.toCompletableFuture().join().queue());
            assertFalse(refused.isActive());
            assertTrue(kept.isActive());
            assertTrue(ch.isOpen());
        }
    }

    /**
     * The application closes the connection while the channel alone is re-opened (its channel.open unanswered): the
     * channel ends with the connection, and so do its consumer, the publish and the method held for it and
     * whenWritable(). As when it closes the connection during the connection's recovery, the listener is told nothing
     * more. Before, the consumer and whenWritable() waited for ever, and what was held until its own timeout.
     */
    @Test
    void theConnectionClosedWhileTheChannelIsReopenedEndsTheChannelsRecovery() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = withChannelQos(brokers);
            ConsumerHandle c = consume(broker, ch, "q", "c");
            ackTimeout(broker);
            broker.expectAndRelease(1, MethodIds.CHANNEL_OPEN); // not answered
            CompletionStage<PublishOutcome> published = ch.publish("", "q", false, BasicProperties.EMPTY, text("held"));
            CompletionStage<?> declared = ch.queueDeclare(QueueSpec.named("s"));
            CompletionStage<Void> writable = ch.whenWritable();

            CompletionStage<Void> closing = brokers.connection.close();
            brokers.runAllTasks();
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE);
            broker.send(0, new ConnectionCloseOkEncoder());
            brokers.runAllTasks();

            assertTrue(closing.toCompletableFuture().isDone());
            assertFalse(ch.isOpen());
            assertInstanceOf(
                    ConnectionClosedException.class,
                    ch.closeFuture().toCompletableFuture().getNow(null));
            assertInstanceOf(
                    ConnectionClosedException.class,
                    c.endFuture().toCompletableFuture().getNow(null),
                    "the consumer ended with the connection");
            assertInstanceOf(PublishNotConfirmedException.class, failure(published));
            assertInstanceOf(ConnectionClosedException.class, failure(declared));
            assertInstanceOf(ConnectionClosedException.class, failure(writable));
            assertEquals(List.of("channel 1 started 406"), recovery.events());
            broker.expectNothing();
        }
    }

    /**
     * While the channel alone is restored, the broker closes it for a reason recovery does not repair (406 to the
     * consumer's basic.consume: an argument the queue refuses). The channel ends, and the listener is told it failed,
     * with the close. Before, it was told the channel had recovered, and the channel was closed.
     */
    @Test
    void aChannelClosedForGoodDuringItsRestoreIsReportedFailedNotRecovered() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = withChannelQos(brokers);
            ConsumerHandle c = consume(broker, ch, "q", "c");

            timedOutAndReopened(broker);
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
            broker.sendChannelClose(
                    1,
                    ReplyCode.PRECONDITION_FAILED,
                    "PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q'",
                    MethodIds.CLASS_BASIC,
                    20);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();
            broker.expectNothing();

            assertEquals(List.of("channel 1 started 406", "channel 1 failed 406"), recovery.events());
            assertEquals(
                    "PRECONDITION_FAILED - invalid arg 'x-priority' for queue 'q'",
                    ((ChannelClosedException) recovery.cause(1)).replyText());
            assertFalse(ch.isOpen());
            assertFalse(c.isActive());
            assertEquals(1, brokers.connections());
        }
    }

    /**
     * The ack timeout closes the channel of the only consumer of auto-delete queue q, which the broker deletes with
     * it. The channel's restore looks for q (a passive declare on recovery's own channel) and would declare it again,
     * but the application cancels the consumer while the passive declare is on the wire: q, found gone, is left gone
     * (declared again it would keep no consumer, so the broker would never delete it), the consumer ends and the
     * record forgets q.
     */
    @Test
    void anAutoDeleteQueueWhoseConsumerIsCancelledDuringTheRestoreIsNotDeclaredAgain() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = broker.openChannel(brokers.connection, 1);
            CompletionStage<?> declared = ch.queueDeclare(QueueSpec.named("q").autoDelete(true));
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.send(1, new QueueDeclareOkEncoder().queue("q"));
            declared.toCompletableFuture().join();
            CompletionStage<ConsumerHandle> stage =
                    ch.consume("q", new ConsumeOptions().consumerTag("c"), Delivery::ack);
            answerConsume(broker);
            ConsumerHandle c = stage.toCompletableFuture().join();

            ackTimeout(broker);
            RecoveringBrokers.reopen(broker, 1);
            RecoveringBrokers.reopen(broker, 2); // recovery's own channel
            broker.expectAndRelease(2, MethodIds.QUEUE_DECLARE); // passive
            c.cancel();
            brokers.runAllTasks();
            broker.sendChannelClose(2, ReplyCode.NOT_FOUND, "NOT_FOUND - no queue 'q' in vhost '/'", 50, 10);
            brokers.runAllTasks();
            assertEquals(
                    List.of("method channel.close-ok"), broker.written(), "the 404 answered; no declare, no consume");

            assertEquals(List.of("channel 1 started 406", "channel 1 succeeded"), recovery.events());
            assertFalse(c.isActive());
            assertEquals(List.of(), brokers.recovery.topology().queues(), "q is forgotten, as the broker forgot it");
            assertTrue(ch.isOpen());
        }
    }

    /**
     * Two consumers of one auto-delete queue on the timed-out channel: the restore asks once whether the queue is
     * gone, not once per consumer. Before, the queue was looked for twice.
     */
    @Test
    void anAutoDeleteQueueReadByTwoConsumersIsLookedForOnce() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            Channel ch = withChannelQos(brokers);
            CompletionStage<?> declared = ch.queueDeclare(QueueSpec.named("q").autoDelete(true));
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            broker.send(1, new QueueDeclareOkEncoder().queue("q"));
            declared.toCompletableFuture().join();
            ConsumerHandle a = consume(broker, ch, "q", "a");
            ConsumerHandle b = consume(broker, ch, "q", "b");

            timedOutAndReopened(broker);
            RecoveringBrokers.reopen(broker, 2); // recovery's own channel
            broker.expectAndRelease(2, MethodIds.QUEUE_DECLARE); // passive: q is still there
            broker.send(2, new QueueDeclareOkEncoder().queue("q"));
            brokers.runAllTasks();
            broker.expectAndRelease(2, MethodIds.CHANNEL_CLOSE); // not a second passive declare
            broker.sendChannelCloseOk(2);
            for (String tag : List.of("a", "b")) {
                broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
                broker.send(1, new BasicConsumeOkEncoder().consumerTag(tag));
            }
            brokers.runAllTasks();
            assertTrue(a.isActive() && b.isActive());
        }
    }

    /** Channel 1 with a basic.qos of its own (10), answered: its consumers send none. */
    private static Channel withChannelQos(RecoveringBrokers brokers) {
        Channel ch = brokers.first.openChannel(brokers.connection, 1);
        CompletionStage<Void> qos = ch.basicQos(10);
        brokers.first.expectAndRelease(1, MethodIds.BASIC_QOS);
        brokers.first.send(1, new BasicQosOkEncoder());
        qos.toCompletableFuture().join();
        return ch;
    }

    /** The ack timeout closes channel 1; it is opened again with its basic.qos, answered, up to its consumers. */
    private static void timedOutAndReopened(FakeBroker broker) {
        ackTimeout(broker);
        RecoveringBrokers.reopen(broker, 1);
        broker.expectAndRelease(1, MethodIds.BASIC_QOS);
        broker.send(1, new BasicQosOkEncoder());
    }

    /** RabbitMQ's delivery acknowledgement timeout closes channel 1; the client answers close-ok. */
    private static void ackTimeout(FakeBroker broker) {
        broker.sendChannelClose(1, ReplyCode.PRECONDITION_FAILED, TIMED_OUT, 0, 0);
        broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
    }

    /** A consumer of {@code queue} with tag {@code tag} under the channel's own qos, answered. */
    private static ConsumerHandle consume(FakeBroker broker, Channel ch, String queue, String tag) {
        return consume(broker, ch, queue, tag, Delivery::ack);
    }

    private static ConsumerHandle consume(
            FakeBroker broker, Channel ch, String queue, String tag, DeliveryHandler handler) {
        CompletionStage<ConsumerHandle> stage = ch.consume(queue, new ConsumeOptions().consumerTag(tag), handler);
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag(tag));
        return stage.toCompletableFuture().join();
    }

    @Test
    void aConnectionLostWhileTheChannelIsReopenedTakesTheChannelOver() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker broker = brokers.first;
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Channel ch = broker.openChannel(brokers.connection, 1);
            List<Long> seen = new ArrayList<>();
            CompletionStage<ConsumerHandle> stage = ch.consume("q", new ConsumeOptions().consumerTag("c"), d -> {
                seen.add(d.deliveryTag());
                d.ack();
            });
            answerConsume(broker);
            ConsumerHandle c = stage.toCompletableFuture().join();
            ackTimeout(broker);
            broker.expectAndRelease(1, MethodIds.CHANNEL_OPEN); // not answered: the connection goes first

            FakeBroker second = brokers.cutAndReconnect();
            RecoveringBrokers.reopen(second, 1);
            answerConsume(second);
            brokers.runAllTasks();
            second.expectNothing();
            assertEquals(List.of("channel 1 started 406", "recovery started", "recovery succeeded"), recovery.events());
            assertTrue(ch.isOpen());
            assertTrue(c.isActive());
            deliver(second, 1, true);
            assertEquals(List.of(1L), seen);
            assertEquals("ack 1", FakeBroker.settlement(second.next()));
        }
    }
}
