package io.warren;

/**
 * Receives a consumer's deliveries, one at a time (or up to {@link ConsumeOptions#concurrency()} at a time),
 * on the consumer's context: the connection's event loop unless {@link ConsumeOptions#executor} says
 * otherwise. On the event loop it must not block.
 *
 * <p>Ownership: the delivery is borrowed for the duration of the call and released by Warren when the method
 * returns (or throws), unless the handler {@link Delivery#retain() retained} it. Acknowledge with
 * {@link Delivery#ack()} (any thread, also later) unless the consumer is noAck.
 *
 * <p>An exception is logged with the consumer tag and delivery tag; the delivery is released and, with manual
 * acknowledgement, left unsettled (it still counts against the prefetch until it is settled or the channel closes).
 */
@FunctionalInterface
public interface DeliveryHandler {

    void handle(Delivery delivery) throws Exception;
}
