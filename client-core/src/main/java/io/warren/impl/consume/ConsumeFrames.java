package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.warren.codec.Frames;
import io.warren.codec.base.FrameType;
import io.warren.codec.method.BasicCancelEncoder;
import io.warren.codec.method.BasicCancelOkEncoder;
import io.warren.codec.method.BasicConsumeEncoder;
import io.warren.codec.method.BasicQosEncoder;
import java.util.Map;

/**
 * The frames consuming sends. The synchronous ones (consume, cancel, qos) are built with the codec's
 * encoders into a new buffer the caller owns; any thread, and bad input (a tag over 255 bytes, an argument a
 * field table cannot carry) throws {@link IllegalArgumentException} before anything is allocated.
 *
 * <p>Settlements (ack, nack, reject) are appended by hand to a buffer the caller owns: they are the hot path
 * and all three are 21 bytes, so no encoder object is made per frame.
 * <pre>
 * +------+---------+------------+-------+--------+--------------+------+------+
 * | type | channel | size = 13  | class | method | delivery-tag | bits | 0xCE |
 * | 1    | 2       | 4          | 60    | 80/120/90 | 8         | 1    | 1    |
 * +------+---------+------------+-------+--------+--------------+------+------+
 * bits: ack multiple=1; nack multiple=1, requeue=2; reject requeue=1
 * </pre>
 */
final class ConsumeFrames {

    /** The size of one ack, nack or reject frame. */
    static final int SETTLEMENT_FRAME_SIZE = Frames.FRAME_OVERHEAD + 13;

    private static final int BASIC_CLASS = 60;
    private static final int ACK_METHOD = 80;
    private static final int REJECT_METHOD = 90;
    private static final int NACK_METHOD = 120;

    private ConsumeFrames() {}

    static ByteBuf basicConsume(
            ByteBufAllocator alloc,
            int channel,
            String queue,
            String consumerTag,
            boolean noAck,
            boolean exclusive,
            Map<String, ?> arguments) {
        return Frames.method(
                alloc,
                channel,
                new BasicConsumeEncoder()
                        .queue(queue)
                        .consumerTag(consumerTag)
                        .noAck(noAck)
                        .exclusive(exclusive)
                        .arguments(arguments));
    }

    static ByteBuf basicCancel(ByteBufAllocator alloc, int channel, String consumerTag) {
        return Frames.method(alloc, channel, new BasicCancelEncoder().consumerTag(consumerTag));
    }

    static ByteBuf basicCancelOk(ByteBufAllocator alloc, int channel, String consumerTag) {
        return Frames.method(alloc, channel, new BasicCancelOkEncoder().consumerTag(consumerTag));
    }

    static ByteBuf basicQos(ByteBufAllocator alloc, int channel, int prefetchCount) {
        return Frames.method(
                alloc,
                channel,
                new BasicQosEncoder()
                        .prefetchSize(0)
                        .prefetchCount(prefetchCount)
                        .global(false));
    }

    static void writeAck(ByteBuf out, int channel, long deliveryTag, boolean multiple) {
        writeSettlement(out, channel, ACK_METHOD, deliveryTag, multiple ? 1 : 0);
    }

    static void writeNack(ByteBuf out, int channel, long deliveryTag, boolean multiple, boolean requeue) {
        writeSettlement(out, channel, NACK_METHOD, deliveryTag, (multiple ? 1 : 0) | (requeue ? 2 : 0));
    }

    static void writeReject(ByteBuf out, int channel, long deliveryTag, boolean requeue) {
        writeSettlement(out, channel, REJECT_METHOD, deliveryTag, requeue ? 1 : 0);
    }

    private static void writeSettlement(ByteBuf out, int channel, int methodId, long deliveryTag, int bits) {
        out.ensureWritable(SETTLEMENT_FRAME_SIZE);
        out.writeByte(FrameType.METHOD.id());
        out.writeShort(channel);
        out.writeInt(13);
        out.writeShort(BASIC_CLASS);
        out.writeShort(methodId);
        out.writeLong(deliveryTag);
        out.writeByte(bits);
        out.writeByte(Frames.FRAME_END);
    }
}
