package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** connection.start's mechanisms, split into words without a regular expression. */
class HandshakeWordsTest {

    @Test
    void wordsAreSeparatedByAnyRunOfWhitespace() {
        assertEquals(List.of("PLAIN", "AMQPLAIN", "EXTERNAL"), Handshake.words("PLAIN AMQPLAIN EXTERNAL"));
        assertEquals(List.of("PLAIN", "AMQPLAIN"), Handshake.words("  PLAIN \t\n AMQPLAIN  "));
        assertEquals(List.of("PLAIN"), Handshake.words("PLAIN"));
    }

    @Test
    void noWordsInAnEmptyOrBlankString() {
        assertEquals(List.of(), Handshake.words(""));
        assertEquals(List.of(), Handshake.words(" \t "));
    }
}
