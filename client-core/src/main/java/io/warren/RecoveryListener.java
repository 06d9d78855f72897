package io.warren;

/**
 * Told what automatic recovery does ({@link RecoveryOptions}). Every method has a default that does nothing;
 * they run on the connection's event loop and must not block.
 */
public interface RecoveryListener {

    /** The connection was lost and recovery begins; {@code cause} says why it was lost. */
    default void recoveryStarted(Connection connection, ConnectionLostException cause) {}

    /** The connection, its channels, topology and consumers are back. */
    default void recoverySucceeded(Connection connection) {}

    /**
     * A reconnection attempt failed. {@code willRetry} false means recovery gave up (the bound of
     * {@link RecoveryOptions#maxAttempts} or {@link RecoveryOptions#maxDuration} was reached, or the broker refused
     * the connection for a reason a retry cannot fix, such as authentication, or the client's event loop shut
     * down): the connection is closed, and its {@link Connection#closeFuture()} says why. Each failed attempt is told
     * once, and {@code true} only when the next attempt is already scheduled: the last failure is not told as retried
     * first.
     */
    default void recoveryFailed(Connection connection, Throwable cause, boolean willRetry) {}

    /**
     * One recorded entity could not be restored (an exchange declared again with other arguments by someone else,
     * a queue deleted while the connection was down, ...). Recovery goes on with the rest.
     */
    default void topologyRecoveryFailed(Connection connection, String entity, Throwable cause) {}

    /**
     * A server-named queue was declared again and the broker gave it {@code newName} in place of {@code oldName}:
     * told at its queue.declare-ok, before the rest of the restore. Recovery then binds the new name as the old one
     * was bound and starts its consumers on it ({@link ConsumerHandle#queue()} gives it once they are back); the
     * application updates what it keeps of the old name (a reply-to address, a name to delete later). Operations on
     * {@code oldName} from now on reach no queue.
     */
    default void queueRenamed(Connection connection, String oldName, String newName) {}

    /**
     * The broker closed {@code channel} for a reason recovery repairs, and it is being re-opened on the same
     * connection with its modes and consumers; {@code cause} says why: today RabbitMQ's delivery acknowledgement
     * timeout (406 PRECONDITION_FAILED, {@code consumer_timeout}), which requeued the channel's unacknowledged
     * deliveries. Deliveries from before it that the application still holds are stale: settling one throws
     * {@link StaleDeliveryException}, and those not yet handed to a handler are dropped (the broker redelivers them).
     * {@link ClientMetrics#oldestUnacknowledgedMillis()} shows the timeout coming.
     */
    default void channelRecoveryStarted(Channel channel, ChannelLostException cause) {}

    /** The channel of {@link #channelRecoveryStarted} is back, with its modes and consumers. */
    default void channelRecoverySucceeded(Channel channel) {}

    /**
     * The channel of {@link #channelRecoveryStarted} could not be re-opened or restored: it is closed for good and
     * its {@link Channel#closeFuture()} says why. Told too when the connection closes for good meanwhile because its
     * event loop shut down (not when the application closes it). (A connection lost meanwhile is not this: the
     * connection's recovery takes the channel over.)
     */
    default void channelRecoveryFailed(Channel channel, Throwable cause) {}
}
