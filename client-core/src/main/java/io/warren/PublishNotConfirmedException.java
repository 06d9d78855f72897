package io.warren;

/**
 * A publish in confirm mode has no outcome and never will: its channel or connection closed (or was closed)
 * before the broker confirmed it. Retryable: publish the message again, on a new channel. The cause is the
 * {@link ChannelClosedException} or {@link ConnectionClosedException} that says why. With recovery on, it is
 * also how a publish made while its channel is being recovered fails, in either mode
 * ({@link RecoveryOptions.PublishDuringRecovery}; cause: the {@link ConnectionLostException}).
 *
 * <p>{@link #mayHaveReachedBroker()} tells the two cases apart: false when the message was never written (a
 * publish still queued or held when the channel closed, or one whose write the socket refused on its caller's
 * thread), true when it was written and its confirm did not
 * arrive (the broker may have routed it: a retry can duplicate it). A publish made on a channel that is already
 * closed is refused with a {@link ChannelClosedException} instead, and so is a queued one when confirms are off:
 * there is no confirm to miss. See {@code docs/ERRORS.md}.
 */
public class PublishNotConfirmedException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final boolean mayHaveReachedBroker;

    public PublishNotConfirmedException(
            String message, Throwable cause, int channelNumber, boolean mayHaveReachedBroker) {
        super(
                message,
                cause,
                cause instanceof AmqpException a ? a.replyCode() : 0,
                cause instanceof AmqpException a ? a.replyText() : null,
                0,
                0,
                channelNumber);
        this.mayHaveReachedBroker = mayHaveReachedBroker;
    }

    /** True when the message was written before the close: the broker may have it. */
    public boolean mayHaveReachedBroker() {
        return mayHaveReachedBroker;
    }
}
