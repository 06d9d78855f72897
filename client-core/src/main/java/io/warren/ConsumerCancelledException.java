package io.warren;

/**
 * The broker cancelled a consumer (a server-sent basic.cancel): its queue was deleted, or, with
 * {@code x-cancel-on-ha-failover}, the queue's leader moved. The channel stays open.
 */
public class ConsumerCancelledException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final String consumerTag;
    private final String queue;

    public ConsumerCancelledException(String message, String consumerTag, String queue, int channelNumber) {
        super(message, null, 0, null, 60, 30, channelNumber);
        this.consumerTag = consumerTag;
        this.queue = queue;
    }

    /** The tag of the cancelled consumer. */
    public String consumerTag() {
        return consumerTag;
    }

    /** The queue it consumed from. */
    public String queue() {
        return queue;
    }
}
