package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.warren.impl.metrics.MetricsCollector;

/**
 * Counts the AMQP bytes a connection reads and writes, between TLS and the frame decoder. In the pipeline only
 * when the client counts ({@link MetricsCollector#counts()}): a client without metrics does not pay for it.
 * Touches no buffer's indexes or reference count. A publishing thread's own write to the socket passes it by and is
 * counted through {@link #wroteDirect}.
 */
public final class ByteCounter extends ChannelDuplexHandler {

    private final MetricsCollector metrics;

    public ByteCounter(MetricsCollector metrics) {
        this.metrics = metrics;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        metrics.readBytes(size(msg));
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        // Counted when handed to the socket's outbound buffer: what was written or is about to be.
        metrics.wroteBytes(size(msg));
        ctx.write(msg, promise);
    }

    /**
     * Bytes a publishing thread wrote to the socket itself, past the pipeline ({@link OutboundPath#writeDirect}).
     * Any thread.
     */
    void wroteDirect(long bytes) {
        metrics.wroteBytes(bytes);
    }

    private static long size(Object msg) {
        if (msg instanceof ByteBuf b) {
            return b.readableBytes();
        }
        if (msg instanceof ByteBufHolder h) {
            return h.content().readableBytes();
        }
        return 0;
    }
}
