package io.warren;

/**
 * A publish was refused at once because the broker has blocked the connection (connection.blocked: a memory
 * or disk alarm) and {@link PublishOptions#blockedPolicy()} is {@link PublishOptions.BlockedPolicy#FAIL}.
 * Nothing was written. Retryable once the connection is unblocked ({@link Channel#whenWritable()}).
 */
public class ConnectionBlockedException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final String reason;

    public ConnectionBlockedException(String message, String reason, int channelNumber) {
        super(message, null, 0, null, 0, 0, channelNumber);
        this.reason = reason;
    }

    /** The broker's reason from connection.blocked ("low on memory"), or {@code null}. */
    public String reason() {
        return reason;
    }
}
