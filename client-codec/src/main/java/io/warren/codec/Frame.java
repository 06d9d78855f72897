package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.ReferenceCounted;
import io.netty.util.internal.ObjectPool;

/**
 * One decoded AMQP frame: its type, channel and payload.
 *
 * <pre>
 * +------+---------+-------------+------------------+-----------+
 * | type | channel | size        | payload          | frame-end |
 * | 1    | 2       | 4           | size bytes       | 1: 0xCE   |
 * +------+---------+-------------+------------------+-----------+
 *  \____________ header (7) ___/  \_ payload() ____/
 * </pre>
 *
 * <p><b>Ownership.</b> Whoever receives a frame owns it and calls {@link #release()} once; that
 * releases the payload and returns this object to its pool, after which neither may be touched. To
 * keep only the payload (a body frame's bytes), call {@link #detachPayload()} instead: the caller then
 * owns the payload and the frame object goes back to its pool.
 *
 * <p>Frames are pooled with Netty's {@link ObjectPool}, so steady-state decoding allocates no
 * {@code Frame}. The reference count is the frame's own and is not thread-safe: a frame has one
 * owner at a time (the event loop that decoded it, or the thread it was handed to).
 */
public final class Frame implements ReferenceCounted {

    private static final ObjectPool<Frame> POOL = ObjectPool.newPool(Frame::new);

    private final ObjectPool.Handle<Frame> handle;
    private FrameType type;
    private int channel;
    private ByteBuf payload;
    private int refCnt;

    private Frame(ObjectPool.Handle<Frame> handle) {
        this.handle = handle;
    }

    /**
     * A frame from the pool holding {@code payload}, whose reference passes to the frame (it is released
     * by the frame's {@link #release()}).
     */
    public static Frame newInstance(FrameType type, int channel, ByteBuf payload) {
        if (type == null || payload == null) {
            throw new IllegalArgumentException("type and payload must not be null");
        }
        Frame frame = POOL.get();
        frame.type = type;
        frame.channel = channel;
        frame.payload = payload;
        frame.refCnt = 1;
        return frame;
    }

    /** The frame type. */
    public FrameType type() {
        return type;
    }

    /** The channel number, 0 for the connection itself. */
    public int channel() {
        return channel;
    }

    /**
     * The payload, a retained slice of the decoder's input (no copy) whose reader index is the first
     * payload byte. The frame owns it: do not release it separately.
     */
    public ByteBuf payload() {
        ByteBuf p = payload;
        if (p == null) {
            throw new IllegalReferenceCountException(0);
        }
        return p;
    }

    /**
     * Hands the payload over to the caller (who must release it) and recycles this frame; the frame
     * must not be used afterwards. Only valid while the caller is the frame's single owner.
     */
    public ByteBuf detachPayload() {
        if (refCnt != 1) {
            throw new IllegalReferenceCountException(refCnt);
        }
        ByteBuf p = payload;
        recycle();
        return p;
    }

    @Override
    public int refCnt() {
        return refCnt;
    }

    @Override
    public Frame retain() {
        return retain(1);
    }

    @Override
    public Frame retain(int increment) {
        if (refCnt <= 0) {
            throw new IllegalReferenceCountException(refCnt, increment);
        }
        refCnt += increment;
        return this;
    }

    @Override
    public Frame touch() {
        return touch(null);
    }

    @Override
    public Frame touch(Object hint) {
        if (payload != null) {
            payload.touch(hint);
        }
        return this;
    }

    @Override
    public boolean release() {
        return release(1);
    }

    @Override
    public boolean release(int decrement) {
        if (decrement <= 0 || refCnt < decrement) {
            throw new IllegalReferenceCountException(refCnt, -decrement);
        }
        refCnt -= decrement;
        if (refCnt > 0) {
            return false;
        }
        ByteBuf p = payload;
        recycle();
        p.release();
        return true;
    }

    private void recycle() {
        refCnt = 0;
        payload = null;
        type = null;
        channel = 0;
        handle.recycle(this);
    }

    @Override
    public String toString() {
        ByteBuf p = payload;
        return "Frame(" + type + ", channel " + channel + ", " + (p == null ? "released" : p.readableBytes() + " bytes")
                + ")";
    }
}
