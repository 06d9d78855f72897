package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.warren.GetResponse;
import io.warren.codec.method.BasicGetOk;
import io.warren.impl.channel.AssembledContent;

/**
 * A basic.get response: a delivery over an {@link AssembledContent} (it takes the three buffers), with the
 * get-ok's delivery tag, redelivered flag and message count read at construction and the rest read when asked.
 *
 * <pre>
 * get-ok payload: class-id 60 | method-id 71 | delivery-tag 8 | redelivered 1 | exchange shortstr | routing-key shortstr | message-count 4
 * </pre>
 */
final class GetResponseImpl extends MessageDelivery implements GetResponse {

    /** The get-ok's exchange field: after class and method ids (4), delivery-tag (8) and redelivered (1). */
    private static final int EXCHANGE_OFFSET = 13;

    private final long messageCount;

    private GetResponseImpl(
            ChannelConsumers channel,
            AssembledContent content,
            long deliveryTag,
            boolean redelivered,
            boolean autoAck,
            long messageCount) {
        super(channel, content.method(), content.header(), content.body(), deliveryTag, redelivered, !autoAck);
        this.messageCount = messageCount;
    }

    /** Takes {@code content}'s buffers. */
    static GetResponseImpl of(ChannelConsumers channel, AssembledContent content, boolean autoAck) {
        ByteBuf m = content.method();
        BasicGetOk ok = new BasicGetOk().wrap(m, m.readerIndex());
        return new GetResponseImpl(channel, content, ok.deliveryTag(), ok.redelivered(), autoAck, ok.messageCount());
    }

    @Override
    public String consumerTag() {
        return null;
    }

    @Override
    public long messageCount() {
        return messageCount;
    }

    @Override
    protected int exchangeIndex() {
        return method.readerIndex() + EXCHANGE_OFFSET;
    }

    /** Nobody will take this response (the get timed out): give the message back to the queue and release it. */
    void abandon() {
        settleQuietly(REJECT_REQUEUE);
        release();
    }

    @Override
    public String toString() {
        return "GetResponse(channel " + channel.number() + ", deliveryTag " + deliveryTag() + ", " + bodySize()
                + " bytes, " + messageCount + " left)";
    }
}
