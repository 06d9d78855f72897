package io.warren.impl;

import static io.warren.impl.PublishFixture.ack;
import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.confirmMode;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.warren.AmqpException;
import io.warren.BlockedListener;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionBlockedException;
import io.warren.ConnectionLostException;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.ExchangeSpec;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RpcTimeoutException;
import io.warren.StaleDeliveryException;
import io.warren.codec.Frame;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicAck;
import io.warren.codec.method.BasicCancelOkEncoder;
import io.warren.codec.method.BasicConsume;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicQos;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.ChannelCloseOkEncoder;
import io.warren.codec.method.ChannelOpenOkEncoder;
import io.warren.codec.method.ConfirmSelectOkEncoder;
import io.warren.codec.method.ConnectionBlockedEncoder;
import io.warren.codec.method.ConnectionUnblockedEncoder;
import io.warren.codec.method.ExchangeBind;
import io.warren.codec.method.ExchangeBindOkEncoder;
import io.warren.codec.method.ExchangeDeclareOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.QueueBind;
import io.warren.codec.method.QueueBindOkEncoder;
import io.warren.codec.method.QueueDeclareOkEncoder;
import io.warren.impl.connection.MethodNames;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Automatic recovery without a broker: the connection is cut under a {@link FakeBroker}, recovery reconnects to
 * the next one ({@link RecoveringBrokers}) and the test reads, in order, everything the restore writes.
 */
class RecoveryTest {

    private static final BasicProperties PROPS = BasicProperties.EMPTY;

    /**
     * Plays the broker: reads every method the client wrote until it writes nothing more, answers each as
     * RabbitMQ would (a server-named queue is called {@code amq.gen-<generation>-<n>}) and returns one line per
     * method, in the order they were written.
     */
    private static final class Answers {
        private final FakeBroker broker;
        private final String generation;
        private int serverNamed;

        Answers(FakeBroker broker, String generation) {
            this.broker = broker;
            this.generation = generation;
        }

        List<String> all() {
            List<String> lines = new ArrayList<>();
            Frame f;
            while ((f = broker.next()) != null) {
                try {
                    assertEquals(FrameType.METHOD, f.type(), "only methods are expected here");
                    lines.add(f.channel() + " " + answer(f.channel(), f.payload()));
                } finally {
                    f.release();
                }
            }
            return lines;
        }

        private String answer(int ch, ByteBuf p) {
            int at = p.readerIndex();
            int key = p.getInt(at);
            switch (key) {
                case MethodIds.CHANNEL_OPEN -> {
                    broker.send(ch, new ChannelOpenOkEncoder());
                    return "channel.open";
                }
                case MethodIds.CHANNEL_CLOSE -> {
                    broker.send(ch, new ChannelCloseOkEncoder());
                    return "channel.close";
                }
                case MethodIds.BASIC_QOS -> {
                    BasicQos q = new BasicQos().wrap(p, at);
                    broker.send(ch, new BasicQosOkEncoder());
                    return "basic.qos " + q.prefetchCount() + (q.global() ? " global" : "");
                }
                case MethodIds.CONFIRM_SELECT -> {
                    broker.send(ch, new ConfirmSelectOkEncoder());
                    return "confirm.select";
                }
                case MethodIds.EXCHANGE_DECLARE -> {
                    io.warren.codec.method.ExchangeDeclare x = new io.warren.codec.method.ExchangeDeclare().wrap(p, at);
                    broker.send(ch, new ExchangeDeclareOkEncoder());
                    return "exchange.declare " + x.exchangeAsString() + " " + x.typeAsString()
                            + (x.durable() ? " durable" : "");
                }
                case MethodIds.QUEUE_DECLARE -> {
                    io.warren.codec.method.QueueDeclare q = new io.warren.codec.method.QueueDeclare().wrap(p, at);
                    String asked = q.queueAsString();
                    String name = asked.isEmpty() ? "amq.gen-" + generation + "-" + (++serverNamed) : asked;
                    broker.send(
                            ch,
                            new QueueDeclareOkEncoder()
                                    .queue(name)
                                    .messageCount(0)
                                    .consumerCount(0));
                    return "queue.declare '" + asked + "'" + (q.exclusive() ? " exclusive" : "")
                            + (q.durable() ? " durable" : "") + " -> " + name;
                }
                case MethodIds.QUEUE_PURGE -> {
                    io.warren.codec.method.QueuePurge q = new io.warren.codec.method.QueuePurge().wrap(p, at);
                    broker.send(ch, new io.warren.codec.method.QueuePurgeOkEncoder().messageCount(0));
                    return "queue.purge " + q.queueAsString();
                }
                case MethodIds.QUEUE_BIND -> {
                    QueueBind b = new QueueBind().wrap(p, at);
                    broker.send(ch, new QueueBindOkEncoder());
                    return "queue.bind " + b.queueAsString() + " <- " + b.exchangeAsString() + " "
                            + b.routingKeyAsString();
                }
                case MethodIds.EXCHANGE_BIND -> {
                    ExchangeBind b = new ExchangeBind().wrap(p, at);
                    broker.send(ch, new ExchangeBindOkEncoder());
                    return "exchange.bind " + b.destinationAsString() + " <- " + b.sourceAsString() + " "
                            + b.routingKeyAsString();
                }
                case MethodIds.BASIC_CONSUME -> {
                    BasicConsume c = new BasicConsume().wrap(p, at);
                    broker.send(ch, new BasicConsumeOkEncoder().consumerTag(c.consumerTagAsString()));
                    return "basic.consume " + c.queueAsString() + " " + c.consumerTagAsString()
                            + (c.exclusive() ? " exclusive" : "") + (c.noAck() ? " noAck" : "")
                            + (c.arguments().isEmpty()
                                    ? ""
                                    : " x-priority=" + c.arguments().get("x-priority"));
                }
                default -> throw new AssertionError("unexpected " + MethodNames.describe(key) + " on channel " + ch);
            }
        }
    }

    private static <T> T done(CompletionStage<T> stage) {
        assertTrue(stage.toCompletableFuture().isDone(), () -> "expected done: " + stage);
        return stage.toCompletableFuture().join();
    }

