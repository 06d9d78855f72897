package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.ConnectionClosedException;
import org.junit.jupiter.api.Test;

/** Which refusals stop a connect from trying the next address of its list. */
class ConnectorFailoverTest {

    private static ConnectionClosedException brokerClose(int code, String text) {
        return new ConnectionClosedException(text, null, code, text, 10, 40, true);
    }

    @Test
    void refusedCredentialsStopTheFailover() {
        assertTrue(Connector.refusedByBroker(brokerClose(403, "ACCESS_REFUSED - Login was refused")));
    }

    @Test
    void aNodeShuttingDownOrRefusingTheVirtualHostLetsTheNextAddressTry() {
        assertFalse(
                Connector.refusedByBroker(brokerClose(320, "CONNECTION_FORCED - broker forced connection closure")));
        assertFalse(Connector.refusedByBroker(brokerClose(
                530, "NOT_ALLOWED - access to vhost '/' refused for user 'u': connection limit (10) is reached")));
        assertFalse(Connector.refusedByBroker(new ConnectionClosedException("lost during the handshake", null)));
    }

    /** The next address is tried after a 530, but when the last one answers 530 too, that answer is the failure. */
    @Test
    void theBrokersLastAnswerIsTheFailureNotAWrapperOfIt() {
        ConnectionClosedException vhost = brokerClose(530, "NOT_ALLOWED - vhost nope not found");
        Throwable f = Connector.failure(
                java.util.List.of(new io.warren.Address("a", 5672), new io.warren.Address("b", 5672)),
                java.util.List.of(new java.net.ConnectException("Connection refused"), vhost));
        org.junit.jupiter.api.Assertions.assertSame(vhost, f);
        org.junit.jupiter.api.Assertions.assertEquals(1, vhost.getSuppressed().length, "the first address's failure");
    }
}
