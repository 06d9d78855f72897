package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Caller input that cannot go on the wire, across the API: null names, short strings over 255 UTF-8 bytes,
 * field-table values of types AMQP cannot carry, numbers out of range. Each is refused with an
 * {@link IllegalArgumentException} (a failed stage, or thrown where the method returns no stage) and nothing is
 * written: the fake broker sees no frame after each call, and the channel stays usable.
 */
class CallerInputTest {

    /** 256 bytes in UTF-8: one over a shortstr. */
    static final String LONG = "x".repeat(256);
    /** 128 characters but 256 UTF-8 bytes: the limit counts bytes. */
    static final String LONG_UTF8 = "é".repeat(128);

    static final Map<String, Object> BAD_ARGS = Map.of("x-bad", new Object());

    private FakeBroker broker;
    private Channel ch;

    @BeforeEach
    void open() {
        broker = new FakeBroker(new ConnectionOptions().automaticRecovery(false));
        ch = broker.openChannel(broker.handshake(), 1);
    }

    @AfterEach
    void close() {
        broker.close();
    }

    private DynamicTest refused(String name, Supplier<CompletionStage<?>> call) {
        return DynamicTest.dynamicTest(name, () -> {
            CompletableFuture<?> f = call.get().toCompletableFuture();
            broker.expectNothing();
            assertTrue(f.isCompletedExceptionally(), name + " must fail at once");
            Throwable e = f.handle((v, t) -> t).join();
            assertInstanceOf(
                    IllegalArgumentException.class,
                    e instanceof java.util.concurrent.CompletionException ? e.getCause() : e,
                    name);
            assertTrue(ch.isOpen(), "the channel stays usable");
        });
    }

    /**
     * Arguments that make a method frame larger than frame-max (131072 here): RabbitMQ would close the whole
     * connection (501), so the call fails and nothing is written.
     */
    @TestFactory
    Stream<DynamicTest> argumentsOverFrameMaxAreRefusedBeforeAnythingIsWritten() {
        Map<String, Object> big = Map.of("x-big", new byte[131072]);
        return Stream.of(
                refused(
                        "queueDeclare",
                        () -> ch.queueDeclare(QueueSpec.named("q").arguments(big))),
                refused(
                        "exchangeDeclare",
                        () -> ch.exchangeDeclare(ExchangeSpec.of("x", "direct").arguments(big))),
                refused("queueBind", () -> ch.queueBind("q", "x", "k", big, false)),
                refused("exchangeBind", () -> ch.exchangeBind("d", "s", "k", big, false)),
                refused("consume", () -> ch.consume("q", new ConsumeOptions().arguments(big), d -> {})));
    }

