package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.FastThreadLocalThread;

/**
 * The allocator of every Warren connection: a pooled allocator (whose slices are recycled) of Warren's own, with
 * three differences from Netty's default one that keep direct memory to what the event loops need.
 *
 * <ul>
 *   <li>{@link #isDirectBufferPooled()} says false, so that Netty's NIO channel passes a heap buffer (a body the
 *       application published as a {@code byte[]}) to the socket as it is. Told the pool is there, the channel copies
 *       each heap buffer into a new pooled direct buffer at {@code write()} and keeps the copy until the socket takes
 *       it: a 1 MiB body was 1 MiB of the pool per message in flight. Passed on, {@link DirectNioSocketChannel}
 *       copies one of 16 KiB or more as the socket takes it, 512 KiB at a time at most, into a staging buffer from
 *       this pool, each byte once, and leaves a smaller one to the JDK's copy at the write, as Netty does (a
 *       publishing thread that writes a body itself hands its heap buffer to the JDK, which copies it into that
 *       thread's temporary direct buffer, as a blocking client writing a {@code byte[]} does). The native transports
 *       copy through this allocator either way.
 *   <li>{@link #buffer} on a thread that is not one of Netty's (a {@link FastThreadLocalThread}, or a thread run with
 *       fast thread-locals as a client's loop on a plain thread is: event loops) returns an
 *       unpooled heap buffer. Those are the rare frames an application thread encodes (an RPC such as
 *       exchange.declare): from the pool, the thread's first one would bind it to an arena and a chunk of its own.
 *       The frame is copied at the socket write like any heap buffer.
 *   <li>Chunks of {@value #CHUNK_SIZE} bytes instead of 4 MiB. An arena takes memory a chunk at a time, and an event
 *       loop that publishes uses little of its arena (reads, heads, acks): it held a whole 4 MiB chunk. A chunk still
 *       holds any read buffer (at most 64 KiB) and a frame cumulation at frame-max up to 1 MiB (RabbitMQ's default is
 *       128 KiB); a larger allocation is unpooled. Pages and caches are Netty's defaults, and a smaller
 *       {@code io.netty.allocator.maxOrder} is kept. No heap arenas: heap buffers are unpooled.
 * </ul>
 *
 * Reads ({@link #ioBuffer}) and explicit {@link #directBuffer}s come from the pool.
 */
public final class ConnectionAllocator implements ByteBufAllocator, ByteBufAllocatorMetricProvider {

    /** The pool's chunk size: 1 MiB at Netty's default 8 KiB page. */
    static final int CHUNK_SIZE = 1 << 20;

    public static final ConnectionAllocator INSTANCE = new ConnectionAllocator(new PooledByteBufAllocator(
            true,
            0,
            PooledByteBufAllocator.defaultNumDirectArena(),
            PooledByteBufAllocator.defaultPageSize(),
            Math.min(
                    PooledByteBufAllocator.defaultMaxOrder(),
                    Integer.numberOfTrailingZeros(CHUNK_SIZE / PooledByteBufAllocator.defaultPageSize())),
            PooledByteBufAllocator.defaultSmallCacheSize(),
            PooledByteBufAllocator.defaultNormalCacheSize(),
            PooledByteBufAllocator.defaultUseCacheForAllThreads()));

    private final PooledByteBufAllocator pool;

    private ConnectionAllocator(PooledByteBufAllocator pool) {
        this.pool = pool;
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
        return offLoop() ? Unpooled.buffer() : pool.buffer();
    }

    @Override
    public ByteBuf buffer(int initialCapacity) {
        return offLoop() ? Unpooled.buffer(initialCapacity) : pool.buffer(initialCapacity);
    }

    @Override
    public ByteBuf buffer(int initialCapacity, int maxCapacity) {
        return offLoop() ? Unpooled.buffer(initialCapacity, maxCapacity) : pool.buffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf ioBuffer() {
        return pool.ioBuffer();
    }

    @Override
    public ByteBuf ioBuffer(int initialCapacity) {
        return pool.ioBuffer(initialCapacity);
    }

    @Override
    public ByteBuf ioBuffer(int initialCapacity, int maxCapacity) {
        return pool.ioBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf heapBuffer() {
        return pool.heapBuffer();
    }

    @Override
    public ByteBuf heapBuffer(int initialCapacity) {
        return pool.heapBuffer(initialCapacity);
    }

    @Override
    public ByteBuf heapBuffer(int initialCapacity, int maxCapacity) {
        return pool.heapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf directBuffer() {
        return pool.directBuffer();
    }

    @Override
    public ByteBuf directBuffer(int initialCapacity) {
        return pool.directBuffer(initialCapacity);
    }

    @Override
    public ByteBuf directBuffer(int initialCapacity, int maxCapacity) {
        return pool.directBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public CompositeByteBuf compositeBuffer() {
        return pool.compositeBuffer();
    }

    @Override
    public CompositeByteBuf compositeBuffer(int maxNumComponents) {
        return pool.compositeBuffer(maxNumComponents);
    }

    @Override
    public CompositeByteBuf compositeHeapBuffer() {
        return pool.compositeHeapBuffer();
    }

    @Override
    public CompositeByteBuf compositeHeapBuffer(int maxNumComponents) {
        return pool.compositeHeapBuffer(maxNumComponents);
    }

    @Override
    public CompositeByteBuf compositeDirectBuffer() {
        return pool.compositeDirectBuffer();
    }

    @Override
    public CompositeByteBuf compositeDirectBuffer(int maxNumComponents) {
        return pool.compositeDirectBuffer(maxNumComponents);
    }

    @Override
    public int calculateNewCapacity(int minNewCapacity, int maxCapacity) {
        return pool.calculateNewCapacity(minNewCapacity, maxCapacity);
    }

    @Override
    public ByteBufAllocatorMetric metric() {
        return pool.metric();
    }

    @Override
    public String toString() {
        return "ConnectionAllocator(" + pool + ")";
    }
}
