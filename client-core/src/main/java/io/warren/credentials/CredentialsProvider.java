package io.warren.credentials;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Where a connection gets its credentials. Asked at every connection attempt (when the broker's
 * connection.start arrives, so a connection opened again after a failure, by recovery or by the application,
 * authenticates with what the provider returns then), and, while the connection is open, again before the
 * secret expires: a connection whose {@link Credentials#expiresAt()} is set asks for fresh credentials once
 * {@value #REFRESH_RATIO_PERCENT}% of the secret's remaining lifetime has passed, and sends the new secret to
 * the broker with connection.update-secret (RabbitMQ 3.8+), so the connection outlives its first token.
 *
 * <p>Set on {@link io.warren.ConnectionOptions#credentialsProvider}; without one, the options' user name and
 * password are used. {@link #credentials()} is called on the connection's event loop and must not block: a
 * provider that has to fetch (a token endpoint, a vault) returns a stage it completes later, from any thread.
 * A failed stage fails the connection attempt (or, for a refresh, is logged and retried; the connection goes
 * on with its current secret until the broker refuses it).
 *
 * @see RefreshingCredentialsProvider
 */
@FunctionalInterface
public interface CredentialsProvider {

    /** The share of a secret's remaining lifetime after which a connection asks for fresh credentials. */
    int REFRESH_RATIO_PERCENT = 80;

    /** The credentials to use now. Non-blocking; called on an event loop. */
    CompletionStage<Credentials> credentials();

    /** A provider that always returns the same credentials. */
    static CredentialsProvider of(Credentials credentials) {
        CompletableFuture<Credentials> done = CompletableFuture.completedFuture(credentials);
        return () -> done;
    }

    /** A provider of a user name and a password that does not expire. */
    static CredentialsProvider of(String username, String password) {
        return of(Credentials.of(username, password));
    }
}
