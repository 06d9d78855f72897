package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.warren.impl.queue.InboundMessageQueue;
import java.util.ArrayDeque;

/**
 * One delivery at a time, synchronously (a {@link io.warren.DeliveryHandler}, concurrency 1): the queue's drain
 * calls the handler in place, and the application's pause/resume/fetch are the queue's demand, exactly. On the
 * event loop it also keeps released deliveries for reuse, so a steady stream allocates no delivery objects.
 */
final class SerialDispatch implements Dispatch {

    /**
     * At most this many released deliveries are kept for reuse, oldest first; past it the oldest is dropped (a
     * consumer that never acks keeps no more, and one tag never settled cannot stop reuse).
     */
    private static final int MAX_RELEASED = 4096;

    private final ConsumerImpl consumer;
    private final InboundMessageQueue<DeliveryImpl> queue;
    /**
     * Released deliveries kept for reuse (handler on the event loop, one at a time), or null: the oldest is reused
     * once its tag is settled. Event loop only.
     */
    private final ArrayDeque<DeliveryImpl> released;

    /** Event loop, as the consumer is made. */
    SerialDispatch(ConsumerImpl consumer, InboundMessageQueue<DeliveryImpl> queue, long initialDemand) {
        this.consumer = consumer;
        this.queue = queue;
        this.released = queue.isSameThread() ? new ArrayDeque<>(16) : null;
        if (initialDemand != Long.MAX_VALUE) {
            queue.pause();
            queue.fetch(initialDemand);
        }
    }

    /**
     * A released delivery when the oldest kept is reusable (released, no settlement on its way, its tag settled on
     * its channel; at once with noAck), else a new one. One whose tag basic.recover requeued unsettled is let go
     * instead: the application may still settle it once, and must be told it is stale, not settle the message the
     * object would name next.
     */
    @Override
    public DeliveryImpl newDelivery(
            ChannelConsumers on, ByteBuf method, ByteBuf header, ByteBuf body, long deliveryTag, boolean redelivered) {
        if (released != null) {
            DeliveryImpl d = released.peekFirst();
            if (d != null && d.reusable()) {
                boolean noAck = consumer.noAck();
                if (!noAck && on.isRequeued(d.settleTag())) {
                    released.pollFirst();
                } else if (noAck || on.isSettled(d.settleTag())) {
                    released.pollFirst();
                    if (d.channel == on) { // after a recovery the kept ones belong to a channel that is gone
                        d.reinit(on, method, header, body, deliveryTag, redelivered);
                        return d;
                    }
                }
            }
        }
        return new DeliveryImpl(consumer, on, method, header, body, deliveryTag, redelivered);
    }

    @Override
    public void onDelivery(DeliveryImpl d) {
        consumer.handle(d); // one of a lost channel was dropped before it took demand (ConsumerImpl.dropIfLost)
        if (released != null && d.refCnt() == 0) {
            if (released.size() == MAX_RELEASED) {
                // the oldest's tag has waited a whole pool's worth of messages (a failed handler leaves it
                // unsettled until the channel closes): let it go, or it blocks reuse for good
                released.pollFirst();
            }
            released.addLast(d); // not retained: ours again once its tag is settled
        }
    }

    @Override
    public void pause() {
        queue.pause();
    }

    @Override
    public void fetch(long count) {
        queue.fetch(count);
    }

    @Override
    public long held() {
        return 0;
    }

    @Override
    public void end() {
        // nothing is held outside the queue, which the consumer closes
    }
}
