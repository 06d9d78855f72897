package io.warren;

/**
 * The channel is closed, or closed while an operation was pending. When the broker closed it (for
 * example 404 NOT_FOUND on a passive declare, 406 PRECONDITION_FAILED on a redeclare with other
 * arguments) the exception carries the broker's reply code, reply text, class and method; the
 * connection and its other channels go on working.
 */
public class ChannelClosedException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final boolean initiatedByBroker;

    public ChannelClosedException(
            String message,
            Throwable cause,
            int replyCode,
            String replyText,
            int classId,
            int methodId,
            int channelNumber,
            boolean initiatedByBroker) {
        super(message, cause, replyCode, replyText, classId, methodId, channelNumber);
        this.initiatedByBroker = initiatedByBroker;
    }

    /** True when the broker sent channel.close. */
    public boolean initiatedByBroker() {
        return initiatedByBroker;
    }
}
