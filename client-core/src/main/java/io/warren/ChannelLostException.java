package io.warren;

/**
 * The broker closed the channel for a reason that recovery repairs, and the channel is being recovered on the same
 * connection ({@link RecoveryOptions}): the same {@link Channel} and consumers go on, with their modes, and
 * {@link RecoveryListener#channelRecoveryStarted} is told. One such reason today: RabbitMQ's delivery
 * acknowledgement timeout (406 PRECONDITION_FAILED, {@code consumer_timeout}), when a delivery stayed
 * unacknowledged longer than the broker allows; the broker requeued every unacknowledged delivery of the channel.
 * Retryable, as a {@link ConnectionLostException}: a publish whose confirm did not come can be made again on the
 * same channel. Reply code, text, class and method are the broker's; the cause is its close.
 */
public class ChannelLostException extends ChannelClosedException {

    private static final long serialVersionUID = 1L;

    public ChannelLostException(String message, ChannelClosedException cause) {
        super(
                message,
                cause,
                cause.replyCode(),
                cause.replyText(),
                cause.classId(),
                cause.methodId(),
                cause.channelNumber(),
                cause.initiatedByBroker());
    }
}
