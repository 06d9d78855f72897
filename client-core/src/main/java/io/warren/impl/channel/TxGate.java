package io.warren.impl.channel;

import io.warren.impl.connection.OutboundPath;

/**
 * On a transactional channel, where a settlement waits to keep its place among the channel's publishes and tx
 * methods: a settlement made after a tx method that still waits for its turn, or after a tx.commit not yet answered
 * (RabbitMQ closes the connection, 504, over any command while it commits), must not be written before it. The
 * channel's publisher implements it; the settlement path asks. Event loop.
 */
public interface TxGate {

    /** A settlement the gate may hold: {@link #run()} settles it; a discarded one is dropped with the channel. */
    interface Settlement extends OutboundPath.DiscardableTask {}

    /**
     * Takes {@code settlement} and runs it in its turn (or drops it when the channel closes, the broker requeuing the
     * channel's unsettled deliveries) when the channel's publishes wait now; false when it may run at once.
     */
    boolean holdSettlement(Settlement settlement);
}
