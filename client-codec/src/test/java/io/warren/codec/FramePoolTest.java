package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.base.FrameType;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Decoded frames come back to their decoder's pool when released on its thread, and only then. */
class FramePoolTest {

    private static ByteBuf heartbeats(int n) {
        ByteBuf all = Unpooled.buffer();
        for (int i = 0; i < n; i++) {
            ByteBuf hb = Frames.heartbeat(UnpooledByteBufAllocator.DEFAULT);
            all.writeBytes(hb);
            hb.release();
        }
        return all;
    }

    @Test
    void aReleasedFrameIsReusedByTheNextDecode() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(heartbeats(1));
        Frame first = channel.readInbound();
        first.release();
        channel.writeInbound(heartbeats(1));
        Frame second = channel.readInbound();
        assertSame(first, second);
        assertEquals(FrameType.HEARTBEAT, second.type());
        assertEquals(1, second.refCnt());
        second.release();
        assertFalse(channel.finish());
    }

    @Test
    void aFrameReleasedOnAnotherThreadIsNotReturned() throws Exception {
        Frame.Pool pool = new Frame.Pool();
        Frame frame = pool.get(FrameType.BODY, 1, Unpooled.buffer(1).writeByte(1));
        Thread other = new Thread(frame::release);
        other.start();
        other.join();
        assertEquals(0, frame.refCnt());
        assertEquals(0, pool.size());
        Frame next = pool.get(FrameType.BODY, 1, Unpooled.buffer(1).writeByte(2));
        assertNotSame(frame, next);
        next.release();
        assertEquals(1, pool.size());
    }

    @Test
    void thePoolKeepsAtMostItsCapacity() {
        Frame.Pool pool = new Frame.Pool();
        Frame[] frames = new Frame[Frame.Pool.CAPACITY + 10];
        for (int i = 0; i < frames.length; i++) {
            frames[i] = pool.get(FrameType.HEARTBEAT, 0, Unpooled.EMPTY_BUFFER);
        }
        for (Frame f : frames) {
            f.release();
        }
        assertEquals(Frame.Pool.CAPACITY, pool.size());
    }

    @Test
    void aLargeReadIsPassedOnInBatchesSoFramesAreReusedWithinIt() {
        int[] distinct = new int[1];
        Set<Frame> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(), new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (seen.add((Frame) msg)) {
                    distinct[0]++;
                }
                ((Frame) msg).release();
            }
        });
        channel.writeInbound(heartbeats(1000));
        // released as they arrive, a thousand frames of one read need no more objects than one batch
        assertTrue(distinct[0] <= 16, distinct[0] + " frame objects for 1000 frames");
        assertFalse(channel.finish());
    }
}
