package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.concurrent.FastThreadLocalThread;

/**
 * The allocator of every Warren connection: pooled allocators (whose slices are recycled) of Warren's own, with
 * differences from Netty's default one that keep direct memory to what the event loops need.
 *
 * <ul>
 *   <li>{@link #isDirectBufferPooled()} says false, so that Netty's NIO channel passes a heap buffer (a body the
 *       application published as a {@code byte[]}) to the socket as it is. Told the pool is there, the channel copies
 *       each heap buffer into a new pooled direct buffer at {@code write()} and keeps the copy until the socket takes
 *       it: a 1 MiB body was 1 MiB of the pool per message in flight. Passed on, {@link DirectNioSocketChannel}
 *       copies one of 16 KiB or more (and, once a burst has staged, any that follows in it) as the socket takes
 *       it, through a staging buffer from this allocator ({@link #stagingBuffer}), each byte once, and leaves a
 *       smaller one to the JDK's copy at the write, as Netty does (a publishing thread that writes a body below
 *       16 KiB itself hands its heap buffer to the JDK, which copies it into that thread's temporary direct buffer,
 *       as a blocking client writing a {@code byte[]} does). The native
 *       transports copy through this allocator either way.
 *   <li>{@link #buffer} on a thread that is not one of Netty's (a {@link FastThreadLocalThread}, or a thread run with
 *       fast thread-locals as a client's loop on a plain thread is: event loops) returns an
 *       unpooled heap buffer. Those are the rare frames an application thread encodes (an RPC such as
 *       exchange.declare): from the pool, the thread's first one would bind it to an arena and a chunk of its own.
 *       The frame is copied at the socket write like any heap buffer.
 *   <li>Two pools, told apart by the size asked for. An arena takes memory a chunk at a time, so its chunk size is
 *       the least direct memory an event loop holds once it has read a byte. Buffers of up to {@value #SMALL_MAX}
 *       bytes (the reads of a connection that publishes or idles, method frames, heads, acks) and the staging buffer
 *       of a moderate stream of heap bodies come from chunks of {@value #SMALL_CHUNK_SIZE} bytes; larger ones (the
 *       reads of a busy consumer, up to 64 KiB, a frame cumulation at frame-max, the staging buffer of a heavy
 *       stream) from chunks of {@value #CHUNK_SIZE} bytes. With one pool of 1 MiB chunks, a connection publishing
 *       64 KiB bodies from one thread held 1.1 MB of direct memory against amqp-client's 0.08 MB; with one of
 *       128 KiB chunks a frame cumulation at RabbitMQ's frame-max (128 KiB and its header) no longer fit a chunk, and
 *       consuming 1 MiB bodies ran at 0.63x. A buffer is never moved between the pools: one that grows past its
 *       chunk (a cumulation that started as a frame's 8-byte head) is allocated outside the pool, as Netty does for
 *       any allocation larger than a chunk. Composite buffers are the large pool's, as Netty's allocators make them
 *       (their components are frame slices). The small pool's pages are 4 KiB; the large pool's pages and both pools'
 *       caches are Netty's defaults. No heap arenas: heap buffers are unpooled.
 * </ul>
 *
 * Reads ({@link #ioBuffer}) and explicit {@link #directBuffer}s come from the pools.
 */
public final class ConnectionAllocator implements ByteBufAllocator, ByteBufAllocatorMetricProvider {

    /**
     * The large pool's chunk size, in Netty's default 8 KiB pages. Netty frees a chunk the moment it empties once it
     * has been a quarter full: a consumer of 1 MiB bodies (64 KiB reads and 128 KiB frame cumulations in flight,
     * 1.3 MiB on average) made and freed 293 chunks of 1 MiB in 5.5 s, each a zeroed direct buffer and some 25 KB of
     * the pool's bookkeeping on the heap (4.4 KB per message against 1.2 KB); with 2 MiB, one chunk served it all.
     */
    static final int CHUNK_SIZE = 2 << 20;

