package io.warren.impl.adapter;

import io.warren.AmqpException;
import io.warren.ChannelClosedException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionLostException;
import io.warren.Delivery;
import io.warren.StaleDeliveryException;
import io.warren.codec.base.ReplyCode;

/**
 * How a stream over a consumer ({@code DeliveryPublisher}'s subscription, {@code DeliveryStream}) reads the
 * consumer's end and gives back what it will not emit. One place, so that the two adapters agree on both.
 */
public final class ConsumerEnds {

    private ConsumerEnds() {}

    /**
     * Whether the consumer ended because the application closed its channel or connection in the ordinary way
     * (reply code 200, from this side, no error behind it): the stream is over, not broken.
     */
    public static boolean closedByTheApplication(AmqpException cause) {
        boolean fromHere = cause instanceof ChannelClosedException channel
                ? !channel.initiatedByBroker()
                : cause instanceof ConnectionClosedException connection
                        && !(connection instanceof ConnectionLostException)
                        && !connection.initiatedByBroker();
        return fromHere && cause.replyCode() == ReplyCode.REPLY_SUCCESS && cause.getCause() == null;
    }

    /**
     * A delivery the stream will not emit (it ended, or nobody takes deliveries now) goes back to the queue:
     * rejected with requeue. Nothing to do when there is nothing to give back: noAck (the broker forgot it when
     * it sent it), settled already, from before a recovery or on a closed channel (the broker requeued it with the
     * lost channel or the close).
     */
    public static void giveBack(Delivery delivery) {
        try {
            delivery.reject(true);
        } catch (IllegalStateException | StaleDeliveryException | ChannelClosedException nothingToGiveBack) {
            // see above
        }
    }
}
