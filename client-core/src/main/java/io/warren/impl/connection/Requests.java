package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import io.warren.codec.Frames;
import io.warren.codec.base.Utf8;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicGetEncoder;
import io.warren.codec.method.BasicNackEncoder;
import io.warren.codec.method.BasicQosEncoder;
import io.warren.codec.method.BasicRecoverEncoder;
import io.warren.codec.method.BasicRejectEncoder;
import io.warren.codec.method.ChannelCloseEncoder;
import io.warren.codec.method.ChannelCloseOkEncoder;
import io.warren.codec.method.ChannelFlowOkEncoder;
import io.warren.codec.method.ChannelOpenEncoder;
import io.warren.codec.method.ConfirmSelectEncoder;
import io.warren.codec.method.ConnectionCloseEncoder;
import io.warren.codec.method.ConnectionCloseOkEncoder;
import io.warren.codec.method.ExchangeBindEncoder;
import io.warren.codec.method.ExchangeDeclareEncoder;
import io.warren.codec.method.ExchangeDeleteEncoder;
import io.warren.codec.method.ExchangeUnbindEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.QueueBindEncoder;
import io.warren.codec.method.QueueDeclareEncoder;
import io.warren.codec.method.QueueDeleteEncoder;
import io.warren.codec.method.QueuePurgeEncoder;
import io.warren.codec.method.QueueUnbindEncoder;
import io.warren.codec.method.TxCommitEncoder;
import io.warren.codec.method.TxRollbackEncoder;
import io.warren.codec.method.TxSelectEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Whole method frames for the requests client-core sends, built with the codec's encoders. Any thread:
 * each call uses its own encoder. The encoders validate as they are set (null or over-255-byte names, table
 * values the wire cannot carry) and throw {@link IllegalArgumentException} before any buffer is allocated.
 * Every method returns a new buffer the caller owns.
 */
public final class Requests {

    private Requests() {}

    /**
     * {@code frame}, a method frame the caller built, when it fits {@code frameMax} (0: no limit); else it is released
     * and refused: RabbitMQ closes the whole connection (501 FRAME_ERROR) over a frame larger than frame-max, and
     * only arguments (field tables) make a method frame that large.
     *
     * @throws IllegalArgumentException when it does not fit; {@code frame} is released then
     */
    public static ByteBuf checkFits(ByteBuf frame, int frameMax, int channel) {
        if (frameMax != 0 && frame.readableBytes() > frameMax) {
            int length = frame.readableBytes();
            int method = frame.getInt(frame.readerIndex() + 7); // after type, channel and size
            frame.release();
            throw new IllegalArgumentException("channel " + channel + ": " + MethodNames.describe(method)
                    + " makes a frame of " + length + " bytes, over the connection's frame-max of " + frameMax
                    + " (its arguments are too large; the broker would close the connection)");
        }
        return frame;
    }

    static ByteBuf frame(ByteBufAllocator alloc, int channel, MethodEncoder encoder) {
        return Frames.method(alloc, channel, encoder);
    }

    public static ByteBuf channelOpen(ByteBufAllocator alloc, int channel) {
        return frame(alloc, channel, new ChannelOpenEncoder());
    }

    public static ByteBuf channelClose(ByteBufAllocator alloc, int channel, int replyCode, String replyText) {
        return frame(
                alloc, channel, new ChannelCloseEncoder().replyCode(replyCode).replyText(truncate(replyText)));
    }

    public static ByteBuf channelCloseOk(ByteBufAllocator alloc, int channel) {
        return frame(alloc, channel, new ChannelCloseOkEncoder());
    }

    public static ByteBuf channelFlowOk(ByteBufAllocator alloc, int channel, boolean active) {
        return frame(alloc, channel, new ChannelFlowOkEncoder().active(active));
    }

    static ByteBuf connectionClose(ByteBufAllocator alloc, int replyCode, String replyText, int classId, int methodId) {
        return frame(
                alloc,
                0,
                new ConnectionCloseEncoder()
                        .replyCode(replyCode)
                        .replyText(truncate(replyText))
                        .classId(classId)
                        .methodId(methodId));
    }

    static ByteBuf connectionCloseOk(ByteBufAllocator alloc) {
        return frame(alloc, 0, new ConnectionCloseOkEncoder());
    }

    public static ByteBuf exchangeDeclare(ByteBufAllocator alloc, int channel, ExchangeSpec d) {
        return frame(
                alloc,
                channel,
                new ExchangeDeclareEncoder()
                        .exchange(d.exchange())
                        .type(d.type())
                        .passive(d.passive())
                        .durable(d.durable())
                        .autoDelete(d.autoDelete())
                        .internal(d.internal())
                        .nowait(d.noWait())
                        .arguments(d.arguments()));
    }

    public static ByteBuf exchangeDelete(
            ByteBufAllocator alloc, int channel, String exchange, boolean ifUnused, boolean noWait) {
        return frame(
                alloc,
                channel,
                new ExchangeDeleteEncoder()
                        .exchange(exchange)
                        .ifUnused(ifUnused)
                        .nowait(noWait));
    }

