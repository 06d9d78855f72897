package io.warren;

/**
 * The connection was lost and is being recovered automatically ({@link RecoveryOptions}). Retryable: the
 * operation that failed with it (a publish whose confirm did not come, a declare in flight) can be made again
 * once the connection is back, on the same {@link Channel}. Its cause is the loss itself (the broker's
 * connection.close, the socket's failure, missed heartbeats).
 */
public class ConnectionLostException extends ConnectionClosedException {

    private static final long serialVersionUID = 1L;

    public ConnectionLostException(String message, AmqpException cause) {
        super(
                message,
                cause,
                cause == null ? 0 : cause.replyCode(),
                cause == null ? null : cause.replyText(),
                cause == null ? 0 : cause.classId(),
                cause == null ? 0 : cause.methodId(),
                cause instanceof ConnectionClosedException c && c.initiatedByBroker());
    }
}
