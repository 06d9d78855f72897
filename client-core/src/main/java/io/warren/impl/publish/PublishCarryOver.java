package io.warren.impl.publish;

import io.netty.buffer.ByteBuf;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import java.util.concurrent.CompletableFuture;

/**
 * Where a {@link Publisher} hands the publishes it accepted but did not write when its channel closed: the
 * recovery of the channel, which writes them on the recovered channel when it waits for recovery
 * ({@code PublishDuringRecovery.WAIT}). Implemented by the recovery room's channel recovery.
 */
public interface PublishCarryOver {

    /**
     * tx.select is on the wire: the channel's publishes from here on belong to transactions, which a connection loss
     * rolls back, so none is carried over from then on. Event loop.
     */
    void transactional();

    /**
     * Whether a publish accepted now would be carried over should the channel be lost: recovery is on, waits for the
     * channel ({@code PublishDuringRecovery.WAIT}), and the channel is not transactional. Any thread.
     */
    boolean wouldCarry();

    /**
     * Takes over a publish the lost channel had accepted but not written: true when it is held to be written after
     * recovery, and then owns {@code body}; false when it is not: the caller still owns it and fails the publish.
     * Event loop.
     *
     * @param future its outcome, {@code null} for {@code publishNoOutcome}
     * @param bytes  what it counted against the connection's bound
     */
    boolean carry(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            CompletableFuture<PublishOutcome> future,
            long bytes);
}
