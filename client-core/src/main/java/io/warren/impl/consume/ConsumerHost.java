package io.warren.impl.consume;

import io.warren.AmqpException;
import java.util.function.Consumer;

/**
 * What a channel's {@link ChannelConsumers} ask of the channel the application holds. Implemented by the client
 * room's channel handle. Any thread.
 */
public interface ConsumerHost {

    /** Whether the application set the channel's own basic.qos: consumers then get no default prefetch. */
    boolean hasOwnQos();

    /** Where consumers count themselves per queue for topology recovery, or null when that is off. */
    QueueConsumerCounts consumerCounts();

    /**
     * Holds a synchronous method the application called while the channel recovers, until the channel and the
     * topology are back: {@code send} then runs on the event loop; {@code fail} fails it unsent (recovery gave up,
     * or it waited longer than the RPC timeout, or {@code queue}, the queue it names, was declared again under a new
     * name). Returns false when the channel is not recovering (nor sending what it held): the caller sends it now.
     * Event loop.
     */
    boolean holdWhileRecovering(int methodKey, String queue, Runnable send, Consumer<AmqpException> fail);

    /** The channel's consumers on its current connection (a held basic.consume starts there). */
    ChannelConsumers currentConsumers();
}
