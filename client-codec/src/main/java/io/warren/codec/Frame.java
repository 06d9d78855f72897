package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.ReferenceCounted;
import io.warren.codec.base.FrameType;

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
 * <p>The frames a {@link FrameDecoder} emits come from its own {@link Pool} and go back to it when
 * released on the decoder's event loop, so steady-state decoding allocates no {@code Frame}; a frame
 * released on another thread is left to the garbage collector. The reference count is the frame's own
 * and is not thread-safe: a frame has one owner at a time (the event loop that decoded it, or the
 * thread it was handed to).
 */
public final class Frame implements ReferenceCounted {

    /** The pool this frame returns to, or null for a frame made by {@link #newInstance}. */
    private final Pool pool;

    private FrameType type;
    private int channel;
    private ByteBuf payload;
    private int refCnt;

    private Frame(Pool pool) {
        this.pool = pool;
    }

    /**
     * A new frame holding {@code payload}, whose reference passes to the frame (it is released by the
     * frame's {@link #release()}). Not pooled: for tests and peers; the decoder uses its {@link Pool}.
     */
    public static Frame newInstance(FrameType type, int channel, ByteBuf payload) {
        if (type == null || payload == null) {
            throw new IllegalArgumentException("type and payload must not be null");
        }
        return new Frame(null).init(type, channel, payload);
    }

    private Frame init(FrameType type, int channel, ByteBuf payload) {
        this.type = type;
        this.channel = channel;
        this.payload = payload;
        this.refCnt = 1;
        return this;
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
        Pool p = pool;
        if (p != null) {
            p.put(this);
        }
    }

    @Override
    public String toString() {
        ByteBuf p = payload;
        return "Frame(" + type + ", channel " + channel + ", " + (p == null ? "released" : p.readableBytes() + " bytes")
                + ")";
    }

    /**
     * The frames of one decoder: a bounded free list used by the thread that made it (the decoder's event
     * loop) and by no other, so taking and returning a frame is an array access, with none of the atomic
     * state changes and thread-local look-ups a general-purpose recycler pays on every call. A frame
     * released on another thread, or when the list is full, is not returned: it is garbage.
     */
    static final class Pool {

        /** Frames kept for reuse: the decoder passes each frame on as it is decoded, so few are alive at once. */
        static final int CAPACITY = 64;

        private final Thread owner;
        // owner thread only
        private final Frame[] free = new Frame[CAPACITY];
        private int size;

        /** A pool for the calling thread. */
        Pool() {
            this.owner = Thread.currentThread();
        }

        /** Whether the calling thread may take from this pool. */
        boolean isOwner() {
            return owner == Thread.currentThread();
        }

        /** A frame holding {@code payload} (whose reference passes to it), reused when one is free. Owner only. */
        Frame get(FrameType type, int channel, ByteBuf payload) {
            int n = size;
            Frame frame;
            if (n == 0) {
                frame = new Frame(this);
            } else {
                size = --n;
                frame = free[n];
                free[n] = null;
            }
            return frame.init(type, channel, payload);
        }

        /** Takes back a released frame when called on the owner thread and there is room. */
        void put(Frame frame) {
            if (owner != Thread.currentThread()) {
                return;
            }
            int n = size;
            if (n < CAPACITY) {
                free[n] = frame;
                size = n + 1;
            }
        }

        /** Frames waiting for reuse, for tests. */
        int size() {
            return size;
        }
    }
}
