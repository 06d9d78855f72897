package io.warren.testing;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import java.util.ArrayList;
import java.util.List;

/**
 * For tests: coalesces the writes of one flush as SslHandler's queue does, appending each buffer into the previous
 * one when it fits in that one's spare capacity. A buffer written to a pipeline with such a handler must not share
 * memory past its writer index with another, or the appended bytes overwrite it. Each write's promise succeeds at
 * once; an appended buffer is released here, the others go on down the pipeline at the flush.
 */
public final class CoalescingHandler extends ChannelOutboundHandlerAdapter {
    private final List<ByteBuf> pending = new ArrayList<>();

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        pending.add((ByteBuf) msg);
        promise.trySuccess();
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        ByteBuf cumulation = null;
        for (ByteBuf b : pending) {
            if (cumulation != null && cumulation.maxWritableBytes() >= b.readableBytes()) {
                cumulation.writeBytes(b);
                b.release();
            } else {
                if (cumulation != null) {
                    ctx.write(cumulation);
                }
                cumulation = b;
            }
        }
        pending.clear();
        if (cumulation != null) {
            ctx.write(cumulation);
        }
        ctx.flush();
    }
}
