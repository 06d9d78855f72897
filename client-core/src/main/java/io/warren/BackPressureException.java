package io.warren;

/**
 * A publish was refused at once, nothing written: the connection already holds
 * {@link PublishOptions#maxPendingBytes()} of publishes it accepted but could not write yet (the socket drains
 * slower than the application publishes, or the broker blocked the connection). Retryable: wait for
 * {@link Channel#whenWritable()} and publish again. A publisher that waits whenever
 * {@link Channel#isWritable()} is false never sees this exception.
 */
public class BackPressureException extends AmqpException {

    private static final long serialVersionUID = 1L;

    public BackPressureException(String message, int channelNumber) {
        super(message, null, 0, null, 0, 0, channelNumber);
    }
}
