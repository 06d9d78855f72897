package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;

/**
 * How a consumer hands its deliveries to the application, chosen once from its options:
 * {@link SerialDispatch} (a {@link io.warren.DeliveryHandler}, one at a time) or {@link SlotDispatch} (counted
 * in flight: an {@link io.warren.AsyncDeliveryHandler}, or concurrency above 1). The two keep the application's
 * demand in different places and end a delivery differently, so they are two classes rather than flags tested on
 * every delivery. A consumer keeps its dispatch for life, but the call sites in {@link ConsumerImpl} are shared by
 * every consumer in the JVM: they see one class, or both when the application has both kinds of consumer, and the
 * JIT inlines either case (monomorphic or bimorphic).
 */
interface Dispatch {

    /**
     * The delivery object for a message that just arrived; takes the three buffers (the delivery releases them).
     * Event loop.
     */
    DeliveryImpl newDelivery(
            ChannelConsumers on, ByteBuf method, ByteBuf header, ByteBuf body, long deliveryTag, boolean redelivered);

    /** The consumer's queue hands a delivery over. Consumer context, one at a time (the queue's drain). */
    void onDelivery(DeliveryImpl d);

    /** {@link io.warren.ConsumerHandle#pause()}. Any thread. */
    void pause();

    /** {@link io.warren.ConsumerHandle#fetch(long)}, {@code count} not negative. Any thread. */
    void fetch(long count);

    /** Deliveries taken from the queue and held for the application's demand. Any thread. */
    long held();

    /** The consumer ended: what is held is disposed. Event loop. */
    void end();
}
