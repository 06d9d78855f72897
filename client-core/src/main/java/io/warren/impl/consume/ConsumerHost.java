package io.warren.impl.consume;

/**
 * What a channel's {@link ChannelConsumers} ask of the channel the application holds. Implemented by the client
 * room's channel handle. Any thread.
 */
public interface ConsumerHost {

    /** Whether the application set the channel's own basic.qos: consumers then get no default prefetch. */
    boolean hasOwnQos();

    /** Where consumers count themselves per queue for topology recovery, or null when that is off. */
    QueueConsumerCounts consumerCounts();
}
