package io.warren;

/**
 * The connection is closed, or closed while an operation was pending: by the broker (connection.close,
 * for example 320 CONNECTION_FORCED from {@code rabbitmqctl close_connection}), by the application, by a
 * protocol error (501-505), by missed heartbeats or by the loss of the socket.
 */
public class ConnectionClosedException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final boolean initiatedByBroker;

    public ConnectionClosedException(
            String message,
            Throwable cause,
            int replyCode,
            String replyText,
            int classId,
            int methodId,
            boolean initiatedByBroker) {
        super(message, cause, replyCode, replyText, classId, methodId, 0);
        this.initiatedByBroker = initiatedByBroker;
    }

    public ConnectionClosedException(String message, Throwable cause) {
        this(message, cause, 0, null, 0, 0, false);
    }

    /** True when the broker sent connection.close. */
    public boolean initiatedByBroker() {
        return initiatedByBroker;
    }
}