    @TestFactory
    Stream<DynamicTest> namesAndArgumentsAreCheckedBeforeAnythingIsWritten() {
        return Stream.of(
                refused("exchangeDeclare null name", () -> ch.exchangeDeclare(null, "direct")),
                refused("exchangeDeclare null type", () -> ch.exchangeDeclare("x", null)),
                refused("exchangeDeclare long name", () -> ch.exchangeDeclare(LONG, "direct")),
                refused("exchangeDeclare long UTF-8 name", () -> ch.exchangeDeclare(LONG_UTF8, "direct")),
                refused("exchangeDeclare long type", () -> ch.exchangeDeclare("x", LONG)),
                refused("exchangeDeclare empty type", () -> ch.exchangeDeclare("x", "")),
                refused(
                        "exchangeDeclare bad argument",
                        () -> ch.exchangeDeclare(ExchangeSpec.of("x", "direct").arguments(BAD_ARGS))),
                refused("exchangeDeclare null declare", () -> ch.exchangeDeclare(null)),
                refused("exchangeDelete null", () -> ch.exchangeDelete(null)),
                refused("exchangeDelete long", () -> ch.exchangeDelete(LONG)),
                refused("exchangeBind long destination", () -> ch.exchangeBind(LONG, "s", "k")),
                refused("exchangeBind null source", () -> ch.exchangeBind("d", null, "k")),
                refused("exchangeBind long routing key", () -> ch.exchangeBind("d", "s", LONG)),
                refused("exchangeBind bad argument", () -> ch.exchangeBind("d", "s", "k", BAD_ARGS, false)),
                refused("exchangeUnbind long source", () -> ch.exchangeUnbind("d", LONG, "k")),
                refused("queueDeclare null", () -> ch.queueDeclare((String) null)),
                refused("queueDeclare long", () -> ch.queueDeclare(LONG)),
                refused(
                        "queueDeclare bad argument",
                        () -> ch.queueDeclare(QueueSpec.named("q").arguments(BAD_ARGS))),
                refused(
                        "queueDeclare nested bad argument",
                        () -> ch.queueDeclare(
                                QueueSpec.named("q").argument("x-nested", Map.of("inner", new Thread())))),
                refused("queueDeclare null declare", () -> ch.queueDeclare((QueueSpec) null)),
                refused(
                        "queueDeclare server-named with nowait",
                        () -> ch.queueDeclare(QueueSpec.serverNamed().noWait(true))),
                refused("queueBind long queue", () -> ch.queueBind(LONG, "x", "k")),
                refused("queueBind null exchange", () -> ch.queueBind("q", null, "k")),
                refused("queueBind long routing key", () -> ch.queueBind("q", "x", LONG)),
                refused("queueBind bad argument", () -> ch.queueBind("q", "x", "k", BAD_ARGS, false)),
                refused("queueUnbind long queue", () -> ch.queueUnbind(LONG, "x", "k")),
                refused("queueUnbind bad argument", () -> ch.queueUnbind("q", "x", "k", BAD_ARGS)),
                refused("queuePurge null", () -> ch.queuePurge(null)),
                refused("queuePurge long", () -> ch.queuePurge(LONG)),
                refused("queuePurgeNoWait long", () -> ch.queuePurgeNoWait(LONG)),
                refused("queueDelete null", () -> ch.queueDelete(null)),
                refused("queueDelete long", () -> ch.queueDelete(LONG)),
                refused("queueDeleteNoWait long", () -> ch.queueDeleteNoWait(LONG, false, false)),
                refused("basicQos negative count", () -> ch.basicQos(-1)),
                refused("basicQos count over 65535", () -> ch.basicQos(70_000)),
                refused("basicQos negative size", () -> ch.basicQos(-1, 10, false)),
                refused("basicGet null", () -> ch.basicGet(null, false)),
                refused("basicGet long", () -> ch.basicGet(LONG, false)),
                refused("consume null queue", () -> ch.consume(null, d -> {})),
                refused("consume long queue", () -> ch.consume(LONG, d -> {})),
                refused("consume null handler", () -> ch.consume("q", null)),
                refused(
                        "consume long consumer tag",
                        () -> ch.consume("q", new ConsumeOptions().consumerTag(LONG), d -> {})),
                refused(
                        "consume bad argument",
                        () -> ch.consume("q", new ConsumeOptions().arguments(BAD_ARGS), d -> {})),
                refused("publish long exchange", () -> ch.publish(LONG, "k", false, null, new byte[1])),
                refused("publish long routing key", () -> ch.publish("", LONG_UTF8, false, null, new byte[1])),
                refused("publish null body", () -> ch.publish("", "k", false, null, (byte[]) null)),
                refused("close code over 65535", () -> ch.close(70_000, "x")),
                refused("close null text", () -> ch.close(200, null)),
                refused("connection close negative code", () -> ch.connection().close(-1, "x")));
    }

    @Test
    void settlingANegativeTagOrTagZeroWithoutMultipleIsRefusedAndNothingIsSent() {
        assertThrows(IllegalArgumentException.class, () -> ch.basicAck(0, false));
        assertThrows(IllegalArgumentException.class, () -> ch.basicAck(-1, true));
        assertThrows(IllegalArgumentException.class, () -> ch.basicNack(0, false, true));
        assertThrows(IllegalArgumentException.class, () -> ch.basicReject(0, false));
        broker.client.runPendingTasks();
        broker.expectNothing();
        ch.basicAck(0, true); // every outstanding delivery: valid, and with none outstanding there is nothing to send
        broker.client.runPendingTasks();
        broker.expectNothing();
    }

    @Test
    void propertiesThatMakeAContentHeaderOverFrameMaxAreRefusedAndTheBodyReleased() {
        int frameMax = ch.connection().frameMax();
        // a header table of frame-max bytes: the content-header frame cannot fit
        BasicProperties big = BasicProperties.builder()
                .headers(Map.of("h", new byte[frameMax]))
                .build();
        io.netty.buffer.ByteBuf body = Unpooled.directBuffer(8).writeLong(1);
        CompletableFuture<?> f = ch.publish("", "q", false, big, body).toCompletableFuture();
        assertTrue(f.isCompletedExceptionally());
        Throwable e = f.handle((v, t) -> t).join();
        assertInstanceOf(IllegalArgumentException.class, e);
        assertTrue(e.getMessage().contains("frame-max"), e.getMessage());
        assertEquals(0, body.refCnt());
        broker.expectNothing();
        assertTrue(ch.isOpen());
    }

    @Test
    void aPublishRefusedForItsNameReleasesTheBody() {
        io.netty.buffer.ByteBuf body = Unpooled.directBuffer(8).writeLong(1);
        CompletableFuture<?> f = ch.publish(LONG, "k", false, null, body).toCompletableFuture();
        broker.expectNothing();
        assertTrue(f.isCompletedExceptionally());
        assertTrue(body.refCnt() == 0, "the body is released when the publish is refused");
    }

