package io.warren.credentials;

import io.warren.codec.base.Utf8;
import java.time.Instant;
import java.util.Objects;

/**
 * A user name and a secret (a password, or a token such as an OAuth 2 access token that RabbitMQ's OAuth 2
 * plugin reads as the password), with the time the secret stops being accepted, if it has one. Immutable.
 * {@link #toString()} never shows the secret.
 */
public final class Credentials {

    private final String username;
    private final String secret;
    private final Instant expiresAt;

    private Credentials(String username, String secret, Instant expiresAt) {
        // both go into SASL responses and update-secret as UTF-8: an unpaired surrogate would be sent as '?'
        Utf8.encodedLength("username", Objects.requireNonNull(username, "username"));
        Utf8.encodedLength("secret", Objects.requireNonNull(secret, "secret"));
        this.username = username;
        this.secret = secret;
        this.expiresAt = expiresAt;
    }

    /**
     * Credentials that do not expire.
     *
     * @throws IllegalArgumentException when either has an unpaired surrogate (the message never holds the secret)
     */
    public static Credentials of(String username, String secret) {
        return new Credentials(username, secret, null);
    }

    /**
     * Credentials whose secret expires at {@code expiresAt}; {@code null} for never.
     *
     * @throws IllegalArgumentException when either has an unpaired surrogate (the message never holds the secret)
     */
    public static Credentials of(String username, String secret, Instant expiresAt) {
        return new Credentials(username, secret, expiresAt);
    }

    public String username() {
        return username;
    }

    /** The password or token, sent as the SASL PLAIN / AMQPLAIN password and in connection.update-secret. */
    public String secret() {
        return secret;
    }

    /** When the secret expires, or {@code null} when it does not. */
    public Instant expiresAt() {
        return expiresAt;
    }

    /** True when the secret has an expiry. */
    public boolean expires() {
        return expiresAt != null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Credentials c
                && username.equals(c.username)
                && secret.equals(c.secret)
                && Objects.equals(expiresAt, c.expiresAt);
    }

    @Override
    public int hashCode() {
        return Objects.hash(username, secret, expiresAt);
    }

    @Override
    public String toString() {
        return "Credentials{username=" + username + ", secret=****"
                + (expiresAt == null ? "" : ", expiresAt=" + expiresAt) + "}";
    }
}
