package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;

/**
 * A basic.deliver with its content, on its way to (or in) a consumer's handler. It is also the task that
 * runs the handler on the consumer's executor when deliveries are handled in parallel, so handing one over
 * allocates nothing.
 *
 * <pre>
 * method payload: class-id 60 | method-id 60 | consumer-tag shortstr | delivery-tag 8 | redelivered 1 | exchange shortstr | routing-key shortstr
 * </pre>
 */
final class DeliveryImpl extends MessageDelivery implements Runnable, DemandGate.Taker {

    private final ConsumerImpl consumer;

    /**
     * The pause epoch of the unit of the application's demand it took ({@link SlotDispatch}), for giving the unit
     * back if it is lost. Written before it is handed to the executor, read after: the hand-over orders the two.
     */
    private int demandEpoch;

    /** Takes ownership of the three buffers. */
    DeliveryImpl(
            ConsumerImpl consumer,
            ChannelConsumers channel,
            ByteBuf method,
            ByteBuf header,
            ByteBuf body,
            long deliveryTag,
            boolean redelivered) {
        super(channel, method, header, body, deliveryTag, redelivered, !consumer.noAck());
        this.consumer = consumer;
    }

    @Override
    public String consumerTag() {
        return consumer.consumerTag();
    }

    @Override
    protected int exchangeIndex() {
        int tag = method.readerIndex() + 4;
        return tag + 1 + method.getUnsignedByte(tag) + 9;
    }

    @Override
    public void demandEpoch(int epoch) {
        this.demandEpoch = epoch;
    }

    @Override
    public int demandEpoch() {
        return demandEpoch;
    }

    /** Runs the handler on the consumer's executor (parallel deliveries). */
    @Override
    public void run() {
        consumer.run(this);
    }

    @Override
    public String toString() {
        return "Delivery(channel " + channel.number() + ", consumer '" + consumer.consumerTag() + "', deliveryTag "
                + deliveryTag() + (redelivered() ? ", redelivered" : "") + ", " + bodySize() + " bytes)";
    }
}
