package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelId;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ThreadLocalRandom;
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
 * headers, end octets) are copied into one direct buffer from the connection's allocator
 * ({@value StagingBuffer#CAPACITY} bytes when {@value StagingBuffer#LARGE_FROM} or more are waiting and the first
 * message that carries heap bytes does not fit the small buffer, {@value StagingBuffer#SMALL_CAPACITY} otherwise),
 * which is written, followed by the direct buffers after it (not copied). What the socket does not take stays staged
 * and is written first next time: every heap byte is copied exactly once. A heap buffer below {@value #STAGE_FROM}
 * bytes at the head of a burst is left to the JDK, as Netty hands it over; once a burst has staged, the heap that
 * follows in it is staged however small, rather than kept in the JDK's temporary buffers. Netty's accounting is
 * unchanged: a buffer leaves the outbound buffer (its promise completes) when the socket took its last byte, and the
 * staged bytes are always the first bytes still in it; the JDK {@link ByteBuffer}s Netty caches for its entries are
 * moved on by what was written, as the JDK's own write would have done. The staging buffer, its size and its life are
 * {@link StagingBuffer}'s: it outlives its burst, at most two kept idle per event loop. Without heap bytes at the head,
 * a write is Netty's own gathering write.
 */
public final class DirectNioSocketChannel extends NioSocketChannel {

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

    /** Netty's lower bound for shrinking a gathering write (NioSocketChannel's). */
    private static final int GATHERING_WRITE_LOW_THRESHOLD = 4096;

    // event loop only
    /** Heap bytes to write are copied here first. */
    private final StagingBuffer staging;
    /** The most bytes offered to one gathering write, adapted as Netty's NioSocketChannel adapts its own. */
    private long maxBytesPerGatheringWrite;
    /** Heap bytes staged; read when all is quiet (tests). */
    private long heapBytesStaged;

    /** A channel whose staging buffer lingers {@link StagingBuffer#LINGER_NANOS}. */
    public DirectNioSocketChannel() {
        this(StagingBuffer.LINGER_NANOS);
    }

    /** A channel whose staging buffer lingers {@code stagingLingerNanos} after its last use; 0: none (tests). */
    DirectNioSocketChannel(long stagingLingerNanos) {
        this.staging = new StagingBuffer(this, stagingLingerNanos);
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
        return staging.buffer() != null;
    }

    /** The capacity of the last staging buffer taken, 0 before the first; event loop (tests). */
    int lastStagingCapacity() {
        return staging.lastCapacity();
    }

    /** Staging buffers taken from the pool so far; event loop (tests). */
    int stagingBuffersTaken() {
        return staging.taken();
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
                staging.burstWritten();
                clearOpWrite();
                return;
            }
            int staged = staging.staged();
            // Staged bytes must be among the buffers returned, to move their positions on: no byte bound then.
            ByteBuffer[] nio = in.nioBuffers(1024, staged > 0 ? Integer.MAX_VALUE : maxBytesPerGatheringWrite);
            int count = in.nioBufferCount();
            if (count == 0) {
                writeSpinCount -= doWrite0(in); // not a ByteBuf (a FileRegion; Warren writes none)
                continue;
            }
            long attempted;
            long written;
            // a burst that has staged stages the rest of a body too, however small, rather than leave it to the JDK's
            // temporary buffers
            if (staged == 0 && !startsWithHeap(nio, count, staging.burstStaged() ? 1 : STAGE_FROM)) {
                // Netty's gathering write: no heap bytes to stage at the head
                int n = unstagedRun(nio, count, maxBytesPerGatheringWrite);
                attempted = bytes(nio, 0, n);
                written = n == 1 ? ch.write(nio[0]) : ch.write(nio, 0, n);
            } else {
                int first = staged > 0 ? count : stage(nio, count, in);
                ByteBuf buffer = staging.buffer();
                ByteBuffer view = buffer.internalNioBuffer(buffer.readerIndex(), buffer.readableBytes());
                // the staged view, then the direct buffers after what it holds; the slot before them was copied
                int after = first < count && !buffer.isWritable()
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
                    buffer.skipBytes(taken);
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
                staging.burstWritten();
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
     * wholly copied, at least 1. {@code in} sizes a new staging buffer ({@link StagingBuffer#take}).
     */
    private int stage(ByteBuffer[] nio, int count, ChannelOutboundBuffer in) throws Exception {
        ByteBuf buffer = staging.take(in);
        int i = 0;
        while (i < count && buffer.isWritable()) {
            ByteBuffer b = nio[i];
            int remaining = b.remaining();
            if (b.isDirect() && remaining >= SMALL_DIRECT && i > 0) {
                break;
            }
            int n = Math.min(remaining, buffer.writableBytes());
            int position = b.position();
            int limit = b.limit();
            b.limit(position + n);
            buffer.writeBytes(b);
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

    @Override
    protected void doClose() throws Exception {
        try {
            super.doClose();
        } finally {
            staging.close(); // what was staged is failed with the outbound buffer
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