    private static void deliver(FakeBroker broker, String tag, long deliveryTag, String body) {
        broker.sendDeliver(1, tag, deliveryTag, false, PROPS, body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aCutConnectionIsReopenedAndEverythingRestoredInOrderUnderTheSameObjects() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            CompletionStage<Void> qos = ch.basicQos(0, 5, false);
            CompletionStage<Void> select = ch.confirmSelect();
            CompletionStage<Void> x =
                    ch.exchangeDeclare(ExchangeSpec.of("x", "topic").durable(true));
            CompletionStage<Void> x2 = ch.exchangeDeclare(ExchangeSpec.of("x2", "fanout"));
            var named = ch.queueDeclare(QueueSpec.serverNamed().exclusive(true));
            var q = ch.queueDeclare(QueueSpec.named("q").durable(true));
            assertEquals(
                    List.of(
                            "1 basic.qos 5",
                            "1 confirm.select",
                            "1 exchange.declare x topic durable",
                            "1 exchange.declare x2 fanout",
                            "1 queue.declare '' exclusive -> amq.gen-1-1",
                            "1 queue.declare 'q' durable -> q"),
                    first.all());
            done(qos);
            done(select);
            done(x);
            done(x2);
            String serverNamed = done(named).queue();
            assertEquals("amq.gen-1-1", serverNamed);
            done(q);
            CompletionStage<Void> b1 = ch.queueBind(serverNamed, "x", "a.#");
            CompletionStage<Void> b2 = ch.queueBind("q", "x", "b.#");
            CompletionStage<Void> b3 = ch.exchangeBind("x2", "x", "c.#");
            List<String> seen = new ArrayList<>();
            var c1 = ch.consume(
                    serverNamed,
                    new ConsumeOptions().consumerTag("c1").exclusive(true).priority(3),
                    d -> seen.add("c1 " + d.deliveryTag()));
            var c2 = ch.consume(
                    "q", new ConsumeOptions().consumerTag("c2").prefetch(10), d -> seen.add("c2 " + d.deliveryTag()));
            assertEquals(
                    List.of(
                            "1 queue.bind amq.gen-1-1 <- x a.#",
                            "1 queue.bind q <- x b.#",
                            "1 exchange.bind x2 <- x c.#",
                            "1 basic.consume amq.gen-1-1 c1 exclusive x-priority=3",
                            "1 basic.qos 10",
                            "1 basic.consume q c2"),
                    first.all());
            done(b1);
            done(b2);
            done(b3);
            ConsumerHandle h1 = done(c1);
            ConsumerHandle h2 = done(c2);

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(List.of("recovery started"), recovery.events());
            assertInstanceOf(ConnectionLostException.class, recovery.cause(0));
            assertTrue(brokers.connection.isRecovering());
            List<String> restore = new Answers(second, "2").all();
            assertEquals(
                    List.of(
                            // the channel, with its number, then its modes: qos before confirm.select
                            "1 channel.open",
                            "1 basic.qos 5",
                            "1 confirm.select",
                            // the topology on a channel of its own: exchanges, then queues (the server-named one gets a
                            // new name), then bindings, which follow the queue to its new name
                            "2 channel.open",
                            "2 exchange.declare x topic durable",
                            "2 exchange.declare x2 fanout",
                            "2 queue.declare '' exclusive -> amq.gen-2-1",
                            "2 queue.declare 'q' durable -> q",
                            "2 queue.bind q <- x b.#",
                            "2 exchange.bind x2 <- x c.#",
                            "2 queue.bind amq.gen-2-1 <- x a.#",
                            "2 channel.close",
                            // the consumers, last, with their tags and options, on their queues' names now
                            "1 basic.consume amq.gen-2-1 c1 exclusive x-priority=3",
                            "1 basic.qos 10",
                            "1 basic.consume q c2"),
                    restore);
            assertFalse(brokers.connection.isRecovering());
            assertTrue(brokers.connection.isOpen());
            assertTrue(ch.isOpen());
            assertEquals(
                    List.of("recovery started", "queue renamed amq.gen-1-1 -> amq.gen-2-1", "recovery succeeded"),
                    recovery.events());
            assertEquals(2, brokers.connections());

            // the same handles, now on the new names, and their deliveries arrive
            assertEquals("amq.gen-2-1", h1.queue());
            assertTrue(h1.isActive());
            assertSame(ch, h1.channel());
            deliver(second, "c1", 1, "one");
            deliver(second, "c2", 2, "two");
            assertEquals(List.of("c1 1", "c2 2"), seen);
            assertTrue(h2.isActive());
        }
    }

    @Test
    void aConsumerWhoseRecoveryIsCutBeforeConsumeOkIsRecoveredByTheNextRecovery() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            List<String> seen = new ArrayList<>();
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            ConsumerHandle h = consumerC(brokers, ch, seen);

            FakeBroker second = restoringUpToConsume(brokers); // the connection goes before consume-ok
            brokers.cut();
            assertEquals(
                    List.of("recovery started"),
                    recovery.events(),
                    "a restore cut before its consume-ok did not succeed: the loss failed the consume");
            assertTrue(h.isActive(), "a consumer lost again while it was being recovered waits for the next recovery");
            assertFalse(h.endFuture().toCompletableFuture().isDone());

