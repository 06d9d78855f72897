package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import io.netty.util.ResourceLeakTracker;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.internal.PlatformDependent;
import io.warren.codec.Frames;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

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
 * <p>What a burst left behind does not stay for the connection's life: a trim every {@link #TRIM_INTERVAL_NANOS}
 * while more than {@link #TRIM_FLOOR} of a kind are kept frees the ones no publish took since the previous trim (the
 * fewest the stack held meanwhile), above that floor, at most {@link #MAX_FREED_PER_TRIM} of a kind at a time. A
 * burst of 4,096 publishes in flight otherwise left 4,096 heads
 * of 256 bytes, 1 MiB of direct memory and their objects, on a connection that went back to a trickle.
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

    /** How often kept buffers that went unused are freed, while more than {@link #TRIM_FLOOR} are kept. */
    static final long TRIM_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

    /** Buffers of each kind a trim leaves however long they went unused: a paced publisher's few in flight. */
    static final int TRIM_FLOOR = 16;

    /**
     * Buffers of each kind one trim frees at most: each free is a call into the JDK's cleaner, and the loop serves
     * other connections meanwhile; a larger surplus goes over the next intervals.
     */
    static final int MAX_FREED_PER_TRIM = 256;

    private static final ResourceLeakDetector<ByteBuf> LEAKS =
            ResourceLeakDetectorFactory.instance().newResourceLeakDetector(ByteBuf.class);

    private final EventExecutor loop;
    private final ByteBufAllocator alloc;
    private final long trimIntervalNanos;
    private final Runnable trimTask = this::trim;

    // event loop only
    private final Kept heads = new Kept();
    private final Kept endOctets = new Kept();
    private boolean trimScheduled;

    PublishBuffers(EventExecutor loop, ByteBufAllocator alloc) {
        this(loop, alloc, TRIM_INTERVAL_NANOS);
    }

    /** Buffers whose unused ones are freed every {@code trimIntervalNanos} (tests choose it). */
    PublishBuffers(EventExecutor loop, ByteBufAllocator alloc, long trimIntervalNanos) {
        this.loop = loop;
        this.alloc = alloc;
        this.trimIntervalNanos = trimIntervalNanos;
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

    /** Heads kept for reuse, for tests. Event loop. */
    int keptHeads() {
        return heads.count;
    }

    /** Slots of the two stacks of kept buffers together, for tests. Event loop. */
    int keptCapacity() {
        return heads.capacity() + endOctets.capacity();
    }

    /** Keeps {@code b} released to zero on the loop; false when it must be freed (another thread, stack full). */
    private boolean keep(Reusable b) {
        if (!loop.inEventLoop()) {
            return false;
        }
        Kept stack = b.endOctet ? endOctets : heads;
        if (!stack.push(b)) {
            return false;
        }
        if (stack.count > TRIM_FLOOR && !trimScheduled) {
            scheduleTrim();
        }
        return true;
    }

    private void scheduleTrim() {
        trimScheduled = true;
        try {
            loop.schedule(trimTask, trimIntervalNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException shuttingDown) {
            // the loop is going, and the connection with it: its kept buffers go with them
        }
    }

    /** Frees what went unused since the last trim; again later while more than the floor is kept. Event loop. */
    private void trim() {
        trimScheduled = false;
        boolean more = heads.trim() | endOctets.trim();
        if (more) {
            scheduleTrim();
        }
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
        /** The fewest buffers kept since the last trim: the ones below it went unused all along. */
        private int low;

        Reusable pop() {
            if (count == 0) {
                return null;
            }
            Reusable b = items[--count];
            items[count] = null;
            if (count < low) {
                low = count;
            }
            return b;
        }

        /**
         * Frees the buffers at the bottom of the stack that no publish took since the last trim, down to
         * {@link #TRIM_FLOOR}, and gives back the slots it no longer needs. Returns whether more than the floor is
         * still kept.
         */
        boolean trim() {
            int free = Math.min(Math.min(low, count - TRIM_FLOOR), MAX_FREED_PER_TRIM);
            if (free > 0) {
                for (int i = 0; i < free; i++) {
                    items[i].free();
                }
                count -= free;
                int capacity = Math.max(FIRST_CAPACITY, count);
                if (capacity < items.length / 2) {
                    items = Arrays.copyOfRange(items, free, free + capacity);
                } else {
                    System.arraycopy(items, free, items, 0, count);
                    Arrays.fill(items, count, count + free, null);
                }
            }
            // what went unused and is not freed yet (beyond the cap) stays unused: the next trim frees it unless a
            // publish takes it meanwhile
            low = free > 0 && low > free ? low - free : count;
            return count > TRIM_FLOOR;
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
        /**
         * Whether Netty can free a buffer the JDK allocated: from Java 25 its cleaner refuses "arbitrary" ones
         * (UnsupportedOperationException); tried once, on a byte.
         */
        private static final boolean FREES_JDK_BUFFERS = freesJdkBuffers();

        private static boolean freesJdkBuffers() {
            try {
                PlatformDependent.freeDirectBuffer(ByteBuffer.allocateDirect(1));
                return true;
            } catch (RuntimeException | LinkageError refused) {
                return false;
            }
        }

        private final PublishBuffers pool;
        private final boolean endOctet;
        private final ByteBuffer memory;
        private ResourceLeakTracker<ByteBuf> leak;
        /** On its stack: a release now is one too many (its count was set back to 1 when it was kept). Loop only. */
        private boolean kept;

        Reusable(PublishBuffers pool, boolean endOctet) {
            this(pool, endOctet, ByteBuffer.allocateDirect(endOctet ? 1 : HEAD_CAPACITY));
        }

        private Reusable(PublishBuffers pool, boolean endOctet, ByteBuffer memory) {
            // The JDK's own direct buffer, freed by the garbage collector: the kept buffers of a connection that is
            // gone need no explicit free (Netty's buffer only drops its reference to it on deallocate).
            super(pool.alloc, memory, memory.capacity());
            this.pool = pool;
            this.endOctet = endOctet;
            this.memory = memory;
            // a wrapped buffer starts readable to its end: a head starts empty, an end octet holds its byte
            if (endOctet) {
                setByte(0, Frames.FRAME_END);
            }
            setIndex(0, endOctet ? 1 : 0);
        }

        /**
         * Frees the memory of a kept buffer a trim drops, now rather than at a garbage collection that a connection
         * making no garbage may not see for long, where the runtime lets a JDK buffer be freed; else the collector
         * frees it once the trim has dropped it. Only for a kept one: nobody holds it.
         */
        void free() {
            if (FREES_JDK_BUFFERS) {
                PlatformDependent.freeDirectBuffer(memory);
            }
        }

        /** Out of the pool: refCnt 1 (set when it was kept or created), tracked for leaks. */
        Reusable take() {
            kept = false;
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
            if (kept) {
                // released once more than taken: keeping it twice would hand one buffer to two publishes, and a trim
                // could free the memory of one while the other writes it. It stays kept once, as it was.
                resetRefCnt();
                throw new IllegalReferenceCountException(0, -1);
            }
            if (pool.keep(this)) {
                kept = true;
                resetRefCnt();
                // an end octet keeps its byte: nothing can write into a buffer full to its maximum capacity
                setIndex(0, endOctet ? 1 : 0);
                return;
            }
            super.deallocate();
        }
    }
}
