package io.warren.impl.recovery;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AuthenticationException;
import io.warren.ConnectionClosedException;
import org.junit.jupiter.api.Test;

/** Which failures of a reconnection attempt end recovery, and which it retries. */
class RetriedRefusalsTest {

    private static ConnectionClosedException brokerClose(int code, String text) {
        return new ConnectionClosedException(text, null, code, text, 10, 40, true);
    }

    @Test
    void refusedCredentialsEndRecovery() {
        assertTrue(ConnectionRecovery.isFatal(
                new AuthenticationException("refused", null, 403, "ACCESS_REFUSED - Login was refused", 10, 11)));
        assertTrue(ConnectionRecovery.isFatal(brokerClose(403, "ACCESS_REFUSED - Login was refused")));
    }

    @Test
    void aVirtualHostThatIsNotThereOrNotTheUsersEndsRecovery() {
        assertTrue(ConnectionRecovery.isFatal(brokerClose(530, "NOT_ALLOWED - vhost nope not found")));
        assertTrue(
                ConnectionRecovery.isFatal(brokerClose(530, "NOT_ALLOWED - access to vhost 'v' refused for user 'u'")));
    }

    @Test
    void aVirtualHostDownOnTheNodeOrAConnectionLimitIsRetried() {
        assertFalse(ConnectionRecovery.isFatal(
                brokerClose(541, "INTERNAL_ERROR - access to vhost '/' refused for user 'u': vhost '/' is down")));
        assertFalse(ConnectionRecovery.isFatal(brokerClose(
                530, "NOT_ALLOWED - access to vhost '/' refused for user 'u': connection limit (10) is reached")));
        assertFalse(ConnectionRecovery.isFatal(brokerClose(
                530,
                "NOT_ALLOWED - access to vhost '/' refused for user 'u', backend rabbit_auth_backend_http"
                        + " returned an error: timeout")));
        assertTrue(ConnectionRecovery.isFatal(brokerClose(530, "NOT_ALLOWED - vhost rate-limits not found")));
        assertFalse(ConnectionRecovery.isFatal(brokerClose(320, "CONNECTION_FORCED - shutdown")));
    }

    @Test
    void aCredentialsProviderThatFailedIsRetried() {
        assertFalse(ConnectionRecovery.isFatal(new ConnectionClosedException(
                "the credentials provider failed: token endpoint down", new IllegalStateException())));
    }
}
