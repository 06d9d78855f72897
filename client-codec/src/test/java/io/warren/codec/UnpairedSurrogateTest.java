package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.codec.base.Utf8;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicConsumeEncoder;
import io.warren.codec.method.BasicPublishEncoder;
import io.warren.codec.method.ConnectionStartOkEncoder;
import io.warren.codec.method.ConnectionUpdateSecretEncoder;
import io.warren.codec.method.ExchangeDeclareEncoder;
import io.warren.codec.method.QueueBindEncoder;
import io.warren.codec.method.QueueDeclareEncoder;
import io.warren.codec.table.FieldTable;
import io.warren.codec.table.FieldTableEncoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Text with an unpaired surrogate has no UTF-8 form: every encoder refuses it with an
 * {@link IllegalArgumentException} naming the argument (never the text) instead of writing {@code '?'}, which
 * would let two different strings name the same queue.
 */
class UnpairedSurrogateTest {

    /** A lone high surrogate, a lone low one, a high one at the very end, a low one before its high one. */
    private static final List<String> MALFORMED =
            List.of("bad\uD800name", "bad\uDC00name", "bad\uD800", "\uDC00\uD800");

    private static void refused(String argument, Consumer<String> set) {
        for (String s : MALFORMED) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> set.accept(s), s);
            assertTrue(e.getMessage().startsWith(argument + " has an unpaired surrogate at index "), e.getMessage());
            assertFalse(e.getMessage().contains("bad"), "the text itself is not in the message: " + e.getMessage());
        }
    }

    @Test
    void shortStringArgumentsAreRefused() {
        refused("queue", s -> new QueueDeclareEncoder().queue(s));
        refused("exchange", s -> new ExchangeDeclareEncoder().exchange(s));
        refused("routing-key", s -> new QueueBindEncoder().routingKey(s));
        refused("routing-key", s -> new BasicPublishEncoder().routingKey(new StringBuilder(s)));
        refused("consumer-tag", s -> new BasicConsumeEncoder().consumerTag(s));
        refused("short string", ShortString::of);
    }

    @Test
    void longStringArgumentsAreRefusedWithoutTheirValue() {
        refused("response", s -> new ConnectionStartOkEncoder().response(s));
        refused("new-secret", s -> new ConnectionUpdateSecretEncoder().newSecret(s));
    }

    @Test
    void propertyStringsAreRefused() {
        refused("content-type", s -> BasicProperties.builder().contentType(s));
        refused("message-id", s -> BasicProperties.builder().messageId(s));
        refused("correlation-id", s -> BasicProperties.builder().correlationId(s));
        refused("reply-to", s -> BasicProperties.builder().replyTo(s));
        refused("app-id", s -> BasicProperties.builder().appId(s));
    }

    @Test
    void fieldNamesAndValuesAreRefusedAtAnyDepthWithTheirPath() {
        for (String s : MALFORMED) {
            assertPath(
                    "at 'x-a': long string has an unpaired surrogate",
                    () -> FieldTableEncoder.encodedLength(Map.of("x-a", s)));
            assertPath("field name has an unpaired surrogate", () -> FieldTableEncoder.encodedLength(Map.of(s, 1)));
            Map<String, Object> inner = new LinkedHashMap<>();
            inner.put("ok", "fine");
            inner.put("list", List.of(1, Map.of("deep", s)));
            assertPath(
                    "at 'outer'.'list'[1].'deep': long string has an unpaired surrogate",
                    () -> FieldTableEncoder.encodedLength(Map.of("outer", inner)));
            assertPath(
                    "at 'outer'[0]: field name has an unpaired surrogate",
                    () -> FieldTableEncoder.encodedLength(Map.of("outer", List.of(Map.of(s, true)))));
            assertPath(
                    "at 'x-args': long string has an unpaired surrogate",
                    () -> new QueueDeclareEncoder().arguments(Map.of("x-args", new StringBuilder(s))));
            assertPath(
                    "at 'h': long string has an unpaired surrogate",
                    () -> BasicProperties.builder().headers(Map.of("h", s)));
        }
    }

    private static void assertPath(String expectedStart, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().startsWith(expectedStart), e.getMessage());
        assertFalse(e.getMessage().contains("bad"), e.getMessage());
    }

    @Test
    void pairedSurrogatesAreOneFourByteCharacter() {
        String clef = "q\uD834\uDD1E"; // U+1D11E, MUSICAL SYMBOL G CLEF
        byte[] utf8 = clef.getBytes(StandardCharsets.UTF_8);
        assertEquals(5, utf8.length);
        assertEquals(5, Utf8.encodedLength("queue", clef));
        assertEquals(5, ShortString.checkedLength("queue", clef));
        assertArrayEquals(utf8, Utf8.encode("response", clef));
        assertEquals(5, ShortString.of(clef).byteLength());
        Map<String, Object> table = Map.of(clef, clef);
        ByteBuf buf = Unpooled.buffer(FieldTableEncoder.encodedLength(table));
        try {
            FieldTableEncoder.encode(buf, table);
            assertEquals(4 + 1 + 5 + 1 + 4 + 5, buf.readableBytes());
            assertEquals(Map.of(clef, clef), new FieldTable().wrap(buf, 0).toMap());
        } finally {
            buf.release();
        }
    }

    @Test
    void lengthsAgreeWithTheJdkForWellFormedText() {
        for (String s : List.of("", "ascii", "caf\u00e9", "\u2713\u2713", "\uD83D\uDE00 smile", "\u07FF\u0800\uFFFF")) {
            assertEquals(s.getBytes(StandardCharsets.UTF_8).length, Utf8.encodedLength("x", s), s);
            assertEquals(ByteBufUtil.utf8Bytes(s), Utf8.encodedLength("x", s), s);
        }
    }
}
