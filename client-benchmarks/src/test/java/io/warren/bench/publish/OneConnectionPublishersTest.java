package io.warren.bench.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.perf.AmqpClientDriver;
import io.warren.perf.BrokerRunTest;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The large-body publishers' set-up and tear-down against the real broker: a bad URI is refused without its
 * password, and a set-up that fails leaves nothing of the client it was handed running.
 */
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

    @Test
    void aSetUpThatFailsClosesTheConnectionsAndTheClientItWasHanded() throws Exception {
        String uri = BrokerRunTest.requireBroker();
        String exchange = "warren-test.publishers." + Long.toHexString(System.nanoTime());
        com.rabbitmq.client.Connection admin = AmqpClientDriver.factory(uri).newConnection("test admin");
        try {
            // a direct exchange of that name: the publishers' fanout declare fails with 406 PRECONDITION_FAILED
            admin.createChannel().exchangeDeclare(exchange, "direct", false, true, null);
            Set<Thread> before = ioThreads();
            assertThrows(
                    Exception.class,
                    () -> OneConnectionPublishers.warrenOnOneLoop(uri, "test", exchange, 2, 2, new byte[16]));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            Set<Thread> left = ioThreads();
            left.removeAll(before);
            while (!left.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50); // a closed client's event loop ends after its quiet period
                left.removeIf(t -> !t.isAlive());
            }
            assertEquals(Set.of(), left, "the failed set-up's event loop still runs");
        } finally {
            admin.abort();
        }
    }

    private static Set<Thread> ioThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("warren-io-") && t.isAlive())
                .collect(Collectors.toSet());
    }
}
