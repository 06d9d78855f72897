package io.warren;

/**
 * Told when the broker blocks the connection (connection.blocked, typically a memory or disk alarm:
 * RabbitMQ stops reading from publishing connections) and when it unblocks it. Runs on the
 * connection's event loop: must not block.
 */
public interface BlockedListener {

    /** The broker blocked the connection; {@code reason} is the broker's text (e.g. "low on memory"). */
    void blocked(String reason);

    /** The broker unblocked the connection. */
    void unblocked();
}