            FakeBroker third = brokers.cutAndReconnectAfterLoss();
            assertEquals(
                    List.of("1 channel.open", "1 basic.qos 10", "1 basic.consume q c"), new Answers(third, "3").all());
            assertFalse(brokers.connection.isRecovering());
            assertTrue(ch.isOpen());
            assertTrue(h.isActive());
            assertSame(ch, h.channel());
            deliver(third, "c", 1, "after");
            assertEquals(List.of("after"), seen, "the consumer is consuming again");
            assertEquals(
                    List.of("recovery started", "recovery succeeded"),
                    recovery.events(),
                    "one recovery, over two connections: the one lost while restoring did not succeed");
            third.expectNothing();
        }
    }

    /**
     * The application cancels a consumer while recovery's basic.consume for it is on the way: the cancel waits for
     * consume-ok and goes to the broker then, instead of failing on the lost channel and leaving the consumer running.
     */
    @Test
    void aConsumerCancelledWhileItsRecoveryIsOnTheWayIsCancelledAtConsumeOk() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            ConsumerHandle h = consumerC(brokers, ch, new ArrayList<>());

            FakeBroker second = restoringUpToConsume(brokers);
            CompletionStage<Void> cancel = h.cancel();
            brokers.runAllTasks();
            assertFalse(cancel.toCompletableFuture().isDone(), "held until recovery's basic.consume is answered");

            second.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            brokers.runAllTasks();
            second.expectAndRelease(1, MethodIds.BASIC_CANCEL);
            second.send(1, new BasicCancelOkEncoder().consumerTag("c"));
            brokers.runAllTasks();
            done(cancel);
            assertFalse(h.isActive());
            second.expectNothing();
        }
    }

    /** Consumer "c" on {@code ch} (channel 1), started on the first broker (qos 10, consume-ok); bodies to {@code seen}. */
    private static ConsumerHandle consumerC(RecoveringBrokers brokers, Channel ch, List<String> seen) {
        var c = ch.consume(
                "q",
                new ConsumeOptions().consumerTag("c").prefetch(10),
                d -> seen.add(new String(d.bodyBytes(), StandardCharsets.UTF_8)));
        assertEquals(List.of("1 basic.qos 10", "1 basic.consume q c"), new Answers(brokers.first, "1").all());
        return done(c);
    }

    /** Cuts the connection and answers the restore of channel 1 up to consumer "c"'s basic.consume, left unanswered. */
    private static FakeBroker restoringUpToConsume(RecoveringBrokers brokers) {
        FakeBroker second = brokers.cutAndReconnect();
        RecoveringBrokers.reopen(second, 1);
        second.expectAndRelease(1, MethodIds.BASIC_QOS);
        second.send(1, new BasicQosOkEncoder());
        second.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        return second;
    }

    /** Brokers whose connections time requests out after 5 s (the tests step the clock 6 s). */
    private static RecoveringBrokers withRpcTimeout() {
        return new RecoveringBrokers(new io.warren.ConnectionOptions().rpcTimeout(java.time.Duration.ofSeconds(5)));
    }

    /**
     * Consumer "c" on channel 1: its basic.consume times out, its consume-ok comes after, and the client sends
     * basic.cancel for the consumer it was told it does not have (left unanswered).
     */
    private static void startedAfterTimeout(RecoveringBrokers brokers) {
        Channel ch = brokers.first.openChannel(brokers.connection, 1);
        var c = ch.consume("q", new ConsumeOptions().consumerTag("c").prefetch(10), d -> {});
        brokers.first.expectAndRelease(1, MethodIds.BASIC_QOS);
        brokers.first.send(1, new BasicQosOkEncoder());
        brokers.first.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        brokers.first.client.advanceTimeBy(6, java.util.concurrent.TimeUnit.SECONDS);
        brokers.first.client.runScheduledPendingTasks();
        assertTrue(c.toCompletableFuture().isCompletedExceptionally(), "basic.consume timed out");
        brokers.first.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
        brokers.runAllTasks();
        brokers.first.expectAndRelease(1, MethodIds.BASIC_CANCEL);
    }

    /** A basic.cancel cut off by the connection's loss before cancel-ok: recovery does not start the consumer again. */
    @Test
    void aCancelCutOffByTheLossIsNotUndoneByRecovery() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            ConsumerHandle h = consumerC(brokers, ch, new ArrayList<>());
            CompletionStage<Void> cancel = h.cancel();
            brokers.first.expectAndRelease(1, MethodIds.BASIC_CANCEL); // not answered: the connection goes first

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(List.of("1 channel.open"), new Answers(second, "2").all(), "no basic.consume for it");
            done(cancel);
            assertFalse(h.isActive());
        }
    }

    /**
     * A consumer started only to be cancelled (its consume-ok came after its basic.consume timed out), whose cancel the
     * connection's loss cut off: recovery does not start it again.
     */
    @Test
    void aConsumerCancelledForALateConsumeOkIsNotRecovered() {
        try (RecoveringBrokers brokers = withRpcTimeout()) {
            startedAfterTimeout(brokers);

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(List.of("1 channel.open"), new Answers(second, "2").all(), "no basic.consume for it");
        }
    }

    /**
     * A consumer started only to be cancelled (a late consume-ok) whose basic.cancel timed out too, and then the
     * connection went: recovery does not start it again (its deliveries are closed: it would reject everything the
     * broker sends it, for ever).
     */
    @Test
    void aConsumerWaitingOnlyForItsCancelIsNotRecoveredAfterTheCancelTimedOut() {
        try (RecoveringBrokers brokers = withRpcTimeout()) {
            startedAfterTimeout(brokers);
            brokers.first.client.advanceTimeBy(6, java.util.concurrent.TimeUnit.SECONDS);
            brokers.first.client.runScheduledPendingTasks(); // the basic.cancel times out too

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(List.of("1 channel.open"), new Answers(second, "2").all(), "no basic.consume for it");
        }
    }

    /**
     * The only consumer of an auto-delete queue is cancelled while the connection is down: the broker deleted the queue
     * with the old connection's consumers, and recovery does not declare it again (bound and consumed by nobody, it
     * would never be deleted and would collect messages).
     */
    @Test
    void anAutoDeleteQueueWhoseOnlyConsumerWasCancelledDuringTheOutageIsNotDeclaredAgain() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var q = ch.queueDeclare(QueueSpec.named("ad").autoDelete(true));
            var x = ch.exchangeDeclare(ExchangeSpec.of("x", "fanout"));
            first.all();
            done(q);
            done(x);
            var b = ch.queueBind("ad", "x", "");
            var c = ch.consume("ad", new ConsumeOptions().consumerTag("c"), d -> {});
            assertEquals(List.of("1 queue.bind ad <- x ", "1 basic.qos 250", "1 basic.consume ad c"), first.all());
            done(b);
            ConsumerHandle h = done(c);

            brokers.cut();
            CompletionStage<Void> cancel = h.cancel();
            brokers.runAllTasks();
            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            assertEquals(
                    List.of("1 channel.open", "2 channel.open", "2 exchange.declare x fanout", "2 channel.close"),
                    new Answers(second, "2").all(),
                    "neither the queue nor its binding");
            done(cancel);
            assertFalse(h.isActive());
        }
    }

    /**
     * The connection goes again while the topology is being declared: the channel recovery declared it on is
     * recovery's own, not the application's, and the next recovery does not re-open it as a lost channel (it would
     * stay open, held by nobody, one more after each interrupted restore).
     */
    @Test
    void recoverysOwnChannelLostDuringTheTopologyRestoreIsNotRecovered() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var x = ch.exchangeDeclare(ExchangeSpec.of("x", "fanout"));
            first.all();
            done(x);

            FakeBroker second = brokers.cutAndReconnect();
            RecoveringBrokers.reopen(second, 1);
            RecoveringBrokers.reopen(second, 2);
            second.expectAndRelease(2, MethodIds.EXCHANGE_DECLARE); // not answered: the connection goes first
            brokers.cut();
            FakeBroker third = brokers.cutAndReconnectAfterLoss();
            assertEquals(
                    List.of("1 channel.open", "2 channel.open", "2 exchange.declare x fanout", "2 channel.close"),
                    new Answers(third, "3").all());
            assertTrue(ch.isOpen());
            assertFalse(brokers.connection.isRecovering());
        }
    }

    /** Brokers whose connection waits for what the lost one held exclusively (RecoveryOptions.awaitExclusiveRelease). */
    private static RecoveringBrokers awaitingExclusives(io.warren.ConnectionOptions options) {
        return new RecoveringBrokers(options.recovery(new io.warren.RecoveryOptions().awaitExclusiveRelease(true)));
    }

    /**
     * A loss while restoring leaves a new connection behind, which the broker may hold as long: the wait counts from
     * the newest loss, not the first (the first loss's deadline had passed when the queue was refused here).
     */
    @Test
    void aLossWhileRestoringWaitsForWhatTheNewestConnectionHeld() {
        try (RecoveringBrokers brokers = awaitingExclusives(new io.warren.ConnectionOptions())) {
            withExclusiveQueue(brokers);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            brokers.cut();
            FakeBroker second = brokers.cutAndReconnectAfterLoss(1); // waits until 4 s after this loss
            RecoveringBrokers.reopen(second, 1);
            RecoveringBrokers.reopen(second, 2);
            second.expectAndRelease(2, MethodIds.QUEUE_DECLARE); // declared, then lost before its reply
            brokers.first.client.advanceTimeBy(3_500, TimeUnit.MILLISECONDS);
            brokers.runAllTasks();
            FakeBroker third = lostAndRefused(brokers, 1);
            brokers.runAllTasks();
            brokers.first.client.advanceTimeBy(1_000, TimeUnit.MILLISECONDS); // 4.5 s after the first loss
            brokers.runAllTasks();
            RecoveringBrokers.reopen(third, 3); // tried again
            assertTrue(brokers.connection.isRecovering());
            assertFalse(
                    recovery.events().contains("topology failed: queue 'ex'"),
                    () -> "not reported: " + recovery.events());
        }
    }

    /** Off by default: another instance may have taken the queue over, and nothing would come of the wait. */
    @Test
    void anExclusiveQueueStillHeldIsReportedAtOnceByDefault() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            withExclusiveQueue(brokers);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            FakeBroker second = lostAndRefused(brokers, 5);
            brokers.runAllTasks();
            brokers.runAllTasks();
            assertFalse(brokers.connection.isRecovering(), () -> "recovered: " + recovery.events());
            assertEquals(
                    List.of("recovery started", "topology failed: queue 'ex'", "recovery succeeded"),
                    recovery.events());
        }
    }

    /** RabbitMQ's refusal of a named exclusive queue its owner still holds, on recovery's channel. */
    private static void refuseLocked(FakeBroker broker, int channel) {
        broker.expectAndRelease(channel, MethodIds.QUEUE_DECLARE);
        broker.sendChannelClose(
                channel,
                ReplyCode.RESOURCE_LOCKED,
                "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'ex' in vhost '/'. It could be"
                        + " originally declared on another connection or the exclusive property value does not"
                        + " match that of the original declaration.",
                50,
                10);
        broker.expectAndRelease(channel, MethodIds.CHANNEL_CLOSE_OK);
    }

    /**
     * Cuts the connection and reconnects with {@code heartbeat}; the restore re-opens channel 1 and recovery's
     * channel 2, whose declaration of 'ex' is refused with 405. Returns the new broker.
     */
    private static FakeBroker lostAndRefused(RecoveringBrokers brokers, int heartbeat) {
        brokers.cut();
        FakeBroker broker = brokers.cutAndReconnectAfterLoss(heartbeat);
        RecoveringBrokers.reopen(broker, 1);
        RecoveringBrokers.reopen(broker, 2);
        refuseLocked(broker, 2);
        return broker;
    }

    /** A connection whose channel 1 declared the named exclusive queue 'ex'. */
    private static Channel withExclusiveQueue(RecoveringBrokers brokers) {
        Answers first = new Answers(brokers.first, "1");
        Channel ch = brokers.first.openChannel(brokers.connection, 1);
        var q = ch.queueDeclare(QueueSpec.named("ex").exclusive(true));
        assertEquals(List.of("1 queue.declare 'ex' exclusive -> ex"), first.all());
        done(q);
        return ch;
    }

    /**
     * After a loss the broker never saw, it keeps the old connection, and with it the exclusive queue, until its
     * heartbeat check gives up on it: the declaration is refused with 405 and tried again, and the queue is back
     * once the broker has let the old one go. Before, the refusal was final: the queue and its consumers were lost.
     */
    @Test
    void anExclusiveQueueTheOldConnectionStillHoldsIsDeclaredAgainOnceTheBrokerLetsItGo() {
        try (RecoveringBrokers brokers = awaitingExclusives(new io.warren.ConnectionOptions())) {
            Channel ch = withExclusiveQueue(brokers);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            FakeBroker second = lostAndRefused(brokers, 5);
            brokers.runRecoveryTasks();
            assertEquals(List.of(), new Answers(second, "2").all(), "nothing until the retry is due");
            assertTrue(brokers.connection.isRecovering());

            brokers.first.client.advanceTimeBy(100, TimeUnit.MILLISECONDS);
            brokers.runRecoveryTasks();
            RecoveringBrokers.reopen(second, 3); // the refused channel is replaced
            refuseLocked(second, 3); // still held: the next try is 200 ms later
            brokers.runRecoveryTasks();
            brokers.first.client.advanceTimeBy(199, TimeUnit.MILLISECONDS);
            brokers.runRecoveryTasks();
            assertEquals(List.of(), new Answers(second, "2").all(), "the second retry waits twice as long");

            brokers.first.client.advanceTimeBy(1, TimeUnit.MILLISECONDS);
            brokers.runRecoveryTasks();
            assertEquals(
                    List.of("4 channel.open", "4 queue.declare 'ex' exclusive -> ex", "4 channel.close"),
                    new Answers(second, "2").all());
            brokers.runAllTasks();
            assertFalse(brokers.connection.isRecovering());
            assertTrue(ch.isOpen());
            assertEquals(List.of("recovery started", "recovery succeeded"), recovery.events());
        }
    }

    /** Without heartbeats the broker may hold the old connection for hours: the refusal is reported at once. */
    @Test
    void anExclusiveQueueStillHeldIsReportedAtOnceWithoutHeartbeats() {
        try (RecoveringBrokers brokers = awaitingExclusives(new io.warren.ConnectionOptions().requestedHeartbeat(0))) {
            withExclusiveQueue(brokers);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            FakeBroker second = lostAndRefused(brokers, 0);
            brokers.runAllTasks();
            assertEquals(List.of(), new Answers(second, "2").all(), "no retry");
            brokers.runAllTasks();
            assertFalse(brokers.connection.isRecovering(), () -> "recovered: " + recovery.events());
            assertEquals(
                    List.of("recovery started", "topology failed: queue 'ex'", "recovery succeeded"),
                    recovery.events());
            assertEquals(ReplyCode.RESOURCE_LOCKED, ((AmqpException) recovery.cause(1)).replyCode());
        }
    }

    /** The wait is bounded: three heartbeat intervals and a second after the loss, then reported. */
    @Test
    void anExclusiveQueueStillHeldAfterThreeHeartbeatIntervalsIsReported() {
        try (RecoveringBrokers brokers = awaitingExclusives(new io.warren.ConnectionOptions())) {
            withExclusiveQueue(brokers);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            FakeBroker second = lostAndRefused(brokers, 1);
            int refusals = 1;
            // retries at 0.1, 0.3, 0.7, 1.5, 2.5 and 3.5 s, and the last at the 4 s bound itself, not a second before
            for (int ms = 0; ms < 5_000 && brokers.connection.isRecovering(); ms++) {
                brokers.first.client.advanceTimeBy(1, TimeUnit.MILLISECONDS);
                brokers.runAllTasks();
                Frame f = second.next();
                if (f != null) {
                    int channel = f.channel();
                    try {
                        assertEquals(
                                MethodIds.CHANNEL_OPEN,
                                f.payload().getInt(f.payload().readerIndex()));
                    } finally {
                        f.release();
                    }
                    second.send(channel, new ChannelOpenOkEncoder());
                    refuseLocked(second, channel);
                    refusals++;
                    brokers.runAllTasks();
                }
            }
            assertEquals(8, refusals);
            assertFalse(brokers.connection.isRecovering());
            assertEquals(
                    List.of("recovery started", "topology failed: queue 'ex'", "recovery succeeded"),
                    recovery.events());
        }
    }

    /**
     * A declare and a consume the application makes while the channel recovers wait for it, and are sent after the
     * topology, in call order: before, they failed at once while the connection was down, and reached a re-opened
     * channel before its queues were declared again (a 404 there closes the channel for good).
     */
    @Test
    void synchronousMethodsCalledWhileRecoveringAreSentAfterTheTopologyInCallOrder() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var q = ch.queueDeclare(QueueSpec.named("q"));
            first.all();
            done(q);

            brokers.cut();
            var declared = ch.queueDeclare(QueueSpec.named("other"));
            var consumed = ch.consume("q", new ConsumeOptions().consumerTag("late"), d -> {});
            brokers.runAllTasks();
            assertFalse(declared.toCompletableFuture().isDone(), "held, not failed");
            assertFalse(consumed.toCompletableFuture().isDone(), "held, not failed");

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            assertEquals(
                    List.of(
                            "1 channel.open",
                            "2 channel.open",
                            "2 queue.declare 'q' -> q",
                            "2 channel.close",
                            "1 queue.declare 'other' -> other",
                            "1 basic.qos 250",
                            "1 basic.consume q late"),
                    new Answers(second, "2").all());
            brokers.runAllTasks();
            assertEquals("other", done(declared).queue());
            assertEquals("late", done(consumed).consumerTag());
            assertFalse(brokers.connection.isRecovering());
        }
    }

    /**
     * A basic.qos the connection's loss cut off failed, so recovery does not restore it; a consumer made afterwards
     * without a prefetch of its own gets the default one, not none. Before, the failed call still counted as the
     * channel's own qos, and such a consumer started with no prefetch at all.
     */
    @Test
    void aBasicQosThatFailedIsNotTheChannelsOwnQos() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            CompletionStage<Void> qos = ch.basicQos(10);
            brokers.first.expectAndRelease(1, MethodIds.BASIC_QOS);
            brokers.cut();
            assertTrue(qos.toCompletableFuture().isCompletedExceptionally(), "the loss fails the qos in flight");

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            brokers.runAllTasks();
            Answers answers = new Answers(second, "2");
            assertEquals(List.of("1 channel.open"), answers.all(), "a failed qos is not restored");

            CompletionStage<ConsumerHandle> consumed =
                    ch.consume("q", new ConsumeOptions().consumerTag("c"), Delivery::ack);
            brokers.runAllTasks();
            assertEquals(
                    List.of("1 basic.qos " + ConsumeOptions.DEFAULT_PREFETCH, "1 basic.consume q c"), answers.all());
            brokers.runAllTasks();
            assertTrue(done(consumed).isActive());
        }
    }

    /**
     * What waits for the recovery (a whenWritable callback) runs after the held methods are sent: a method it calls
     * goes behind them, not ahead.
     */
    @Test
    void aMethodCalledWhenTheChannelIsBackGoesBehindTheHeldOnes() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            var a = ch.queueDeclare(QueueSpec.named("a"));
            List<CompletionStage<?>> b = new ArrayList<>();
            ch.whenWritable().thenRun(() -> b.add(ch.queueDeclare(QueueSpec.named("b"))));
            brokers.runAllTasks();
            assertTrue(b.isEmpty(), "not writable while recovering");

            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            brokers.runAllTasks();
            assertEquals(
                    List.of("1 channel.open", "1 queue.declare 'a' -> a", "1 queue.declare 'b' -> b"),
                    new Answers(second, "2").all());
            brokers.runAllTasks();
            done(a);
            assertEquals(1, b.size());
            done(b.get(0));
        }
    }

    /**
     * A held method naming a server-named queue that recovery declared again under a new name fails unsent: sent,
     * it would meet 404, which closes the channel. The channel stays usable.
     */
    @Test
    void aHeldMethodNamingAServerNamedQueueRenamedByRecoveryFailsUnsent() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var q = ch.queueDeclare(QueueSpec.serverNamed());
            first.all();
            String old = done(q).queue();

            brokers.cut();
            var bound = ch.queueBind(old, "amq.fanout", "");
            var purged = ch.queuePurge("other");
            brokers.runAllTasks();
            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            assertEquals(
                    List.of(
                            "1 channel.open",
                            "2 channel.open",
                            "2 queue.declare '' exclusive -> amq.gen-2-1",
                            "2 channel.close",
                            "1 queue.purge other"),
                    new Answers(second, "2").all());
            brokers.runAllTasks();
            AmqpException e = assertInstanceOf(AmqpException.class, failure(bound));
            assertTrue(e.getMessage().contains("'" + old + "' again as 'amq.gen-2-1'"), e.getMessage());
            assertEquals(0L, done(purged));
            assertTrue(ch.isOpen());
        }
    }

    /** A method held while recovering waits at most the RPC timeout from its call, then fails unsent. */
    @Test
    void aMethodHeldLongerThanTheRpcTimeoutFailsUnsent() {
        try (RecoveringBrokers brokers = withRpcTimeout()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            var declared = ch.queueDeclare(QueueSpec.named("other"));
            brokers.runAllTasks();
            brokers.first.client.advanceTimeBy(4_999, TimeUnit.MILLISECONDS);
            brokers.runRecoveryTasks();
            assertFalse(declared.toCompletableFuture().isDone());
            brokers.first.client.advanceTimeBy(1, TimeUnit.MILLISECONDS);
            brokers.runRecoveryTasks();
            RpcTimeoutException e = assertInstanceOf(RpcTimeoutException.class, failure(declared));
            assertEquals(MethodIds.QUEUE_DECLARE >>> 16, e.classId());
            assertTrue(e.getMessage().contains("was not sent"), e.getMessage());

            FakeBroker second = brokers.current(); // the backoff ran out within those 5 s: the attempt is made
            assertNotSame(brokers.first, second);
            second.handshake();
            brokers.runRecoveryTasks();
            assertEquals(List.of("1 channel.open"), new Answers(second, "2").all(), "the expired declare is not sent");
        }
    }

    /** A channel closed by the application while it recovers fails what it held. */
    @Test
    void methodsHeldByAChannelClosedWhileRecoveringFail() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            var got = ch.basicGet("q", true);
            brokers.runAllTasks();
            assertFalse(got.toCompletableFuture().isDone());
            done(ch.close());
            brokers.runAllTasks();
            assertInstanceOf(ChannelClosedException.class, failure(got));
        }
    }

    /** Answers a passive queue.declare of 'q' on {@code channel} with {@code consumers} consumers. */
    private static void passive(FakeBroker broker, int channel, int consumers) {
        Frame f = broker.expect(channel, MethodIds.QUEUE_DECLARE);
        try {
            io.warren.codec.method.QueueDeclare q = new io.warren.codec.method.QueueDeclare()
                    .wrap(f.payload(), f.payload().readerIndex());
            assertTrue(q.passive(), "a passive declare");
            assertEquals("q", q.queueAsString());
        } finally {
            f.release();
        }
        broker.send(
                channel, new QueueDeclareOkEncoder().queue("q").messageCount(0).consumerCount(consumers));
    }

    /**
     * The lost connection's exclusive consumer is still attached to its queue when the broker did not see the loss,
     * and a basic.consume with the exclusive flag would be refused with 403, which closes the application's channel:
     * recovery waits for the queue to have no consumer, then starts the consumer again.
     */
    @Test
    void anExclusiveConsumerStartsAgainOnceTheLostConnectionsConsumerIsGone() {
        try (RecoveringBrokers brokers = awaitingExclusives(new io.warren.ConnectionOptions())) {
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var q = ch.queueDeclare(QueueSpec.named("q"));
            var c = ch.consume("q", new ConsumeOptions().consumerTag("c").exclusive(true), d -> {});
            first.all();
            done(q);
            ConsumerHandle h = done(c);

            brokers.cut();
            FakeBroker second = brokers.cutAndReconnectAfterLoss(5);
            RecoveringBrokers.reopen(second, 1);
            RecoveringBrokers.reopen(second, 2);
            second.expectAndRelease(2, MethodIds.QUEUE_DECLARE);
            second.send(
                    2, new QueueDeclareOkEncoder().queue("q").messageCount(0).consumerCount(1));
            second.expectAndRelease(2, MethodIds.CHANNEL_CLOSE);
            second.sendChannelCloseOk(2);
            brokers.runRecoveryTasks();
            RecoveringBrokers.reopen(second, 3);
            passive(second, 3, 1); // the lost connection's consumer
            brokers.runRecoveryTasks();
            assertEquals(List.of(), new Answers(second, "2").all(), "no basic.consume yet");

            brokers.first.client.advanceTimeBy(100, TimeUnit.MILLISECONDS);
            brokers.runRecoveryTasks();
            passive(second, 3, 0);
            brokers.runRecoveryTasks();
            assertEquals(
                    List.of("3 channel.close", "1 basic.qos 250", "1 basic.consume q c exclusive"),
                    new Answers(second, "2").all());
            brokers.runAllTasks();
            assertFalse(brokers.connection.isRecovering());
            assertTrue(h.isActive());
            assertTrue(ch.isOpen());
        }
    }

    /**
     * Recovery's basic.consume is refused, which closes the channel: with 403 (an exclusive consumer's queue in another
     * connection's exclusive use), 404 (the queue deleted while the connection was down, by another application or
     * as an auto-delete queue the recorded topology does not hold) or 405 (an exclusive queue another connection
     * holds). That consumer ends with the refusal, and the
     * channel is opened again with its modes and its other consumer, which was to go after it; recovery completes.
     * Before, the channel was closed for good.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "403 | true | ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use",
                "404 | false | NOT_FOUND - no queue 'q' in vhost '/'",
                "405 | false | RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'q' in vhost '/'"
            })
    void aRefusedConsumerEndsAndItsChannelIsReopenedWithoutIt(int replyCode, boolean exclusive, String replyText) {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var qos = ch.basicQos(0, 5, false);
            var select = ch.confirmSelect();
            var x = ch.consume("q", new ConsumeOptions().consumerTag("x").exclusive(exclusive), d -> {});
            var y = ch.consume("r", new ConsumeOptions().consumerTag("y"), d -> {});
            first.all();
            done(qos);
            done(select);
            ConsumerHandle refused = done(x);
            ConsumerHandle kept = done(y);

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(List.of("1 channel.open", "1 basic.qos 5", "1 confirm.select"), answerUpToConsume(second));
            second.sendChannelClose(1, replyCode, replyText, 60, 20);
            second.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();
            assertEquals(
                    List.of("1 channel.open", "1 basic.qos 5", "1 confirm.select", "1 basic.consume r y"),
                    new Answers(second, "2").all());
            brokers.runAllTasks();

            assertFalse(brokers.connection.isRecovering());
            assertEquals(List.of("recovery started", "recovery succeeded"), recovery.events());
            assertTrue(ch.isOpen(), "the channel is open again");
            assertFalse(ch.closeFuture().toCompletableFuture().isDone());
            assertFalse(refused.isActive());
            AmqpException why = refused.endFuture().toCompletableFuture().getNow(null);
            assertTrue(why != null && why.replyCode() == replyCode, () -> "ended with " + why);
            assertTrue(kept.isActive());
            done(ch.whenWritable());
            second.expectNothing();
        }
    }

    /**
     * Recovery's basic.consume for x times out on the wire (x ends with the timeout) and stays there until the broker
     * answers it. y, a paused noAck consumer holding reading paused, is restored after it, in the second pass: its
     * basic.consume waits behind x's. The broker's refusal of x's closes the channel. It is x's: y starts again on
     * the re-opened channel. Before, y was taken for the refused one and ended.
     */
    @Test
    void aRefusalOfABasicConsumeThatTimedOutOnTheWireEndsNoOtherConsumer() {
        try (RecoveringBrokers brokers = withRpcTimeout()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var x = ch.consume("q", new ConsumeOptions().consumerTag("x").exclusive(true), d -> {});
            var y = ch.consume(
                    "r", new ConsumeOptions().consumerTag("y").noAck(true).waterMarks(2, 4), d -> {});
            new Answers(brokers.first, "1").all();
            ConsumerHandle timedOut = done(x);
            ConsumerHandle waiting = done(y);
            waiting.pause();
            for (long t = 1; t <= 4; t++) {
                deliver(brokers.first, "y", t, "m");
            }
            assertEquals(1, brokers.first.handler.readPauses(), "y holds reading paused");

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(List.of("1 channel.open", "1 basic.qos 250"), answerUpToConsume(second));
            second.client.advanceTimeBy(6, java.util.concurrent.TimeUnit.SECONDS);
            second.client.runScheduledPendingTasks();
            brokers.runAllTasks();
            assertFalse(timedOut.isActive(), "x ended when its basic.consume timed out");
            second.expectNothing(); // y's basic.consume waits behind x's, still on the wire
            second.sendChannelClose(1, 403, "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use", 60, 20);
            second.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            brokers.runAllTasks();
            assertEquals(List.of("1 channel.open", "1 basic.consume r y noAck"), new Answers(second, "2").all());
            brokers.runAllTasks();

            assertFalse(brokers.connection.isRecovering());
            assertTrue(ch.isOpen());
            assertInstanceOf(
                    io.warren.RpcTimeoutException.class,
                    timedOut.endFuture().toCompletableFuture().getNow(null));
            assertTrue(waiting.isActive(), "y was not the one refused");
            waiting.resume(); // its four deliveries go to its handler, which releases them
            brokers.runAllTasks();
            second.expectNothing();
        }
    }

    /** Two exclusive consumers of one channel refused in turn: the channel is opened again after each refusal. */
    @Test
    void twoRefusedConsumersOfOneChannelEndInTurn() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Answers first = new Answers(brokers.first, "1");
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            var x = ch.consume("q", new ConsumeOptions().consumerTag("x").exclusive(true), d -> {});
            var z = ch.consume("p", new ConsumeOptions().consumerTag("z").exclusive(true), d -> {});
            var y = ch.consume("r", new ConsumeOptions().consumerTag("y"), d -> {});
            first.all();
            List<ConsumerHandle> handles = List.of(done(x), done(z), done(y));

            FakeBroker second = brokers.cutAndReconnect();
            for (String queue : List.of("q", "p")) {
                assertEquals(List.of("1 channel.open", "1 basic.qos 250"), answerUpToConsume(second));
                second.sendChannelClose(1, 403, "ACCESS_REFUSED - queue '" + queue + "' in exclusive use", 60, 20);
                second.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
                brokers.runAllTasks();
            }
            assertEquals(
                    List.of("1 channel.open", "1 basic.qos 250", "1 basic.consume r y"),
                    new Answers(second, "2").all());
            brokers.runAllTasks();

            assertFalse(brokers.connection.isRecovering());
            assertTrue(ch.isOpen());
            assertEquals(
                    List.of(false, false, true),
                    handles.stream().map(ConsumerHandle::isActive).toList());
            second.expectNothing();
        }
    }

    /**
     * Answers the restore on {@code broker} up to its first basic.consume, which it reads and leaves unanswered;
     * returns what came before it, as {@link Answers#all} does.
     */
    private static List<String> answerUpToConsume(FakeBroker broker) {
        Answers answers = new Answers(broker, "2");
        List<String> lines = new ArrayList<>();
        Frame f;
        while ((f = broker.next()) != null) {
            try {
                ByteBuf p = f.payload();
                if (p.getInt(p.readerIndex()) == MethodIds.BASIC_CONSUME) {
                    return lines;
                }
                lines.add(f.channel() + " " + answers.answer(f.channel(), p));
            } finally {
                f.release();
            }
        }
        throw new AssertionError("no basic.consume came; before it: " + lines);
    }

    /** Two cancels held through an outage end alike: when the one sent after recovery fails, both fail. */
    @Test
    void aSecondHeldCancelFailsWithTheFirst() {
        try (RecoveringBrokers brokers = withRpcTimeout()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            ConsumerHandle h = consumerC(brokers, ch, new ArrayList<>());

            FakeBroker second = restoringUpToConsume(brokers);
            CompletionStage<Void> first = h.cancel();
            CompletionStage<Void> again = h.cancel();
            brokers.runAllTasks();
            second.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            brokers.runAllTasks();
            second.expectAndRelease(1, MethodIds.BASIC_CANCEL); // never answered: it times out
            second.client.advanceTimeBy(6, java.util.concurrent.TimeUnit.SECONDS);
            second.client.runScheduledPendingTasks();
            brokers.runAllTasks();
            assertTrue(first.toCompletableFuture().isCompletedExceptionally());
            assertTrue(
                    again.toCompletableFuture().isCompletedExceptionally(),
                    "the consumer is still the broker's: the second cancel did not succeed either");
            assertTrue(h.isActive());
        }
    }

    /**
     * Recovery's basic.consume times out (the consumer ends with it) and its consume-ok comes after: the broker has
     * the consumer again, so the client cancels it, and what the broker delivers to it meanwhile goes back to the
     * queue rather than be dropped unsettled.
     */
    @Test
    void aLateConsumeOkOfARecoveryThatTimedOutCancelsTheConsumerAndGivesItsDeliveriesBack() {
        try (RecoveringBrokers brokers = withRpcTimeout()) {
            List<String> seen = new ArrayList<>();
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            ConsumerHandle h = consumerC(brokers, ch, seen);

            FakeBroker second = restoringUpToConsume(brokers);
            second.client.advanceTimeBy(6, java.util.concurrent.TimeUnit.SECONDS);
            second.client.runScheduledPendingTasks();
            brokers.runAllTasks();
            assertFalse(h.isActive(), "the consumer ended when its recovery timed out");

            second.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            deliver(second, "c", 1, "meanwhile");
            brokers.runAllTasks();
            List<String> out = second.written();
            assertTrue(out.contains("method basic.cancel"), "the consumer is cancelled: " + out);
            assertTrue(out.contains("reject 1 requeue"), "its delivery goes back to the queue: " + out);
            second.send(1, new BasicCancelOkEncoder().consumerTag("c"));
            brokers.runAllTasks();
            assertEquals(List.of(), seen, "the consumer had ended: nothing reaches its handler");
            second.expectNothing();
            assertTrue(ch.isOpen());
        }
    }

    @Test
    void consumeOptionsChangedAfterTheCallChangeNothingAlreadyRunning() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            List<Delivery> kept = new ArrayList<>();
            ConsumeOptions options =
                    new ConsumeOptions().consumerTag("c").prefetch(10).priority(3);
            var c = ch.consume("q", options, d -> kept.add(d.retain()));
            // the caller reuses its options object for something else
            options.consumerTag("other").prefetch(99).priority(7).noAck(true).exclusive(true);
            assertEquals(
                    List.of("1 basic.qos 10", "1 basic.consume q c x-priority=3"),
                    new Answers(brokers.first, "1").all());
            done(c);

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(
                    List.of("1 channel.open", "1 basic.qos 10", "1 basic.consume q c x-priority=3"),
                    new Answers(second, "2").all(),
                    "recovery consumes again with the options as they were");
            deliver(second, "c", 1, "after");
            assertEquals(1, kept.size());
            Delivery after = kept.get(0);
            try {
                after.ack(); // a noAck delivery would refuse this
                Frame f = second.expect(1, MethodIds.BASIC_ACK);
                try {
                    assertEquals(
                            1,
                            new BasicAck()
                                    .wrap(f.payload(), f.payload().readerIndex())
                                    .deliveryTag());
                } finally {
                    f.release();
                }
            } finally {
                after.release();
            }
            second.expectNothing();
        }
    }

    @Test
    void unconfirmedPublishesFailRetryablyAndConfirmNumbersRestartOnTheRecoveredChannel() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker first = brokers.first;
            Channel ch = first.openChannel(brokers.connection, 1);
            confirmMode(first, ch);
            CompletionStage<PublishOutcome> p1 = ch.publish("", "q", false, PROPS, text("m1"));
            CompletionStage<PublishOutcome> p2 = ch.publish("", "q", false, PROPS, text("m2"));
            CompletionStage<PublishOutcome> p3 = ch.publish("", "q", false, PROPS, text("m3"));
            for (int i = 1; i <= 3; i++) {
                assertEquals("m" + i, expectPublish(first, 1).text());
            }
            ack(first, 1, 1, false);
            assertTrue(done(p1).isConfirmed());
            assertPending(p2);

            FakeBroker second = brokers.cutAndReconnect();
            for (CompletionStage<PublishOutcome> lost : List.of(p2, p3)) {
                PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failure(lost));
                assertTrue(e.mayHaveReachedBroker(), "written before the loss: the broker may have it");
                assertInstanceOf(ConnectionLostException.class, e.getCause());
            }
            assertEquals(List.of("1 channel.open", "1 confirm.select"), new Answers(second, "2").all());
            assertFalse(brokers.connection.isRecovering());

            CompletionStage<PublishOutcome> p4 = ch.publish("", "q", false, PROPS, text("m4"));
            CompletionStage<PublishOutcome> p5 = ch.publish("", "q", false, PROPS, text("m5"));
            assertEquals("m4", expectPublish(second, 1).text());
            assertEquals("m5", expectPublish(second, 1).text());
            // sequence number 1 on the new channel is m4: nothing of the old numbering (m1..m3) survives
            ack(second, 1, 1, false);
            assertTrue(done(p4).isConfirmed());
            assertPending(p5);
            ack(second, 1, 2, false);
            assertTrue(done(p5).isConfirmed());
        }
    }

    @Test
    void anAckOfADeliveryFromBeforeTheLossThrowsStaleDeliveryAndWritesNothing() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            FakeBroker first = brokers.first;
            Channel ch = first.openChannel(brokers.connection, 1);
            List<Delivery> kept = new ArrayList<>();
            var c = ch.consume("q", new ConsumeOptions().consumerTag("c"), d -> kept.add(d.retain()));
            assertEquals(List.of("1 basic.qos 250", "1 basic.consume q c"), new Answers(first, "1").all());
            done(c);
            deliver(first, "c", 1, "before");
            assertEquals(1, kept.size());

            FakeBroker second = brokers.cutAndReconnect();
            assertEquals(
                    List.of("1 channel.open", "1 basic.qos 250", "1 basic.consume q c"),
                    new Answers(second, "2").all());
            Delivery before = kept.get(0);
            try {
                StaleDeliveryException e = assertThrows(StaleDeliveryException.class, before::ack);
                assertEquals(1, e.deliveryTag());
                second.expectNothing();
            } finally {
                before.release();
            }

            deliver(second, "c", 1, "after"); // the same tag on the new channel is another message
            assertEquals(2, kept.size());
            Delivery after = kept.get(1);
            try {
                after.ack();
                Frame f = second.expect(1, MethodIds.BASIC_ACK);
                try {
                    assertEquals(
                            1,
                            new BasicAck()
                                    .wrap(f.payload(), f.payload().readerIndex())
                                    .deliveryTag());
                } finally {
                    f.release();
                }
            } finally {
                after.release();
            }
            second.expectNothing();
        }
    }

    /**
     * The connection's event loop shuts down while recovery waits to reconnect: the loop drops the backoff timer,
     * and nothing else would ever attempt or give up. Recovery gives up as when its attempts run out.
     */
    @Test
    void recoveryGivesUpWhenItsEventLoopShutsDownWhileWaitingToReconnect() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            brokers.cut();
            var writable = ch.whenWritable();
            assertTrue(brokers.connection.isRecovering());
            assertPending(brokers.connection.closeFuture());

            brokers.first.client.close(); // cancels the loop's scheduled tasks, as a shutting-down loop does

            var closed = brokers.connection.closeFuture().toCompletableFuture().getNow(null);
            assertTrue(closed != null && closed.getMessage().contains("event loop"), () -> "closed: " + closed);
            assertFalse(brokers.connection.isRecovering());
            assertTrue(writable.toCompletableFuture().isDone(), "whenWritable() completed");
            assertEquals(List.of("recovery started", "recovery failed"), recovery.events());
            assertEquals(1, brokers.connections(), "no attempt was made");
        }
    }

    /**
     * The same while restoring: the new connection is open and nothing of recovery's is scheduled but its watch of
     * the loop. Netty's loop may end without closing its sockets (a shutdown with no quiet period in the middle of
     * a loop round) but always cancels its timers: recovery gives up then, and closes what it was restoring.
     */
    @Test
    void recoveryGivesUpWhenItsEventLoopShutsDownWhileRestoring() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(brokers.connection);
            FakeBroker second = brokers.cutAndReconnect(); // its channel.open is not answered
            var writable = ch.whenWritable();
            assertTrue(brokers.connection.isRecovering());

            brokers.first.client.close(); // cancels the loop's scheduled tasks, as a shutting-down loop does

            var closed = brokers.connection.closeFuture().toCompletableFuture().getNow(null);
            assertTrue(closed != null && closed.getMessage().contains("event loop"), () -> "closed: " + closed);
            assertFalse(brokers.connection.isRecovering());
            assertTrue(ch.closeFuture().toCompletableFuture().isDone(), "the channel's close future completed");
            assertTrue(writable.toCompletableFuture().isDone(), "whenWritable() completed");
            assertEquals(List.of("recovery started", "recovery failed"), recovery.events());
            assertFalse(second.client.isOpen(), "the connection being restored is closed");
        }
    }

    /**
     * A recovering connection keeps nothing of its earlier connections or failed attempts as blocked listeners: before,
     * each one's publish flow joined them for good, and with it its Netty channel and pipeline (4 after one recovery
     * and one failed attempt). The current connection's publishes still follow connection.blocked.
     */
    @Test
    void noEarlierConnectionIsKeptAsABlockedListenerAndBlockedStillReachesPublishes() throws Exception {
        ConnectionOptions options = new ConnectionOptions()
                .publishOptions(new PublishOptions().blockedPolicy(PublishOptions.BlockedPolicy.FAIL));
        try (RecoveringBrokers brokers = new RecoveringBrokers(options)) {
            brokers.cutAndReconnect();
            brokers.cut();
            FakeBroker lost = brokers.current();
            for (int step = 0; step < 1000 && brokers.current() == lost; step++) {
                brokers.first.client.advanceTimeBy(RecoveringBrokers.BACKOFF_MILLIS, TimeUnit.MILLISECONDS);
                brokers.runRecoveryTasks();
            }
            FakeBroker refused = brokers.current();
            assertNotSame(lost, refused, "an attempt was made");
            refused.client.pipeline().fireExceptionCaught(new java.io.IOException("Connection refused (test)"));
            refused.client.runPendingTasks();
            FakeBroker now = brokers.cutAndReconnectAfterLoss();
            assertEquals(4, brokers.connections()); // the first, the recovered, the refused attempt, this one
            Field listeners = ConnectionImpl.class.getDeclaredField("blockedListeners");
            listeners.setAccessible(true);
            assertEquals(List.of(), listeners.get(brokers.connection), "the application added none");

            Channel ch = now.openChannel(brokers.connection, 1);
            now.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            assertInstanceOf(ConnectionBlockedException.class, failure(ch.publish("", "q", false, null, text("x"))));
            now.send(0, new ConnectionUnblockedEncoder());
            ch.publish("", "q", false, null, text("after"));
            assertEquals("after", expectPublish(now, 1).text());
        }
    }

    /**
     * A connection blocked when it was lost, whose new connection the broker blocks again right after open-ok (its
     * alarm still on), stays blocked when recovery completes. Before, the end of recovery cleared the old block after
     * the new one came: publishes were let through, and the application told "unblocked" (review).
     */
    @Test
    void aRecoveredConnectionTheBrokerBlocksAgainStaysBlocked() {
        ConnectionOptions options = new ConnectionOptions()
                .publishOptions(new PublishOptions().blockedPolicy(PublishOptions.BlockedPolicy.FAIL));
        try (RecoveringBrokers brokers = new RecoveringBrokers(options)) {
            List<String> events = new ArrayList<>();
            brokers.connection.addBlockedListener(new BlockedListener() {
                @Override
                public void blocked(String reason) {
                    events.add("blocked: " + reason);
                }

                @Override
                public void unblocked() {
                    events.add("unblocked");
                }
            });
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.first.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            brokers.cut();
            FakeBroker now = brokers.cutAndReconnectAfterLoss();
            now.send(0, new ConnectionBlockedEncoder().reason("low on memory (still)"));
            RecoveringBrokers.reopen(now, 1);
            brokers.runAllTasks();
            assertTrue(ch.isOpen(), "recovered");
            assertTrue(brokers.connection.isBlocked(), "the broker still blocks the recovered connection");
            assertInstanceOf(ConnectionBlockedException.class, failure(ch.publish("", "q", false, null, text("x"))));
            assertEquals(List.of("blocked: low on memory", "unblocked", "blocked: low on memory (still)"), events);
            now.send(0, new ConnectionUnblockedEncoder());
            ch.publish("", "q", false, null, text("after"));
            assertEquals("after", expectPublish(now, 1).text());
        }
    }
}
