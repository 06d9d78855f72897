package io.warren;

/**
 * A delivery was acknowledged (or nacked, rejected) after the channel it came on was lost and recovered. Its
 * delivery tag belongs to the old channel: sent on the new one it would acknowledge another message or make the
 * broker close the channel with 406 PRECONDITION_FAILED, so nothing is sent. Thrown by {@link Delivery#ack()} and
 * friends on such a delivery, and by {@link Channel#basicAck} and friends for a tag at or below the highest tag
 * seen before the recovery (a recovered channel's tags continue above it). The broker has requeued the message
 * with the old channel's loss and delivers it again, flagged redelivered: settle that delivery instead.
 */
public class StaleDeliveryException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final long deliveryTag;

    public StaleDeliveryException(String message, long deliveryTag, int channelNumber) {
        super(message, null, 0, null, 0, 0, channelNumber);
        this.deliveryTag = deliveryTag;
    }

    /** The delivery tag refused, as the application gave it ({@link Delivery#deliveryTag()}). */
    public long deliveryTag() {
        return deliveryTag;
    }
}
