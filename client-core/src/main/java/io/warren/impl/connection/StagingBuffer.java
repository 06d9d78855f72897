package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The staging buffer of one {@link DirectNioSocketChannel}: which size a burst takes, and when the buffer goes back to
 * the pool. The channel copies heap bytes into it and writes them ({@link DirectNioSocketChannel#doWrite}); this class
 * owns and releases it. Event loop only, as the channel's write; {@link #close} comes from the channel's close, on
 * the loop, or on Netty's {@code GlobalEventExecutor} where SO_LINGER is set (Warren never sets it).
 */
final class StagingBuffer {

    /**
     * The staging buffer's size under a heavy stream: the most heap bytes one socket write carries, a 1 MiB body with
     * all but the last ~150 bytes of its frames. The broker pays per write more than the client does: 16 threads'
     * 1 MiB heap bodies into RabbitMQ ran at 2,062 msg/s with 512 KiB (two writes per message) and 2,313 with
     * 1 MiB, the broker's CPU 325 against 281 us per message (medians of 15 runs, alternated JVM by JVM; in one
     * JVM of 30 runs 2,294 against 2,832 msg/s, amqp-client 2,853); 128 KiB (amqp-client's frame) took the process
     * 10.4 s of CPU per 9.6 GiB against 7.9-8.9 s with 512 KiB. A staging buffer that held the whole message, its
     * last frame bytes too, ran no faster than this one. Half the large pool's chunk: the other half serves the loop's
     * reads and its anchor ({@link ConnectionAllocator}). Two connections on one loop that stream heavy heap bodies
     * at the same time no longer both fit in the anchored chunk (three of 512 KiB did): the second holds a chunk of
     * its own while it streams ({@link #LINGER_NANOS}).
     */
    static final int CAPACITY = 1024 * 1024;

    /**
     * The bytes waiting from which a burst of large bodies takes the {@link #CAPACITY} buffer rather than the
     * small one. Not higher: 16 threads' 512 KiB bodies would be written 72 KiB at a time.
     */
    static final int LARGE_FROM = 512 * 1024;

    /**
     * The staging buffer's size when less than {@link #LARGE_FROM} bytes are waiting, or when the first
     * message that carries heap bytes fits it whole (a moderate stream: 64 KiB bodies, however many wait): a 64 KiB
     * body with its frames in one write, from the small pool's chunk, so that such a connection holds no chunk of the
     * large pool at all (see {@link ConnectionAllocator}). A connection raises its high-water mark at its first
     * 64 KiB publish ({@code WriteBufferMark}), so one thread's 64 KiB bodies keep megabytes waiting; the large buffer
     * held them at 2.25 MB of direct memory against 0.16 MB, at the same rate (44,622 against 43,814 msg/s, 4 JVMs of
     * 2 runs each).
     * Smaller writes cost the broker more per message: a 32 KiB one took one thread's 64 KiB bodies from 24,640 to
     * 21,598 msg/s (medians of 6 runs, alternated with a 512 KiB one), the broker's CPU from 28-35 to 34-40 us per
     * message.
     */
    static final int SMALL_CAPACITY = ConnectionAllocator.SMALL_STAGING_MAX;

    /**
     * How long a staging buffer outlives its last use before it goes back to the pool (1-2 times this: a check
     * every period gives back a buffer not used since the last one). A heavy stream's outbound buffer empties between
     * bursts, often at every message: given back each time, the buffer was taken again from the pool at the next
     * burst. That cost nothing in the loop's anchored chunk, but two connections on one loop streaming 1 MiB heap
     * bodies at once need two 1 MiB buffers, and the chunk that held the second was made and freed by Netty 528 times
     * in 6,400 messages (each a zeroed 2 MiB direct buffer and the pool's bookkeeping on the heap). Kept this long, it
     * is made once per stream (for two streams per loop: a third gives its buffer back at each burst, as all did
     * before; one thread's 64 KiB bodies: 55,376 against 50,467 msg/s given back at each burst, 4 JVMs each); an idle
     * connection holds none, and a loop keeps at most {@link #MAX_LINGERING_PER_LOOP} between bursts, so many
     * connections that each send a body now and then do not each hold one.
     */
    static final long LINGER_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** The most staging buffers an event loop's connections keep between their bursts. */
    static final int MAX_LINGERING_PER_LOOP = 2;

    /** Per event loop: how many of its connections keep a staging buffer between bursts. Event loop only. */
    private static final FastThreadLocal<int[]> LINGERING = new FastThreadLocal<>() {
        @Override
        protected int[] initialValue() {
            return new int[1];
        }
    };

    private final Channel channel;
    private final long lingerNanos;
    /** {@link #checkLinger}, made once. */
    private final Runnable lingerCheckTask = this::checkLinger;
    /** Finds the first flushed message that carries heap bytes, for {@link #wantsLarge}. */
    private final HeapMessageSize heapMessageSize = new HeapMessageSize();

    /** Copies of the first {@code buffer.readableBytes()} bytes still in the outbound buffer; null when none is held. */
    private ByteBuf buffer;
    /** Whether this burst (since the outbound buffer was last empty) staged any bytes. */
    private boolean burstStaged;
    /** Whether a burst took or used the buffer since the linger check last looked. */
    private boolean used;
    /** Whether this buffer counts among its loop's {@link #LINGERING} ones. */
    private boolean lingering;
    /** Whether a burst wanted the large buffer ({@link #wantsLarge}) since the check last looked. */
    private boolean largeWanted;
    /** The linger check, scheduled while a buffer is held; null when none is. */
    private ScheduledFuture<?> lingerCheck;
    /** The capacity of the last buffer taken; read when all is quiet (tests). */
    private int lastCapacity;
    /** Buffers taken from the pool; read when all is quiet (tests). */
    private int taken;

    /** The staging buffer of {@code channel}, lingering {@code lingerNanos} after its last use (0: none). */
    StagingBuffer(Channel channel, long lingerNanos) {
        this.channel = channel;
        this.lingerNanos = lingerNanos;
    }

    /** The buffer held, staged bytes first; null when none is. The caller must not release it: this class does. */
    ByteBuf buffer() {
        return buffer;
    }

    /** The bytes staged and not yet written. */
    int staged() {
        return buffer == null ? 0 : buffer.readableBytes();
    }

    /** Whether this burst staged bytes: then any heap that follows in it is staged, however small. */
    boolean burstStaged() {
        return burstStaged;
    }

    /**
     * An empty buffer for the burst to stage into: the one held, or one sized by what waits in {@code in}
     * ({@link #wantsLarge}). This class keeps and releases it.
     */
    ByteBuf take(ChannelOutboundBuffer in) throws Exception {
        assert channel.eventLoop().inEventLoop();
        boolean large = wantsLarge(in);
        if (lingering) {
            stopLingering(); // in use again
        }
        if (buffer != null && buffer.capacity() < CAPACITY && large) {
            release(); // nothing is staged (take is called on an empty one): a heavy stream built up
        }
        if (buffer == null) {
            int capacity = large ? CAPACITY : SMALL_CAPACITY;
            buffer = channel.alloc() instanceof ConnectionAllocator connection
                    ? connection.stagingBuffer(capacity)
                    : channel.alloc().directBuffer(capacity, capacity);
            lastCapacity = capacity;
            taken++;
        }
        used = true;
        burstStaged = true;
        if (large) {
            largeWanted = true;
        }
        return buffer.clear();
    }

    /** The capacity of the last buffer taken, 0 before the first (tests). */
    int lastCapacity() {
        return lastCapacity;
    }

    /** Buffers taken from the pool so far (tests). */
    int taken() {
        return taken;
    }

    /**
     * Whether a burst takes the large staging buffer: {@link #LARGE_FROM} bytes or more waiting, and the first
     * flushed message that carries heap bytes larger than the small buffer (its body, or the composite of its frames
     * when the body spans several: so at any frame size).
     */
    private boolean wantsLarge(ChannelOutboundBuffer in) throws Exception {
        if (in.totalPendingWriteBytes() < LARGE_FROM) {
            return false;
        }
        heapMessageSize.size = 0;
        in.forEachFlushedMessage(heapMessageSize);
        return heapMessageSize.size > SMALL_CAPACITY;
    }

    /** The unread size of the first message that is a buffer with heap bytes; 0 when none is. */
    private static final class HeapMessageSize implements ChannelOutboundBuffer.MessageProcessor {
        int size;

        @Override
        public boolean processMessage(Object msg) {
            if (msg instanceof ByteBuf b && !b.isDirect()) {
                size = b.readableBytes();
                return false;
            }
            return true;
        }
    }

    /**
     * The outbound buffer is empty, so nothing is staged: the buffer lingers while its loop keeps fewer than
     * {@link #MAX_LINGERING_PER_LOOP}, else goes back to the pool (see {@link #LINGER_NANOS}).
     */
    void burstWritten() {
        assert channel.eventLoop().inEventLoop();
        burstStaged = false;
        if (buffer == null || lingering) {
            return;
        }
        int[] lingeringOnLoop = LINGERING.get();
        if (lingerNanos == 0 || lingeringOnLoop[0] >= MAX_LINGERING_PER_LOOP) {
            release();
            return;
        }
        lingeringOnLoop[0]++;
        lingering = true;
        if (lingerCheck == null) {
            lingerCheck = channel.eventLoop().schedule(lingerCheckTask, lingerNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** The buffer is in use again, or given back: it no longer counts among its loop's lingering ones. */
    private void stopLingering() {
        lingering = false;
        LINGERING.get()[0]--;
    }

    /**
     * Gives the buffer back when no burst used it since the last check, or when it is a large one and no burst
     * needed a large one; otherwise looks again later. Never while bytes are staged. Event loop.
     */
    private void checkLinger() {
        lingerCheck = null;
        if (buffer == null) {
            return;
        }
        boolean staged = buffer.isReadable();
        if (!staged && (!used || (buffer.capacity() > SMALL_CAPACITY && !largeWanted))) {
            release();
            return;
        }
        used = false;
        largeWanted = false;
        lingerCheck = channel.eventLoop().schedule(lingerCheckTask, lingerNanos, TimeUnit.NANOSECONDS);
    }

    private void release() {
        if (buffer != null) {
            ByteBuf s = buffer;
            buffer = null;
            // the count is the loop's: a close on another thread (never in Warren: no SO_LINGER) leaves it one high,
            // which only keeps a buffer fewer between bursts
            if (lingering && channel.eventLoop().inEventLoop()) {
                stopLingering();
            }
            s.release();
        }
    }

    /** The channel closed: what was staged is failed with its outbound buffer; the check is dropped. */
    void close() {
        release();
        ScheduledFuture<?> check = lingerCheck;
        if (check != null) {
            lingerCheck = null;
            check.cancel(false); // a closed channel is not kept reachable by its check
        }
    }
}