    public static ByteBuf exchangeBind(
            ByteBufAllocator alloc,
            int channel,
            boolean bind,
            String destination,
            String source,
            String routingKey,
            Map<String, ?> arguments,
            boolean noWait) {
        MethodEncoder encoder = bind
                ? new ExchangeBindEncoder()
                        .destination(destination)
                        .source(source)
                        .routingKey(routingKey)
                        .arguments(arguments)
                        .nowait(noWait)
                : new ExchangeUnbindEncoder()
                        .destination(destination)
                        .source(source)
                        .routingKey(routingKey)
                        .arguments(arguments)
                        .nowait(noWait);
        return frame(alloc, channel, encoder);
    }

    public static ByteBuf queueDeclare(ByteBufAllocator alloc, int channel, QueueSpec d) {
        return frame(
                alloc,
                channel,
                new QueueDeclareEncoder()
                        .queue(d.queue())
                        .passive(d.passive())
                        .durable(d.durable())
                        .exclusive(d.exclusive())
                        .autoDelete(d.autoDelete())
                        .nowait(d.noWait())
                        .arguments(d.arguments()));
    }

    public static ByteBuf queueBind(
            ByteBufAllocator alloc,
            int channel,
            String queue,
            String exchange,
            String routingKey,
            Map<String, ?> arguments,
            boolean noWait) {
        return frame(
                alloc,
                channel,
                new QueueBindEncoder()
                        .queue(queue)
                        .exchange(exchange)
                        .routingKey(routingKey)
                        .arguments(arguments)
                        .nowait(noWait));
    }

    public static ByteBuf queueUnbind(
            ByteBufAllocator alloc,
            int channel,
            String queue,
            String exchange,
            String routingKey,
            Map<String, ?> arguments) {
        return frame(
                alloc,
                channel,
                new QueueUnbindEncoder()
                        .queue(queue)
                        .exchange(exchange)
                        .routingKey(routingKey)
                        .arguments(arguments));
    }

    public static ByteBuf queuePurge(ByteBufAllocator alloc, int channel, String queue, boolean noWait) {
        return frame(alloc, channel, new QueuePurgeEncoder().queue(queue).nowait(noWait));
    }

    public static ByteBuf queueDelete(
            ByteBufAllocator alloc, int channel, String queue, boolean ifUnused, boolean ifEmpty, boolean noWait) {
        return frame(
                alloc,
                channel,
                new QueueDeleteEncoder()
                        .queue(queue)
                        .ifUnused(ifUnused)
                        .ifEmpty(ifEmpty)
                        .nowait(noWait));
    }

    public static ByteBuf basicQos(
            ByteBufAllocator alloc, int channel, long prefetchSize, int prefetchCount, boolean global) {
        return frame(
                alloc,
                channel,
                new BasicQosEncoder()
                        .prefetchSize(prefetchSize)
                        .prefetchCount(prefetchCount)
                        .global(global));
    }

    public static ByteBuf basicGet(ByteBufAllocator alloc, int channel, String queue, boolean autoAck) {
        return frame(alloc, channel, new BasicGetEncoder().queue(queue).noAck(autoAck));
    }

    static ByteBuf basicAck(ByteBufAllocator alloc, int channel, long deliveryTag, boolean multiple) {
        return frame(
                alloc, channel, new BasicAckEncoder().deliveryTag(deliveryTag).multiple(multiple));
    }

    static ByteBuf basicNack(ByteBufAllocator alloc, int channel, long deliveryTag, boolean multiple, boolean requeue) {
        return frame(
                alloc,
                channel,
                new BasicNackEncoder()
                        .deliveryTag(deliveryTag)
                        .multiple(multiple)
                        .requeue(requeue));
    }

    static ByteBuf basicReject(ByteBufAllocator alloc, int channel, long deliveryTag, boolean requeue) {
        return frame(
                alloc,
                channel,
                new BasicRejectEncoder().deliveryTag(deliveryTag).requeue(requeue));
    }

    public static ByteBuf basicRecover(ByteBufAllocator alloc, int channel, boolean requeue) {
        return frame(alloc, channel, new BasicRecoverEncoder().requeue(requeue));
    }

    public static ByteBuf txSelect(ByteBufAllocator alloc, int channel) {
        return frame(alloc, channel, new TxSelectEncoder());
    }

    public static ByteBuf txCommit(ByteBufAllocator alloc, int channel) {
        return frame(alloc, channel, new TxCommitEncoder());
    }

    public static ByteBuf txRollback(ByteBufAllocator alloc, int channel) {
        return frame(alloc, channel, new TxRollbackEncoder());
    }

    public static ByteBuf confirmSelect(ByteBufAllocator alloc, int channel, boolean noWait) {
        return frame(alloc, channel, new ConfirmSelectEncoder().nowait(noWait));
    }

    /**
     * A reply text is a short string: an over-long one is cut, and an unpaired surrogate (an exception's message may
     * quote anything) written as {@code '?'}, rather than failing a close.
     */
    static String truncate(String text) {
        if (text == null) {
            return "";
        }
        try {
            Utf8.encodedLength("replyText", text);
        } catch (IllegalArgumentException e) {
            text = new String(text.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8); // '?' for each
        }
        if (text.length() <= 85) {
            return text; // at most 3 UTF-8 bytes per char: 255 bytes
        }
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        if (bytes.length <= 255) {
            return text;
        }
        int end = 255;
        while (end > 0 && (bytes[end] & 0xC0) == 0x80) {
            end--; // do not cut a character in two
        }
        return new String(bytes, 0, end, StandardCharsets.UTF_8);
    }
}
