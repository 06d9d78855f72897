package io.warren;

/**
 * Told what automatic recovery does ({@link RecoveryOptions}). Every method has a default that does nothing;
 * they run on the connection's event loop and must not block.
 */
public interface RecoveryListener {

    /** The connection was lost and recovery begins; {@code cause} says why it was lost. */
    default void recoveryStarted(Connection connection, ConnectionLostException cause) {
    }

    /** The connection, its channels, topology and consumers are back. */
    default void recoverySucceeded(Connection connection) {
    }

    /**
     * A reconnection attempt failed. {@code willRetry} false means recovery gave up (the bound of
     * {@link RecoveryOptions#maxAttempts} or {@link RecoveryOptions#maxDuration} was reached, or the broker refused
     * the connection for a reason a retry cannot fix, such as authentication): the connection is closed, and its
     * {@link Connection#closeFuture()} says why.
     */
    default void recoveryFailed(Connection connection, Throwable cause, boolean willRetry) {
    }

    /**
     * One recorded entity could not be restored (an exchange declared again with other arguments by someone else,
     * a queue deleted while the connection was down, ...). Recovery goes on with the rest.
     */
    default void topologyRecoveryFailed(Connection connection, String entity, Throwable cause) {
    }
}
