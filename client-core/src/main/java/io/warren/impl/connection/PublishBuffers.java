package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import io.netty.util.ResourceLeakTracker;
import io.netty.util.concurrent.EventExecutor;
import io.warren.codec.Frames;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The head and end-octet buffers of single-frame publishes ({@code PublishFrames}), kept for reuse by the
 * connection's event loop. One per connection; event loop only, except that a buffer released on another thread is
 * freed instead of kept.
 *
 * <p>Why not the pooled allocator: its buffer objects go back through Netty's {@code Recycler}, whose per-thread
 * batch holds 32 objects. A flush releases every head and tail written since the previous one at once (hundreds
 * under load), and what does not fit the batch goes through the recycler's MPSC queue, which links a new 32-slot
 * chunk for every 32 objects that pass: garbage for every buffer of every publish. Here a buffer released on the
 * loop goes onto an array stack and comes off it for the next publish: nothing is allocated once the stack holds
 * as many buffers as a connection has in flight (bounded by the write-buffer high-water mark).
 *
 * <p>Each buffer is tracked by Netty's leak detector like the allocator's own (sampled at its level; every take at
 * PARANOID), so a head Warren forgot to release is reported as any other buffer is.
 *
 * <p>Ownership: {@link #head} and {@link #endOctet} return a buffer the caller owns (refCnt 1); releasing it to zero
 * gives it back. A head has spare capacity past what a publish writes, private to it: a handler that coalesces
 * writes (SslHandler) may append the next buffer there, which copies it and touches no other message. The end octet
 * is full to its maximum capacity, so nothing can be appended to it.
 */
public final class PublishBuffers {

    /** Heads up to this size are kept: a publish with a short exchange and key and a few properties. */
    static final int HEAD_CAPACITY = 256;

    /** Buffers of each kind kept at most: above what a connection holds below its high-water mark. */
    private static final int MAX_KEPT = 4096;

    private static final ResourceLeakDetector<ByteBuf> LEAKS =
            ResourceLeakDetectorFactory.instance().newResourceLeakDetector(ByteBuf.class);

    private final EventExecutor loop;
    private final ByteBufAllocator alloc;

    // event loop only
    private final Kept heads = new Kept();
    private final Kept endOctets = new Kept();

    PublishBuffers(EventExecutor loop, ByteBufAllocator alloc) {
        this.loop = loop;
        this.alloc = alloc;
    }

    /** The connection's allocator: heads too large to keep, multi-frame publishes. */
    public ByteBufAllocator alloc() {
        return alloc;
    }

    /**
     * An empty buffer for a head of {@code length} bytes; the caller owns it. A kept one when the length fits
     * {@link #HEAD_CAPACITY}, else one of exactly {@code length} from the allocator.
     */
    public ByteBuf head(int length) {
        if (length > HEAD_CAPACITY) {
            return alloc.buffer(length, length);
        }
        Reusable b = heads.pop();
        return (b == null ? new Reusable(this, false) : b).take();
    }

    /** A buffer holding the one end octet (0xCE) of a frame, readable; the caller owns it. */
    ByteBuf endOctet() {
        Reusable b = endOctets.pop();
        return (b == null ? new Reusable(this, true) : b).take();
    }

    /** End-octet buffers kept for reuse, for tests. Event loop. */
    int keptEndOctets() {
        return endOctets.count;
    }

    /** Slots of the two stacks of kept buffers together, for tests. Event loop. */
    int keptCapacity() {
        return heads.capacity() + endOctets.capacity();
    }

    /** Keeps {@code b} released to zero on the loop; false when it must be freed (another thread, stack full). */
    private boolean keep(Reusable b) {
        return loop.inEventLoop() && (b.endOctet ? endOctets : heads).push(b);
    }

    /**
     * A stack of released buffers of one kind, at most {@link #MAX_KEPT}. Event loop only. It grows with the
     * publishes a connection has had in flight at once, so a connection that never publishes keeps no array at all
     * (two arrays of {@code MAX_KEPT} were 32 KiB on every idle connection).
     */
    private static final class Kept {
        private static final Reusable[] NONE = new Reusable[0];
        private static final int FIRST_CAPACITY = 16;

        private Reusable[] items = NONE;
        private int count;

        Reusable pop() {
            if (count == 0) {
                return null;
            }
            Reusable b = items[--count];
            items[count] = null;
            return b;
        }

        boolean push(Reusable b) {
            if (count == items.length) {
                if (count == MAX_KEPT) {
                    return false;
                }
                items = Arrays.copyOf(items, Math.min(Math.max(FIRST_CAPACITY, count * 2), MAX_KEPT));
            }
            items[count++] = b;
            return true;
        }

        int capacity() {
            return items.length;
        }
    }

    /** A direct buffer that goes back to its pool, instead of being freed, when released to zero. */
    private static final class Reusable extends UnpooledDirectByteBuf {
        private final PublishBuffers pool;
        private final boolean endOctet;
        private ResourceLeakTracker<ByteBuf> leak;

        Reusable(PublishBuffers pool, boolean endOctet) {
            // The JDK's own direct buffer, freed by the garbage collector: the kept buffers of a connection that is
            // gone need no explicit free (Netty's buffer only drops its reference to it on deallocate).
            super(pool.alloc, ByteBuffer.allocateDirect(endOctet ? 1 : HEAD_CAPACITY), endOctet ? 1 : HEAD_CAPACITY);
            this.pool = pool;
            this.endOctet = endOctet;
            // a wrapped buffer starts readable to its end: a head starts empty, an end octet holds its byte
            if (endOctet) {
                setByte(0, Frames.FRAME_END);
            }
            setIndex(0, endOctet ? 1 : 0);
        }

        /** Out of the pool: refCnt 1 (set when it was kept or created), tracked for leaks. */
        Reusable take() {
            leak = LEAKS.track(this);
            return this;
        }

        @Override
        protected void deallocate() {
            ResourceLeakTracker<ByteBuf> l = leak;
            leak = null;
            if (l != null) {
                l.close(this);
            }
            if (pool.keep(this)) {
                resetRefCnt();
                // an end octet keeps its byte: nothing can write into a buffer full to its maximum capacity
                setIndex(0, endOctet ? 1 : 0);
                return;
            }
            super.deallocate();
        }
    }
}
