package io.warren;

/**
 * A delivery was acknowledged (or nacked, rejected) when the broker no longer knows its delivery tag, so nothing is
 * sent and the channel stays open. Two cases:
 * <ul>
 *   <li>the channel it came on was lost and recovered: its tag belongs to the old channel, and sent on the new one it
 *       would acknowledge another message or make the broker close the channel with 406 PRECONDITION_FAILED. Thrown
 *       for such a delivery, and for a tag at or below the highest tag seen before the recovery (a recovered
 *       channel's tags continue above it);</li>
 *   <li>{@link Channel#basicRecover} requeued it: once basic.recover is written the broker has forgotten the tags of
 *       every delivery it requeues, those received before its recover-ok, and would close the channel with 406
 *       PRECONDITION_FAILED unknown delivery tag.</li>
 * </ul>
 * Thrown by {@link Delivery#ack()} and friends on such a delivery, and by {@link Channel#basicAck} and friends for
 * its tag. The broker has requeued the message and delivers it again, flagged redelivered: settle that delivery
 * instead.
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
