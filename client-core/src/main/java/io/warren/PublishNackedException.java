package io.warren;

/**
 * The broker refused responsibility for a published message (basic.nack): a queue rejected it
 * ({@code x-overflow: reject-publish} on a full queue, a quorum queue without a quorum) or the broker failed
 * internally. The message may or may not have reached some queue; publishing it again is the usual answer.
 */
public class PublishNackedException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final long sequenceNumber;

    public PublishNackedException(String message, int channelNumber, long sequenceNumber) {
        super(message, null, 0, null, 60, 120, channelNumber);
        this.sequenceNumber = sequenceNumber;
    }

    /** The publish's sequence number on its channel (1 for the first publish after confirm.select). */
    public long sequenceNumber() {
        return sequenceNumber;
    }
}