    /**
     * The small pool's chunk size, in 4 KiB pages: a size class of small buffers takes a page of its own, and the
     * loop's few classes fit one chunk beside a staging buffer of {@value #SMALL_STAGING_MAX} bytes.
     */
    static final int SMALL_CHUNK_SIZE = 128 << 10;

    /** The most bytes asked for that the small pool serves (a read buffer's first guess is 2 KiB). */
    static final int SMALL_MAX = 8 << 10;

    /** The largest staging buffer the small pool serves: a 64 KiB body and its frames. */
    static final int SMALL_STAGING_MAX = 72 << 10;

    public static final ConnectionAllocator INSTANCE = new ConnectionAllocator(
            directPool(SMALL_CHUNK_SIZE, 4096), directPool(CHUNK_SIZE, PooledByteBufAllocator.defaultPageSize()));

    /** The anchor's size: Netty's smallest size class, one page of the chunk. */
    private static final int ANCHOR_SIZE = 16;

    private final PooledByteBufAllocator small;
    private final PooledByteBufAllocator large;
    private final ByteBufAllocatorMetric metric;

    /**
     * Per event loop that uses the large pool, a buffer of {@value #ANCHOR_SIZE} bytes from it, kept until the loop's
     * thread ends: it keeps the loop's first large chunk from being freed. Netty frees a chunk the moment its last
     * buffer goes back once it has been a quarter full, and a loop that writes heavy streams of heap bodies took its
     * staging buffer (512 KiB then) at every burst and gave it back when the burst was written: 16 threads' 1 MiB
     * bodies made and freed 3,770 chunks for 4,800 messages, each a zeroed direct buffer and some 25 KB of the pool's
     * bookkeeping on the heap. (With one pool, the loop's small buffers in the same chunk did this by accident.) A
     * staging buffer now outlives its burst (at most two kept idle per loop), but still goes back when its stream
     * pauses.
     */
    private final FastThreadLocal<ByteBuf> anchor = new FastThreadLocal<>() {
        @Override
        protected ByteBuf initialValue() {
            return large.directBuffer(ANCHOR_SIZE, ANCHOR_SIZE);
        }

        @Override
        protected void onRemoval(ByteBuf value) {
            value.release();
        }
    };

    private ConnectionAllocator(PooledByteBufAllocator small, PooledByteBufAllocator large) {
        this.small = small;
        this.large = large;
        this.metric = new SumMetric(small.metric(), large.metric());
    }

    /**
     * The large pool, anchored first on an event loop (see {@link #anchor}): on a thread that removes its fast
     * thread-locals when it ends, which releases the anchor. Another thread (an application's own
     * {@link FastThreadLocalThread} that never cleans up) takes no anchor, which it would keep until it is collected.
     */
    private PooledByteBufAllocator large() {
        if (FastThreadLocalThread.currentThreadWillCleanupFastThreadLocals()) {
            anchor.get();
        }
        return large;
    }

    /** A pool of direct arenas only, in chunks of {@code chunkSize} bytes. */
    private static PooledByteBufAllocator directPool(int chunkSize, int pageSize) {
        return new PooledByteBufAllocator(
                true,
                0,
                PooledByteBufAllocator.defaultNumDirectArena(),
                pageSize,
                Math.min(
                        PooledByteBufAllocator.defaultMaxOrder(),
                        Integer.numberOfTrailingZeros(Math.max(1, chunkSize / pageSize))),
                PooledByteBufAllocator.defaultSmallCacheSize(),
                PooledByteBufAllocator.defaultNormalCacheSize(),
                PooledByteBufAllocator.defaultUseCacheForAllThreads());
    }

    /** The pool for a buffer of {@code initialCapacity} bytes (see the class comment). */
    private PooledByteBufAllocator pool(int initialCapacity) {
        return initialCapacity <= SMALL_MAX ? small : large();
    }

