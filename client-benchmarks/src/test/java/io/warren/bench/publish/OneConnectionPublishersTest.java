package io.warren.bench.publish;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The large-body publishers' set-up: a bad URI is refused without its password. */
class OneConnectionPublishersTest {

    @Test
    void amqpClientsRefusalOfABadUriDoesNotQuoteItsPassword() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> OneConnectionPublishers.amqpClient(
                        "amqp://guest:s3cret@bad host:5672", "test", "x", 1, false, new byte[16]));
        assertFalse(String.valueOf(e.getMessage()).contains("s3cret"), e.getMessage());
        assertTrue(e.getCause() == null, "nor in a cause, which a stack trace would print");
        assertTrue(e.getMessage().startsWith("amqp-client cannot use the URI "), e.getMessage());
    }
}
