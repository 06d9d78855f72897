package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import io.warren.codec.Frame;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.MethodIds;
import io.warren.credentials.Credentials;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.function.Executable;

/**
 * Text with an unpaired surrogate, through the public API: {@code queueDeclare("bad\uD800name")} used to declare
 * {@code bad?name} (the encoder wrote {@code '?'}), so two different names reached one queue. Every such name,
 * tag, routing key, property, header or argument is refused with an {@link IllegalArgumentException} on the
 * caller's stage before anything is written; the body of a refused publish is released; the channel stays usable.
 */
class UnpairedSurrogateInputTest {

    private static final String BAD = "bad\uD800name";
    private static final String SECRET = "s3cret\uDC00";

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

    private DynamicTest refused(String name, String argument, Supplier<CompletionStage<?>> call) {
        return DynamicTest.dynamicTest(name, () -> {
            CompletableFuture<?> f = call.get().toCompletableFuture();
            broker.expectNothing();
            assertTrue(f.isCompletedExceptionally(), name + " must fail at once");
            Throwable e = f.handle((v, t) -> t instanceof CompletionException ? t.getCause() : t)
                    .join();
            assertInstanceOf(IllegalArgumentException.class, e, name);
            assertTrue(e.getMessage().contains(argument + " has an unpaired surrogate"), e.getMessage());
            assertFalse(e.getMessage().contains("bad"), "the text is not in the message: " + e.getMessage());
            assertTrue(ch.isOpen(), "the channel stays usable");
        });
    }

    @TestFactory
    Stream<DynamicTest> everyCallerStringIsCheckedBeforeAnythingIsWritten() {
        Map<String, Object> nested = Map.of("x-outer", List.of(Map.of("x-inner", BAD)));
        return Stream.of(
                refused("queueDeclare name", "queue", () -> ch.queueDeclare(BAD)),
                refused(
                        "queueDeclare argument value",
                        "long string",
                        () -> ch.queueDeclare(QueueSpec.named("q").arguments(nested))),
                refused(
                        "queueDeclare argument name",
                        "field name",
                        () -> ch.queueDeclare(QueueSpec.named("q").argument(BAD, 1))),
                refused("exchangeDeclare name", "exchange", () -> ch.exchangeDeclare(BAD, "direct")),
                refused("exchangeDeclare type", "type", () -> ch.exchangeDeclare("x", BAD)),
                refused(
                        "exchangeDeclare argument",
                        "long string",
                        () -> ch.exchangeDeclare(ExchangeSpec.of("x", "direct").arguments(Map.of("alt", BAD)))),
                refused("exchangeBind routing key", "routing-key", () -> ch.exchangeBind("d", "s", BAD)),
                refused("queueBind routing key", "routing-key", () -> ch.queueBind("q", "x", BAD)),
                refused(
                        "queueBind argument",
                        "long string",
                        () -> ch.queueBind("q", "x", "k", Map.of("x-match", BAD), false)),
                refused("queueUnbind exchange", "exchange", () -> ch.queueUnbind("q", BAD, "k")),
                refused("queuePurge", "queue", () -> ch.queuePurge(BAD)),
                refused("queueDelete", "queue", () -> ch.queueDelete(BAD)),
                refused("basicGet", "queue", () -> ch.basicGet(BAD, false)),
                refused("consume queue", "queue", () -> ch.consume(BAD, d -> {})),
                refused(
                        "consume tag",
                        "consumer-tag",
                        () -> ch.consume("q", new ConsumeOptions().consumerTag(BAD), d -> {})),
                refused(
                        "consume argument",
                        "long string",
                        () -> ch.consume("q", new ConsumeOptions().arguments(nested), d -> {})),
                refused("publish exchange", "exchange", () -> ch.publish(BAD, "k", false, null, new byte[1])),
                refused("publish routing key", "routing-key", () -> ch.publish("", BAD, false, null, new byte[1])));
    }

    @Test
    void aRefusedPublishReleasesItsBodyOnTheCallersThread() {
        ByteBuf body = Unpooled.directBuffer(8).writeLong(1);
        CompletableFuture<?> f = ch.publish("", BAD, false, null, body).toCompletableFuture();
        assertTrue(f.isCompletedExceptionally());
        assertEquals(0, body.refCnt());
        ByteBuf again = Unpooled.directBuffer(8).writeLong(1);
        assertThrows(IllegalArgumentException.class, () -> ch.publishNoOutcome(BAD, "k", false, null, again));
        assertEquals(0, again.refCnt());
        broker.expectNothing();
    }

    @Test
    void propertiesAndHeadersAreRefusedWhenBuiltNotWhenPublished() {
        assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().messageId(BAD));
        assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().contentType(BAD));
        assertThrows(
                IllegalArgumentException.class,
                () -> BasicProperties.builder().headers(Map.of("x-trace", List.of(BAD))));
        assertThrows(
                IllegalArgumentException.class, () -> BasicProperties.builder().headers(Map.of(BAD, "v")));
    }

    @Test
    void aSecretWithAnUnpairedSurrogateFailsUpdateSecretWithoutBeingPrinted() {
        CompletableFuture<Void> f =
                broker.connected.join().updateSecret(SECRET, "rotation").toCompletableFuture();
        broker.client.runPendingTasks();
        broker.expectNothing();
        Throwable e = f.handle((v, t) -> t).join();
        assertInstanceOf(IllegalArgumentException.class, e);
        assertTrue(e.getMessage().startsWith("new-secret has an unpaired surrogate"), e.getMessage());
        assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
    }

    @Test
    void credentialsWithAnUnpairedSurrogateAreRefusedWhenSetNotSentAsQuestionMarks() {
        // PLAIN and AMQPLAIN encode them into the start-ok response: "pa\uD800ss" would log in as "pa?ss"
        for (Executable set : List.<Executable>of(
                () -> new ConnectionOptions().password(SECRET),
                () -> new ConnectionOptions().username(SECRET),
                () -> Credentials.of("guest", SECRET),
                () -> Credentials.of(SECRET, "guest", null))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, set);
            assertTrue(e.getMessage().contains("has an unpaired surrogate"), e.getMessage());
            assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
        }
    }

    @Test
    void twoNamesThatDifferOnlyInTheirLoneSurrogateNoLongerReachTheSameQueue() {
        // before: both went on the wire as "bad?name"; now neither does, and the well-formed name still goes
        assertTrue(ch.queueDeclare("bad\uD800name").toCompletableFuture().isCompletedExceptionally());
        assertTrue(ch.queueDeclare("bad\uDFFFname").toCompletableFuture().isCompletedExceptionally());
        broker.expectNothing();
        ch.queueDeclare("bad\uD83D\uDE00name");
        Frame declare = broker.expect(1, MethodIds.QUEUE_DECLARE);
        try {
            io.warren.codec.method.QueueDeclare view = new io.warren.codec.method.QueueDeclare()
                    .wrap(declare.payload(), declare.payload().readerIndex());
            assertEquals("bad\uD83D\uDE00name", view.queueAsString());
            assertEquals(3 + 4 + 4, view.queue().length(), "the pair is one four-byte character");
        } finally {
            declare.release();
        }
        assertEquals(11, "bad\uD83D\uDE00name".getBytes(StandardCharsets.UTF_8).length);
    }
}