    /**
     * A direct buffer of exactly {@code capacity} bytes for {@link DirectNioSocketChannel}'s staging: from the small
     * pool up to {@value #SMALL_STAGING_MAX} bytes (room stays in its chunk for the loop's reads and heads), from the
     * large one otherwise. The caller releases it.
     */
    ByteBuf stagingBuffer(int capacity) {
        return (capacity <= SMALL_STAGING_MAX ? small : large()).directBuffer(capacity, capacity);
    }

    /** Both pools, small first (tests). */
    PooledByteBufAllocator[] pools() {
        return new PooledByteBufAllocator[] {small, large};
    }

    /** False although direct buffers are pooled: see the class comment. */
    @Override
    public boolean isDirectBufferPooled() {
        return false;
    }

    /**
     * Whether the current thread is an application's, not an event loop (see the class comment). A loop on a plain
     * thread of the application's factory runs with fast thread-locals ({@code ClientLoopGroup}), so it counts as one.
     */
    private static boolean offLoop() {
        return !FastThreadLocalThread.currentThreadHasFastThreadLocal();
    }

    @Override
    public ByteBuf buffer() {
        return offLoop() ? Unpooled.buffer() : small.buffer();
    }

    @Override
    public ByteBuf buffer(int initialCapacity) {
        return offLoop()
                ? Unpooled.buffer(initialCapacity)
                : pool(initialCapacity).buffer(initialCapacity);
    }

    @Override
    public ByteBuf buffer(int initialCapacity, int maxCapacity) {
        return offLoop()
                ? Unpooled.buffer(initialCapacity, maxCapacity)
                : pool(initialCapacity).buffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf ioBuffer() {
        return small.ioBuffer();
    }

    @Override
    public ByteBuf ioBuffer(int initialCapacity) {
        return pool(initialCapacity).ioBuffer(initialCapacity);
    }

    @Override
    public ByteBuf ioBuffer(int initialCapacity, int maxCapacity) {
        return pool(initialCapacity).ioBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf heapBuffer() {
        return large.heapBuffer();
    }

    @Override
    public ByteBuf heapBuffer(int initialCapacity) {
        return large.heapBuffer(initialCapacity);
    }

    @Override
    public ByteBuf heapBuffer(int initialCapacity, int maxCapacity) {
        return large.heapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf directBuffer() {
        return small.directBuffer();
    }

    @Override
    public ByteBuf directBuffer(int initialCapacity) {
        return pool(initialCapacity).directBuffer(initialCapacity);
    }

    @Override
    public ByteBuf directBuffer(int initialCapacity, int maxCapacity) {
        return pool(initialCapacity).directBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public CompositeByteBuf compositeBuffer() {
        return large.compositeBuffer();
    }

    @Override
    public CompositeByteBuf compositeBuffer(int maxNumComponents) {
        return large.compositeBuffer(maxNumComponents);
    }

    @Override
    public CompositeByteBuf compositeHeapBuffer() {
        return large.compositeHeapBuffer();
    }

    @Override
    public CompositeByteBuf compositeHeapBuffer(int maxNumComponents) {
        return large.compositeHeapBuffer(maxNumComponents);
    }

    @Override
    public CompositeByteBuf compositeDirectBuffer() {
        return large.compositeDirectBuffer();
    }

    @Override
    public CompositeByteBuf compositeDirectBuffer(int maxNumComponents) {
        return large.compositeDirectBuffer(maxNumComponents);
    }

    @Override
    public int calculateNewCapacity(int minNewCapacity, int maxCapacity) {
        return large.calculateNewCapacity(minNewCapacity, maxCapacity);
    }

    @Override
    public ByteBufAllocatorMetric metric() {
        return metric;
    }

    @Override
    public String toString() {
        return "ConnectionAllocator(" + small + ", " + large + ")";
    }

    /** The two pools' use together. */
    private record SumMetric(ByteBufAllocatorMetric small, ByteBufAllocatorMetric large)
            implements ByteBufAllocatorMetric {

        @Override
        public long usedHeapMemory() {
            return small.usedHeapMemory() + large.usedHeapMemory();
        }

        @Override
        public long usedDirectMemory() {
            return small.usedDirectMemory() + large.usedDirectMemory();
        }
    }
}
