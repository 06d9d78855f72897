package io.warren;

/**
 * An inbound message announced (in its content header) a body larger than
 * {@link ConnectionOptions#maxInboundMessageBodySize()}. Warren refuses it before allocating anything
 * for the body: the channel is closed with 311 CONTENT_TOO_LARGE and the body frames are discarded.
 */
public class MessageTooLargeException extends AmqpException {

    private static final long serialVersionUID = 1L;

    public MessageTooLargeException(String message, int channelNumber) {
        super(message, null, 311, "CONTENT_TOO_LARGE", 0, 0, channelNumber);
    }
}