    @Test
    void publishNoOutcomeThrowsOnTheCallersThread() {
        io.netty.buffer.ByteBuf body = Unpooled.directBuffer(8).writeLong(1);
        assertThrows(IllegalArgumentException.class, () -> ch.publishNoOutcome("", LONG, false, null, body));
        broker.expectNothing();
        assertTrue(body.refCnt() == 0);
    }

    @Test
    void propertiesAndHeadersAreCheckedWhenBuilt() {
        assertThrows(
                IllegalArgumentException.class,
                () -> BasicProperties.builder()
                        .headers(Map.of("h", new Object()))
                        .build());
        assertThrows(
                IllegalArgumentException.class,
                () -> BasicProperties.builder().contentType(LONG).build());
        assertThrows(
                IllegalArgumentException.class,
                () -> BasicProperties.builder().deliveryMode(300).build());
        assertThrows(
                IllegalArgumentException.class,
                () -> BasicProperties.builder()
                        .headers(Map.of(LONG, "key over 255 bytes"))
                        .build());
    }

    @Test
    void optionsRefuseOutOfRangeNumbers() {
        ConnectionOptions o = new ConnectionOptions();
        assertThrows(IllegalArgumentException.class, () -> o.requestedChannelMax(65_536));
        assertThrows(IllegalArgumentException.class, () -> o.requestedChannelMax(-1));
        assertThrows(IllegalArgumentException.class, () -> o.requestedHeartbeat(-1));
        assertThrows(IllegalArgumentException.class, () -> o.requestedFrameMax(4095));
        assertThrows(IllegalArgumentException.class, () -> o.connectionTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> o.maxInboundMessageBodySize(-1));
        RecoveryOptions r = new RecoveryOptions();
        assertThrows(
                IllegalArgumentException.class, () -> r.backoff(Duration.ofSeconds(2), Duration.ofSeconds(1), 2, 0));
        assertThrows(IllegalArgumentException.class, () -> r.backoff(Duration.ZERO, Duration.ofSeconds(1), 0.5, 0));
        assertThrows(IllegalArgumentException.class, () -> r.backoff(Duration.ZERO, Duration.ofSeconds(1), 2, 1.5));
        assertThrows(IllegalArgumentException.class, () -> r.maxAttempts(-1));
        assertThrows(IllegalArgumentException.class, () -> r.maxDuration(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> r.publishWaitTimeout(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> new ConsumeOptions().prefetch(70_000));
    }

    /** Beyond Long.MAX_VALUE ns a timer's toNanos() overflows on the event loop: refused when the option is set. */
    @Test
    void optionsRefuseDurationsNoTimerCanHold() {
        Duration forever = Duration.ofMillis(Long.MAX_VALUE);
        ConnectionOptions o = new ConnectionOptions();
        assertThrows(IllegalArgumentException.class, () -> o.connectionTimeout(forever));
        assertThrows(IllegalArgumentException.class, () -> o.rpcTimeout(forever));
        assertThrows(IllegalArgumentException.class, () -> o.closeTimeout(forever));
        RecoveryOptions r = new RecoveryOptions();
        assertThrows(IllegalArgumentException.class, () -> r.backoff(Duration.ZERO, forever, 2, 0));
        assertThrows(IllegalArgumentException.class, () -> r.maxDuration(forever));
        assertThrows(IllegalArgumentException.class, () -> r.publishWaitTimeout(forever));
        Duration longest = Duration.ofNanos(Long.MAX_VALUE);
        assertEquals(longest, r.maxDuration(longest).maxDuration());
        assertEquals(longest, o.rpcTimeout(longest).rpcTimeout());
    }

    /** Values RabbitMQ refuses with 406 (channel) are refused before anything is written. */
    @Test
    void queueArgumentsTheBrokerWouldRefuseAreRefusedHere() {
        assertThrows(IllegalArgumentException.class, () -> QueueSpec.named("q").maxLength(-1));
        assertThrows(IllegalArgumentException.class, () -> QueueSpec.named("q").messageTtl(Duration.ofMillis(-1)));
        assertThrows(
                IllegalArgumentException.class, () -> QueueSpec.named("q").messageTtl(Duration.ofMillis(1L << 32)));
        assertEquals(
                0xFFFF_FFFFL,
                QueueSpec.named("q")
                        .messageTtl(Duration.ofMillis(0xFFFF_FFFFL))
                        .arguments()
                        .get("x-message-ttl"));
        // a void value would be written for the broker to refuse: null removes the key, as ConsumeOptions does
        assertFalse(QueueSpec.named("q")
                .maxLength(5)
                .argument("x-max-length", null)
                .arguments()
                .containsKey("x-max-length"));
        assertFalse(ExchangeSpec.of("x", "direct")
                .argument("alternate-exchange", "ae")
                .argument("alternate-exchange", null)
                .arguments()
                .containsKey("alternate-exchange"));
    }
}
