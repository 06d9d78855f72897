package io.warren.credentials;

import java.util.concurrent.CompletionStage;

/**
 * Fetches a fresh secret: an OAuth 2 access token from an authorization server's token endpoint (client
 * credentials grant), a token from a vault, a signed token made locally... Warren makes no network call of its
 * own: the application plugs its HTTP client in here. Must not block the calling thread; completes the stage
 * from any thread.
 *
 * @see RefreshingCredentialsProvider
 */
@FunctionalInterface
public interface TokenSource {

    /** A new token and its expiry ({@link Credentials#expiresAt()}; {@code null} for none). */
    CompletionStage<Credentials> fetch();
}
