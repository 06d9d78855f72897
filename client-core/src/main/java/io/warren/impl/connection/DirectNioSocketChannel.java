package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelId;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Netty's NIO socket channel, with its JDK socket open to {@link OutboundPath}: a publishing thread that holds the
 * path's writer token writes a message to it directly instead of handing it to the event loop (see the path's class
 * comment for why that is safe), with a cheap {@link ChannelId}, and with heap buffers written through a staging
 * buffer of its own instead of the JDK's temporary buffers ({@link #doWrite}).
 *
 * <h2>Heap buffers: copied once, into a bounded staging buffer</h2>
 * A heap buffer (a body published as a {@code byte[]}; {@link ConnectionAllocator} lets them reach the socket as they
 * are) cannot be handed to the kernel as it is: the JDK copies it into a temporary direct buffer at every socket
 * write, and copies all of it, whatever the socket then takes. Netty's gathering write offers the socket up to a few
 * MiB, of which a full socket takes a part (a 1 MiB body is never cut into less than the whole remaining message):
 * the rest of the copy is thrown away and made again at the next write, and the write that follows a partial one,
 * which the full socket answers with 0, copies everything for nothing. With 16 threads' 1 MiB bodies into RabbitMQ
 * that was 15 % more copying than bytes written (1,991 zero writes of 13,725), and the JDK kept temporary buffers as
 * large as the largest gathering write (a 16 MiB body: 16 MiB, for good; 1 MiB bodies: 1 MiB besides the pool).
 *
 * <p>Here the bytes at the head of the outbound buffer that are heap (and the small direct pieces between them: frame
 * headers, end octets) are copied into one direct buffer from the connection's allocator ({@value #STAGING_CAPACITY}
 * bytes when {@value #LARGE_STAGING_FROM} or more are waiting and the first message that carries heap bytes does not
 * fit the small buffer, {@value #SMALL_STAGING_CAPACITY} otherwise), which is
 * written, followed by the direct buffers after it (not copied). What the socket does not take stays staged and is written first next time:
 * every heap byte is copied exactly once. A heap buffer below {@value #STAGE_FROM} bytes at the head of a burst is left
 * to the JDK, as Netty hands it over; once a burst has staged, the heap that follows in it is staged however
 * small, rather than kept in the JDK's temporary buffers. Netty's accounting is
 * unchanged: a buffer leaves the outbound buffer (its promise completes) when the socket took its last byte, and the
 * staged bytes are always the first bytes still in it; the JDK {@link ByteBuffer}s Netty caches for its entries are
 * moved on by what was written, as the JDK's own write would have done. The staging buffer outlives its burst, two per
 * event loop at most (see {@link #STAGING_LINGER_NANOS}). Without heap bytes at the head, a write is Netty's own
 * gathering write.
 */
public final class DirectNioSocketChannel extends NioSocketChannel {

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
     * its own while it streams ({@link #STAGING_LINGER_NANOS}).
     */
    static final int STAGING_CAPACITY = 1024 * 1024;

    /**
     * The bytes waiting from which a burst of large bodies takes the {@link #STAGING_CAPACITY} buffer rather than the
     * small one. Not higher: 16 threads' 512 KiB bodies would be written 72 KiB at a time.
     */
    static final int LARGE_STAGING_FROM = 512 * 1024;

    /**
     * The staging buffer's size when less than {@link #LARGE_STAGING_FROM} bytes are waiting, or when the first
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
    static final int SMALL_STAGING_CAPACITY = ConnectionAllocator.SMALL_STAGING_MAX;

    /** A direct buffer below this size between heap ones is copied with them rather than given an iovec of its own. */
    static final int SMALL_DIRECT = 1024;

    /**
     * A heap buffer at the head of a burst is staged from this size; smaller ones go to the JDK as Netty hands them
     * over (a burst that has staged stages whatever heap follows in it). Small
     * bodies gain nothing (the JDK's temporary buffer for them stays small, and a partial write copies little again)
     * and paid for the staging buffer's round trip to the pool at every burst: 16 B heap bodies flooded through the
     * loop cost 2.4 us of CPU per message staged against 1.3-1.5 us (1 KiB: 1.6-1.7 against 1.1).
     */
    public static final int STAGE_FROM = 16 * 1024;

    /**
     * How long a staging buffer outlives its last use before it goes back to the pool (1-2 times this: a check
     * every period gives back a buffer not used since the last one). A heavy stream's outbound buffer empties between
     * bursts, often at every message: given back each time, the buffer was taken again from the pool at the next
     * burst. That cost nothing in the loop's anchored chunk, but two connections on one loop streaming 1 MiB heap
     * bodies at once need two 1 MiB buffers, and the chunk that held the second was made and freed by Netty 528 times
     * in 6,400 messages (each a zeroed 2 MiB direct buffer and the pool's bookkeeping on the heap). Kept this long, it
     * is made once per stream (one thread's 64 KiB bodies: 55,376 against 50,467 msg/s given back at each burst, 4
     * JVMs each); an idle connection holds none, and a loop keeps at most {@link #MAX_LINGERING_PER_LOOP} between
     * bursts, so many connections that each send a body now and then do not each hold one.
     */
    static final long STAGING_LINGER_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** The most staging buffers an event loop's connections keep between their bursts. */
    static final int MAX_LINGERING_PER_LOOP = 2;

    /** Per event loop: how many of its connections keep a staging buffer between bursts. Event loop only. */
    private static final FastThreadLocal<int[]> LINGERING = new FastThreadLocal<>() {
        @Override
        protected int[] initialValue() {
            return new int[1];
        }
    };

    /** Netty's lower bound for shrinking a gathering write (NioSocketChannel's). */
    private static final int GATHERING_WRITE_LOW_THRESHOLD = 4096;

    // event loop only
    /** Copies of the first {@code staging.readableBytes()} bytes still in the outbound buffer; null when empty. */
    private ByteBuf staging;
    /** Whether this burst (since the outbound buffer was last empty) staged any bytes. */
    private boolean burstStaged;
    /** Whether a burst took or used the staging buffer since the linger check last looked. */
    private boolean stagingUsed;
    /** Whether this connection's staging buffer counts among its loop's {@link #LINGERING} ones. */
    private boolean lingering;
    /** Whether a burst wanted the large staging buffer ({@link #wantsLarge}) since the check last looked. */
    private boolean largeStagingWanted;
    /** The linger check, scheduled while a staging buffer is held; null when none is. */
    private ScheduledFuture<?> lingerCheck;
    /** The most bytes offered to one gathering write, adapted as Netty's NioSocketChannel adapts its own. */
    private long maxBytesPerGatheringWrite;
    /** Heap bytes staged; read when all is quiet (tests). */
    private long heapBytesStaged;
    /** The capacity of the last staging buffer taken; read when all is quiet (tests). */
    private int lastStagingCapacity;
    /** Staging buffers taken from the pool; read when all is quiet (tests). */
    private int stagingBuffersTaken;

    private final long stagingLingerNanos;
    /** {@link #checkLinger}, made once. */
    private final Runnable lingerCheckTask = this::checkLinger;
    /** Finds the first flushed message that carries heap bytes, for {@link #wantsLarge}. */
    private final HeapMessageSize heapMessageSize = new HeapMessageSize();

    /** A channel whose staging buffer lingers {@link #STAGING_LINGER_NANOS}. */
    public DirectNioSocketChannel() {
        this(STAGING_LINGER_NANOS);
    }

    /** A channel whose staging buffer lingers {@code stagingLingerNanos} after its last use; 0: none (tests). */
    DirectNioSocketChannel(long stagingLingerNanos) {
        this.stagingLingerNanos = stagingLingerNanos;
    }

    /** The JDK channel under this one. */
    SocketChannel socket() {
        return javaChannel();
    }

    /** Heap bytes (and small direct pieces among them) copied into the staging buffer so far; event loop (tests). */
    long stagedBytes() {
        return heapBytesStaged;
    }

    /** Whether a staging buffer is held now; event loop (tests). */
    boolean holdsStaging() {
        return staging != null;
    }

    /** The capacity of the last staging buffer taken, 0 before the first; event loop (tests). */
    int lastStagingCapacity() {
        return lastStagingCapacity;
    }

    /** Staging buffers taken from the pool so far; event loop (tests). */
    int stagingBuffersTaken() {
        return stagingBuffersTaken;
    }

    /**
     * Netty's NIO write loop (the same spin count, OP_WRITE and gathering-write sizing), with heap bytes written
     * through the staging buffer (see the class comment). Event loop.
     */
    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        SocketChannel ch = javaChannel();
        if (maxBytesPerGatheringWrite == 0) {
            // Netty's starting point: twice the socket's send buffer
            maxBytesPerGatheringWrite = Math.max(GATHERING_WRITE_LOW_THRESHOLD, config().getSendBufferSize() << 1);
        }
        int writeSpinCount = config().getWriteSpinCount();
        do {
            if (in.isEmpty()) {
                burstWritten();
                clearOpWrite();
                return;
            }
            int staged = staging == null ? 0 : staging.readableBytes();
            // Staged bytes must be among the buffers returned, to move their positions on: no byte bound then.
            ByteBuffer[] nio = in.nioBuffers(1024, staged > 0 ? Integer.MAX_VALUE : maxBytesPerGatheringWrite);
            int count = in.nioBufferCount();
            if (count == 0) {
                writeSpinCount -= doWrite0(in); // not a ByteBuf (a FileRegion; Warren writes none)
                continue;
            }
            long attempted;
            long written;
            // a burst that holds a staging buffer stages the rest of a body too, however small, rather than leave it
            // to the JDK's temporary buffers
            if (staged == 0 && !startsWithHeap(nio, count, burstStaged ? 1 : STAGE_FROM)) {
                // Netty's gathering write: no heap bytes to stage at the head
                int n = unstagedRun(nio, count, maxBytesPerGatheringWrite);
                attempted = bytes(nio, 0, n);
                written = n == 1 ? ch.write(nio[0]) : ch.write(nio, 0, n);
            } else {
                int first = staged > 0 ? count : stage(nio, count, in);
                ByteBuffer view = staging.internalNioBuffer(staging.readerIndex(), staging.readableBytes());
                // the staged view, then the direct buffers after what it holds; the slot before them was copied
                int after = first < count && !staging.isWritable()
                        ? first
                        : first + directRun(nio, first, count, maxBytesPerGatheringWrite);
                int fromStaging = view.remaining();
                if (after == first) {
                    attempted = fromStaging;
                    written = ch.write(view);
                } else {
                    ByteBuffer copied = nio[first - 1];
                    nio[first - 1] = view;
                    try {
                        attempted = fromStaging + bytes(nio, first, after);
                        written = ch.write(nio, first - 1, after - first + 1);
                    } finally {
                        nio[first - 1] = copied;
                    }
                }
                if (written > 0) {
                    int taken = (int) Math.min(written, fromStaging);
                    staging.skipBytes(taken);
                    // the JDK moved the direct buffers it wrote; the staged ones are moved here, as it would have
                    advance(nio, taken);
                }
            }
            if (written <= 0) {
                incompleteWrite(true); // the socket is full: wait for OP_WRITE
                return;
            }
            adjustMaxBytesPerGatheringWrite(attempted, written);
            in.removeBytes(written);
            if (in.isEmpty()) {
                // the burst is written: when this was the last spin, Netty's next flush returns before doWrite
                burstWritten();
            }
            --writeSpinCount;
        } while (writeSpinCount > 0);
        incompleteWrite(writeSpinCount < 0);
    }

    /**
     * Whether the first buffer is a heap one of at least {@code minHeap} bytes, or small direct pieces before such a
     * one (see {@link #stage}).
     */
    private static boolean startsWithHeap(ByteBuffer[] nio, int count, int minHeap) {
        for (int i = 0; i < count; i++) {
            ByteBuffer b = nio[i];
            if (!b.isDirect()) {
                return b.remaining() >= minHeap;
            }
            if (b.remaining() >= SMALL_DIRECT) {
                return false;
            }
        }
        return false;
    }

    /**
     * Copies the buffers from the head that are heap or small direct into the (empty) staging buffer, until it is
     * full or a large direct buffer comes; positions are left as they are. Returns the index of the first buffer not
     * wholly copied, at least 1. {@code in} sizes a new staging buffer ({@link #wantsLarge}).
     */
    private int stage(ByteBuffer[] nio, int count, ChannelOutboundBuffer in) throws Exception {
        boolean large = wantsLarge(in);
        if (lingering) {
            stopLingering(); // in use again
        }
        if (staging != null && staging.capacity() < STAGING_CAPACITY && large) {
            releaseStaging(); // nothing is staged (stage is called on an empty one): a heavy stream built up
        }
        if (staging == null) {
            // sized by what is waiting
            int capacity = large ? STAGING_CAPACITY : SMALL_STAGING_CAPACITY;
            staging = alloc() instanceof ConnectionAllocator connection
                    ? connection.stagingBuffer(capacity)
                    : alloc().directBuffer(capacity, capacity);
            lastStagingCapacity = capacity;
            stagingBuffersTaken++;
        }
        stagingUsed = true;
        burstStaged = true;
        if (large) {
            largeStagingWanted = true;
        }
        staging.clear();
        int i = 0;
        while (i < count && staging.isWritable()) {
            ByteBuffer b = nio[i];
            int remaining = b.remaining();
            if (b.isDirect() && remaining >= SMALL_DIRECT && i > 0) {
                break;
            }
            int n = Math.min(remaining, staging.writableBytes());
            int position = b.position();
            int limit = b.limit();
            b.limit(position + n);
            staging.writeBytes(b);
            b.limit(limit).position(position);
            if (!b.isDirect()) {
                heapBytesStaged += n;
            }
            if (n < remaining) {
                return Math.max(i, 1);
            }
            i++;
        }
        return i;
    }

    /**
     * Whether a burst takes the large staging buffer: {@link #LARGE_STAGING_FROM} bytes or more waiting, and the first
     * flushed message that carries heap bytes larger than the small buffer (its body, or the composite of its frames
     * when the body spans several: so at any frame size).
     */
    private boolean wantsLarge(ChannelOutboundBuffer in) throws Exception {
        if (in.totalPendingWriteBytes() < LARGE_STAGING_FROM) {
            return false;
        }
        heapMessageSize.size = 0;
        in.forEachFlushedMessage(heapMessageSize);
        return heapMessageSize.size > SMALL_STAGING_CAPACITY;
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

    /** The number of direct buffers from {@code from}, within {@code maxBytes} (at least one if any). */
    private static int directRun(ByteBuffer[] nio, int from, int count, long maxBytes) {
        long total = 0;
        int i = from;
        while (i < count && nio[i].isDirect()) {
            total += nio[i].remaining();
            if (total > maxBytes && i > from) {
                break;
            }
            i++;
        }
        return i - from;
    }

    /**
     * How many buffers from the first one go to the socket as Netty hands them over: direct ones and heap ones below
     * {@value #STAGE_FROM} bytes, up to {@code maxBytes} (at least one), stopping before a heap buffer to stage. The
     * first buffer is never one to stage ({@link #startsWithHeap} said no).
     */
    private static int unstagedRun(ByteBuffer[] nio, int count, long maxBytes) {
        long total = 0;
        int i = 0;
        while (i < count && (nio[i].isDirect() || nio[i].remaining() < STAGE_FROM)) {
            total += nio[i].remaining();
            if (total > maxBytes && i > 0) {
                break;
            }
            i++;
        }
        return i;
    }

    private static long bytes(ByteBuffer[] nio, int from, int to) {
        long total = 0;
        for (int i = from; i < to; i++) {
            total += nio[i].remaining();
        }
        return total;
    }

    /** Moves the buffers' positions on by {@code n} bytes from the first, as a socket write of them would. */
    private static void advance(ByteBuffer[] nio, int n) {
        for (int i = 0; n > 0; i++) {
            ByteBuffer b = nio[i];
            int step = Math.min(n, b.remaining());
            b.position(b.position() + step);
            n -= step;
        }
    }

    /** NioSocketChannel's rule: double after a write the socket took whole, halve after one it took less than half. */
    private void adjustMaxBytesPerGatheringWrite(long attempted, long written) {
        if (attempted == written) {
            if (attempted << 1 > maxBytesPerGatheringWrite) {
                maxBytesPerGatheringWrite = Math.min(Integer.MAX_VALUE, attempted << 1);
            }
        } else if (attempted > GATHERING_WRITE_LOW_THRESHOLD && written < attempted >>> 1) {
            maxBytesPerGatheringWrite = attempted >>> 1;
        }
    }

    /**
     * The outbound buffer is empty, so nothing is staged: the staging buffer lingers while its loop keeps fewer than
     * {@link #MAX_LINGERING_PER_LOOP}, else goes back to the pool (see {@link #STAGING_LINGER_NANOS}).
     */
    private void burstWritten() {
        burstStaged = false;
        if (staging == null || lingering) {
            return;
        }
        int[] lingeringOnLoop = LINGERING.get();
        if (stagingLingerNanos == 0 || lingeringOnLoop[0] >= MAX_LINGERING_PER_LOOP) {
            releaseStaging();
            return;
        }
        lingeringOnLoop[0]++;
        lingering = true;
        if (lingerCheck == null) {
            lingerCheck = eventLoop().schedule(lingerCheckTask, stagingLingerNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** The staging buffer is in use again, or given back: it no longer counts among its loop's lingering ones. */
    private void stopLingering() {
        lingering = false;
        LINGERING.get()[0]--;
    }

    /**
     * Gives the staging buffer back when no burst used it since the last check, or when it is a large one and no burst
     * needed a large one; otherwise looks again later. Never while bytes are staged. Event loop.
     */
    private void checkLinger() {
        lingerCheck = null;
        if (staging == null) {
            return;
        }
        boolean staged = staging.isReadable();
        if (!staged && (!stagingUsed || (staging.capacity() > SMALL_STAGING_CAPACITY && !largeStagingWanted))) {
            releaseStaging();
            return;
        }
        stagingUsed = false;
        largeStagingWanted = false;
        lingerCheck = eventLoop().schedule(lingerCheckTask, stagingLingerNanos, TimeUnit.NANOSECONDS);
    }

    private void releaseStaging() {
        if (staging != null) {
            ByteBuf s = staging;
            staging = null;
            // the count is the loop's: a close on another thread (never in Warren: no SO_LINGER) leaves it one high,
            // which only keeps a buffer fewer between bursts
            if (lingering && eventLoop().inEventLoop()) {
                stopLingering();
            }
            s.release();
        }
    }

    @Override
    protected void doClose() throws Exception {
        try {
            super.doClose();
        } finally {
            releaseStaging(); // what was staged is failed with the outbound buffer
            ScheduledFuture<?> check = lingerCheck;
            if (check != null) {
                lingerCheck = null;
                check.cancel(false); // a closed channel is not kept reachable by its check
            }
        }
    }

    /**
     * A {@link SequenceId} instead of Netty's {@code DefaultChannelId}, whose first use reads the machine's MAC
     * address (every network interface listed) and the process id: about a tenth of the first connect's time in a
     * fresh JVM, for an id that only names the channel in logs. Called by Netty's constructor, so it reads
     * static state only.
     */
    @Override
    protected ChannelId newId() {
        return SequenceId.next();
    }

    /**
     * A channel id unique within the JVM: a counter, behind a random prefix drawn once per JVM so that the long
     * text tells two processes' logs apart. Short text: the counter in 8 hex digits; long text: prefix and
     * counter.
     */
    static final class SequenceId implements ChannelId {

        private static final long serialVersionUID = 1L;
        private static final AtomicLong NEXT = new AtomicLong();
        // no String.format: its first use loads the regex and formatter classes
        private static final String PREFIX = hex8(ThreadLocalRandom.current().nextInt() & 0xFFFFFFFFL);

        private final long sequence;

        private SequenceId(long sequence) {
            this.sequence = sequence;
        }

        static SequenceId next() {
            return new SequenceId(NEXT.incrementAndGet());
        }

        @Override
        public String asShortText() {
            return hex8(sequence);
        }

        /** {@code value} in hex, at least 8 digits. */
        private static String hex8(long value) {
            String hex = Long.toHexString(value);
            return hex.length() >= 8 ? hex : "00000000".substring(hex.length()).concat(hex);
        }

        @Override
        public String asLongText() {
            return PREFIX.concat("-").concat(asShortText());
        }

        @Override
        public int compareTo(ChannelId other) {
            if (other instanceof SequenceId s) {
                return Long.compare(sequence, s.sequence);
            }
            return asLongText().compareTo(other.asLongText());
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof SequenceId s && s.sequence == sequence;
        }

        @Override
        public int hashCode() {
            // spread the counter: Netty hashes channels by their id (channel groups, maps keyed by channel)
            return Long.hashCode(sequence * 0x9E3779B97F4A7C15L);
        }

        @Override
        public String toString() {
            return asShortText();
        }
    }
}
