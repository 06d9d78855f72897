package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.warren.Channel;
import io.warren.Delivery;
import io.warren.codec.base.AsciiStringCache;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * What {@link DeliveryImpl} (basic.deliver) and {@code GetResponseImpl} (basic.get-ok) share: the three
 * buffers {@code ContentAssembler} put together, a reference count, and the settlement.
 *
 * <p>Nothing is decoded up front but what the event loop needs anyway (the delivery tag, redelivered):
 * exchange and routing key are read from the method payload when asked, through the codec's
 * {@link AsciiStringCache} and a per-channel {@link ShortStrings} cache, so a handler that never asks costs
 * nothing and one that asks allocates nothing in the steady state.
 *
 * <p>Ownership: the object owns the method, header and body buffers from construction (or {@link #reinit}) and
 * releases all three when its count reaches 0. A consumer on the event loop reuses a released delivery object
 * for a later message ({@link #reinit}), but only once nothing can still refer to it legitimately: its count is 0,
 * no settlement of it is on its way to the event loop, and its tag is settled on the channel (one basic.recover
 * requeued unsettled never is). So a delivery settled after its release (once, as the API allows) still names its
 * own message. One whose tag another settlement covered (a multiple ack) may be reused although it was never
 * settled itself: the API tells the application not to touch such a delivery again ({@link Delivery}'s
 * Settlement), since keeping it from reuse would cost an object per delivery to every consumer that acks in batches.
 */
public abstract class MessageDelivery extends Settlement implements Delivery {

    private static final AtomicIntegerFieldUpdater<MessageDelivery> REF_CNT =
            AtomicIntegerFieldUpdater.newUpdater(MessageDelivery.class, "refCnt");
    private static final AtomicIntegerFieldUpdater<MessageDelivery> SETTLED =
            AtomicIntegerFieldUpdater.newUpdater(MessageDelivery.class, "settled");

    /** {@code settled}: not settled. */
    private static final int UNSETTLED = 0;
    /** {@code settled}: settled, and the coalescer has it. */
    private static final int SETTLED_DONE = 1;
    /** {@code settled}: settled on another thread, on its way to the event loop through the MPSC queue. */
    private static final int HANDED_OVER = 2;

    // set at construction or reinit (event loop), published to the consumer's thread by the queue hand-off
    protected ChannelConsumers channel;
    protected ByteBuf method;
    private ByteBuf header;
    private ByteBuf body;
    private long brokerTag;
    private boolean redelivered;
    private int bodySize;
    private final boolean needsAck;

    // any thread (volatile, field updaters)
    private volatile int refCnt = 1;
    private volatile int settled;

    // the thread using the delivery (one at a time)
    private ContentHeader view;
    private boolean viewWrapped;
    private BasicProperties properties;

    /** Takes ownership of the three buffers. */
    protected MessageDelivery(
            ChannelConsumers channel,
            ByteBuf method,
            ByteBuf header,
            ByteBuf body,
            long deliveryTag,
            boolean redelivered,
            boolean needsAck) {
        this.channel = channel;
        this.method = method;
        this.header = header;
        this.body = body;
        this.bodySize = body.readableBytes();
        this.brokerTag = deliveryTag;
        this.redelivered = redelivered;
        this.needsAck = needsAck;
    }

    /**
     * Makes this released object the next delivery (takes ownership of the three buffers). Event loop, and only
     * when {@link #reusable()} and its tag is settled on the channel.
     */
    protected final void reinit(
            ChannelConsumers channel,
            ByteBuf method,
            ByteBuf header,
            ByteBuf body,
            long deliveryTag,
            boolean redelivered) {
        this.channel = channel;
        this.method = method;
        this.header = header;
        this.body = body;
        this.bodySize = body.readableBytes();
        this.brokerTag = deliveryTag;
        this.redelivered = redelivered;
        this.properties = null;
        this.viewWrapped = false;
        this.settled = UNSETTLED;
        this.refCnt = 1; // last: the volatile write publishes the rest to whoever reads the count
    }

    /** Released, and no settlement of it is still on its way to the event loop. */
    final boolean reusable() {
        return refCnt == 0 && settled != HANDED_OVER;
    }

    /** Its settlement reached the coalescer. */
    final void markSettled() {
        settled = SETTLED_DONE;
    }

    /** The index of the exchange shortstr in the method payload. */
    protected abstract int exchangeIndex();

    @Override
    public final Channel channel() {
        return channel.state().facade();
    }

    /** The application's tag: the broker's plus the channel state's offset (non-zero after a recovery). */
    @Override
    public final long deliveryTag() {
        return brokerTag + channel.tagOffset();
    }

    @Override
    public final boolean redelivered() {
        return redelivered;
    }

    @Override
    public final String exchange() {
        checkAlive();
        return channel.exchangeNames().get(AsciiStringCache.shortString(method, exchangeIndex()));
    }

    @Override
    public final String routingKey() {
        checkAlive();
        int exchange = exchangeIndex();
        int routingKey = exchange + 1 + method.getUnsignedByte(exchange);
        return channel.routingKeyNames().get(AsciiStringCache.shortString(method, routingKey));
    }

    @Override
    public final ContentHeader header() {
        checkAlive();
        if (view == null) {
            view = new ContentHeader();
        }
        if (!viewWrapped) {
            view.wrap(header, header.readerIndex());
            viewWrapped = true;
        }
        return view;
    }

    @Override
    public final BasicProperties properties() {
        if (properties == null) {
            properties = header().toProperties();
        }
        return properties;
    }

    @Override
    public final ByteBuf body() {
        checkAlive();
        return body;
    }

    /** The body size, readable after the release too (for logs). */
    protected final int bodySize() {
        return bodySize;
    }

    // ---- settlement -----------------------------------------------------------------------------------------

    @Override
    public final void ack() {
        settle(AckCoalescer.ACK);
    }

    @Override
    public final void ack(boolean multiple) {
        settle(AckCoalescer.ACK | (multiple ? AckCoalescer.MULTIPLE : 0));
    }

    @Override
    public final void nack(boolean requeue) {
        settle(AckCoalescer.NACK | (requeue ? AckCoalescer.REQUEUE : 0));
    }

    @Override
    public final void nack(boolean multiple, boolean requeue) {
        settle(AckCoalescer.NACK | (multiple ? AckCoalescer.MULTIPLE : 0) | (requeue ? AckCoalescer.REQUEUE : 0));
    }

    @Override
    public final void reject(boolean requeue) {
        settle(AckCoalescer.REJECT | (requeue ? AckCoalescer.REQUEUE : 0));
    }

    private void settle(int op) {
        if (!needsAck) {
            throw new IllegalStateException("delivery " + deliveryTag() + " on channel " + channel.number()
                    + " was taken without manual acknowledgement (noAck / autoAck): there is nothing to settle");
        }
        if (channel.isStale()) {
            throw channel.staleTag(deliveryTag());
        }
        if (channel.isClosed()) {
            throw channel.closedTag(deliveryTag());
        }
        if (channel.isRequeued(brokerTag)) {
            throw channel.requeuedTag(deliveryTag());
        }
        if (!SETTLED.compareAndSet(this, UNSETTLED, HANDED_OVER)) {
            throw new IllegalStateException("delivery " + deliveryTag() + " on channel " + channel.number()
                    + " is already acknowledged, nacked or rejected");
        }
        channel.settle(this, op);
    }

    /** {@link #settleQuietly} with a reject that requeues. */
    protected static final int REJECT_REQUEUE = AckCoalescer.REJECT | AckCoalescer.REQUEUE;

    /** Settles unless settled already (or noAck); for deliveries dropped unhandled. */
    protected final void settleQuietly(int op) {
        if (needsAck && SETTLED.compareAndSet(this, UNSETTLED, HANDED_OVER)) {
            channel.settle(this, op);
        }
    }

    final boolean needsAck() {
        return needsAck;
    }

    /**
     * Whether its tag is stale: its channel was lost, or basic.recover requeued it. The broker redelivers the
     * message either way. Any thread.
     */
    final boolean isStale() {
        return channel.isStale() || channel.isRequeued(brokerTag);
    }

    /** The broker's tag, which is what the coalescer and the wire deal in. */
    @Override
    final long settleTag() {
        return brokerTag;
    }

    // ---- reference count ------------------------------------------------------------------------------------

    @Override
    public final int refCnt() {
        return refCnt;
    }

    @Override
    public final Delivery retain() {
        return retain(1);
    }

    @Override
    public final Delivery retain(int increment) {
        if (increment <= 0) {
            throw new IllegalArgumentException("increment must be positive: " + increment);
        }
        while (true) {
            int current = refCnt;
            if (current <= 0 || current + increment < current) {
                throw new IllegalReferenceCountException(current, increment);
            }
            if (REF_CNT.compareAndSet(this, current, current + increment)) {
                return this;
            }
        }
    }

    @Override
    public final boolean release() {
        return release(1);
    }

    @Override
    public final boolean release(int decrement) {
        if (decrement <= 0) {
            throw new IllegalArgumentException("decrement must be positive: " + decrement);
        }
        while (true) {
            int current = refCnt;
            if (current < decrement) {
                throw new IllegalReferenceCountException(current, -decrement);
            }
            if (REF_CNT.compareAndSet(this, current, current - decrement)) {
                if (current == decrement) {
                    deallocate();
                    return true;
                }
                return false;
            }
        }
    }

    private void deallocate() {
        ByteBuf m = method;
        ByteBuf h = header;
        ByteBuf b = body;
        // dropped, not only released: the slices go back to Netty's pools and are reused for other buffers
        method = null;
        header = null;
        body = null;
        m.release();
        h.release();
        b.release();
    }

    @Override
    public final Delivery touch() {
        return this;
    }

    @Override
    public final Delivery touch(Object hint) {
        ByteBuf b = body;
        if (b != null) {
            b.touch(hint);
        }
        return this;
    }

    private void checkAlive() {
        if (refCnt <= 0) {
            throw new IllegalReferenceCountException("delivery " + deliveryTag() + " on channel " + channel.number()
                    + " is released: retain() it in the handler to use it afterwards");
        }
    }
}
