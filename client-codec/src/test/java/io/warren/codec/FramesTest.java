package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.AsciiString;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.AsciiStringCache;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.method.ChannelOpenEncoder;
import org.junit.jupiter.api.Test;

class FramesTest {

    @Test
    void heartbeatFrame() {
        ByteBuf hb = Frames.heartbeat(PooledByteBufAllocator.DEFAULT);
        assertArrayEquals(new byte[] {8, 0, 0, 0, 0, 0, 0, (byte) 0xCE}, ByteBufUtil.getBytes(hb));
        hb.release();
    }

    @Test
    void methodFrameIsExactlySized() {
        ByteBuf frame = Frames.method(PooledByteBufAllocator.DEFAULT, 258, new ChannelOpenEncoder());
        assertArrayEquals(new byte[] {1, 1, 2, 0, 0, 0, 5, 0, 20, 0, 10, 0, (byte) 0xCE}, ByteBufUtil.getBytes(frame));
        assertEquals(frame.readableBytes(), frame.capacity());
        assertEquals(13, Frames.methodFrameLength(new ChannelOpenEncoder()));
        frame.release();
    }

    @Test
    void protocolHeader() {
        ByteBuf header = ProtocolHeader.encode(PooledByteBufAllocator.DEFAULT);
        assertArrayEquals(new byte[] {'A', 'M', 'Q', 'P', 0, 0, 9, 1}, ByteBufUtil.getBytes(header));
        assertArrayEquals(ProtocolHeader.bytes(), ByteBufUtil.getBytes(header));
        header.release();
    }

    @Test
    void shortStringCacheReturnsTheSameInstanceForTheSameBytes() {
        ByteBuf a = Unpooled.buffer().writeByte(9).writeBytes("amq.topic".getBytes());
        ByteBuf b = Unpooled.directBuffer().writeByte(0).writeByte(9).writeBytes("amq.topic".getBytes());
        ByteBuf c = Unpooled.buffer().writeByte(9).writeBytes("amq.other".getBytes());
        AsciiString first = AsciiStringCache.shortString(a, 0);
        assertSame(first, AsciiStringCache.shortString(b, 1));
        assertEquals("amq.topic", first.toString());
        assertNotSame(first, AsciiStringCache.shortString(c, 0));
        assertEquals("amq.other", AsciiStringCache.shortString(c, 0).toString());
        assertSame(AsciiString.EMPTY_STRING, AsciiStringCache.get(a, 0, 0));
        a.release();
        b.release();
        c.release();
    }

    @Test
    void exceptionMessagesNameWhatIsKnown() {
        AmqpProtocolException e =
                new AmqpProtocolException(ReplyCode.SYNTAX_ERROR, "bad", FrameType.METHOD, 3, 50, 10, 12);
        assertEquals(
                "502 SYNTAX_ERROR: bad (METHOD frame, channel 3, queue.declare (50/10), offset 12)", e.getMessage());
        assertEquals(
                "501 FRAME_ERROR: worse", new AmqpProtocolException(501, "worse", null, -1, -1, -1, -1).getMessage());
    }
}
