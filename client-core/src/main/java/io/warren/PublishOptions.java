package io.warren;

import java.time.Duration;
import java.util.Objects;

/**
 * How publishing behaves on a connection's channels: the bound on unconfirmed publishes, the bound on bytes
 * accepted but not yet written, and what a publish does while the broker blocks the connection. Mutable with
 * fluent setters; {@link ConnectionOptions#publishOptions(PublishOptions)} copies it.
 *
 * <p>Memory never grows without bound, whatever the application does: a publish is written at once when it
 * can be; held (its bytes counted) while the channel's confirm window is full or the connection is blocked;
 * and refused with a {@link BackPressureException} when the connection already holds {@link #maxPendingBytes()}
 * of such publishes. A publisher that waits on {@link Channel#whenWritable()} whenever
 * {@link Channel#isWritable()} is false is never refused.
 */
public final class PublishOptions {

    /** What a publish does while the broker has blocked the connection. */
    public enum BlockedPolicy {
        /**
         * The publish is accepted and held by the client, not written, until connection.unblocked; held bytes
         * count against {@link #maxPendingBytes()}. The socket stays free for heartbeats, acks and close while
         * the broker is blocked.
         */
        HOLD,
        /** The publish fails at once with a {@link ConnectionBlockedException}; nothing is written. */
        FAIL
    }

    /** Default bound on a channel's unconfirmed publishes: 8192. */
    public static final int DEFAULT_MAX_OUTSTANDING_CONFIRMS = 8192;

    /** Default high-water mark of a connection's socket buffer: 256 KiB. */
    public static final int DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK = 256 * 1024;

    /** {@link #callerWriteGap(Duration)}'s default. */
    public static final Duration DEFAULT_CALLER_WRITE_GAP = Duration.ofNanos(50_000);

    /** {@link #callerWritesPerBurst(int)}'s default. */
    public static final int DEFAULT_CALLER_WRITES_PER_BURST = 16;

    /** Default bound on bytes accepted but not yet written, per connection: 64 MiB. */
    public static final long DEFAULT_MAX_PENDING_BYTES = 64L * 1024 * 1024;

    /** {@link #maxMessagesPerFlush(int)}'s default: no bound by count, the flushes are coalesced. */
    public static final int DEFAULT_MAX_MESSAGES_PER_FLUSH = Integer.MAX_VALUE;

    private int maxOutstandingConfirms = DEFAULT_MAX_OUTSTANDING_CONFIRMS;
    private long maxPendingBytes = DEFAULT_MAX_PENDING_BYTES;
    private BlockedPolicy blockedPolicy = BlockedPolicy.HOLD;
    private int writeBufferHighWaterMark = DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK;
    private boolean correlateReturns = true;
    private Duration callerWriteGap = DEFAULT_CALLER_WRITE_GAP;
    private int callerWritesPerBurst = DEFAULT_CALLER_WRITES_PER_BURST;
    private int maxMessagesPerFlush = DEFAULT_MAX_MESSAGES_PER_FLUSH;

    public PublishOptions() {}

    public PublishOptions(PublishOptions other) {
        this.maxOutstandingConfirms = other.maxOutstandingConfirms;
        this.maxPendingBytes = other.maxPendingBytes;
        this.blockedPolicy = other.blockedPolicy;
        this.writeBufferHighWaterMark = other.writeBufferHighWaterMark;
        this.correlateReturns = other.correlateReturns;
        this.callerWriteGap = other.callerWriteGap;
        this.callerWritesPerBurst = other.callerWritesPerBurst;
        this.maxMessagesPerFlush = other.maxMessagesPerFlush;
    }

    /**
     * The most publishes a channel in confirm mode has on the wire without their confirm, counted as the span
     * from the oldest unconfirmed sequence number to the newest. Past it, publishes are held by the client (not
     * written) until confirms arrive, and {@link Channel#isWritable()} is false. 1..16,777,216.
     */
    public PublishOptions maxOutstandingConfirms(int max) {
        if (max < 1 || max > (1 << 24)) {
            throw new IllegalArgumentException("maxOutstandingConfirms must be within 1..16777216: " + max);
        }
        this.maxOutstandingConfirms = max;
        return this;
    }

    public int maxOutstandingConfirms() {
        return maxOutstandingConfirms;
    }

    /**
     * The most bytes of publishes a connection accepts and has not yet written to the socket: queued for the
     * event loop, held by a full confirm window or a blocked connection, or in Netty's outbound buffer. A
     * publish that would go over it is refused with a {@link BackPressureException}, except when the connection
     * holds nothing at all (so one message larger than the bound can still be sent). At least 64 KiB.
     */
    public PublishOptions maxPendingBytes(long bytes) {
        if (bytes < 64 * 1024) {
            throw new IllegalArgumentException("maxPendingBytes must be at least 65536: " + bytes);
        }
        this.maxPendingBytes = bytes;
        return this;
    }

    public long maxPendingBytes() {
        return maxPendingBytes;
    }

    /** What a publish does while the broker blocks the connection; {@link BlockedPolicy#HOLD} by default. */
    public PublishOptions blockedPolicy(BlockedPolicy policy) {
        this.blockedPolicy = Objects.requireNonNull(policy, "policy");
        return this;
    }

    public BlockedPolicy blockedPolicy() {
        return blockedPolicy;
    }

    /**
     * The connection's write-buffer high-water mark: above it (bytes written and not yet taken by the socket)
     * {@link Channel#isWritable()} is false; it is writable again below half of it. 256 KiB by default (Netty's own
     * default, 64 KiB, makes every 64 KiB message a stop: the publisher waits, the event loop wakes it, per
     * message). A connection left at 256 KiB raises its mark to 4 MiB at its first publish of about 64 KiB or more
     * (method, header and body frames), for the same reason, on the NIO transport without TLS (where a body waiting
     * costs no direct memory) and up to a quarter of {@link #maxPendingBytes(long)}; any other mark set here is kept.
     * At least 8 KiB.
     */
    public PublishOptions writeBufferHighWaterMark(int bytes) {
        if (bytes < 8192) {
            throw new IllegalArgumentException("writeBufferHighWaterMark must be at least 8192: " + bytes);
        }
        this.writeBufferHighWaterMark = bytes;
        return this;
    }

    /** The mark set ({@link #writeBufferHighWaterMark(int)}), not one a connection raised. */
    public int writeBufferHighWaterMark() {
        return writeBufferHighWaterMark;
    }

    /**
     * Whether a mandatory publish on a channel in confirm mode carries its publish sequence number in the header
     * {@code x-warren-pub-seq-no} (a long-long, added to the message's headers as it is framed; the properties
     * object is not changed). On by default. basic.return does not say which publish it returns; the header, given
     * back with the returned message, does, so the return completes exactly its own publish's outcome as
     * {@link PublishOutcome.Status#RETURNED}. Consumers of routed messages see the header too.
     *
     * <p>Off, a return is matched from the order of returns and acks, as RabbitMQ sends them: exact while confirms
     * come in publish order, but when the broker acks routed publishes late (quorum queues, durable queues under
     * load) in the same batch as a return, the return can be matched to a routed publish, and the returned one
     * reported {@link PublishOutcome#CONFIRMED}.
     */
    public PublishOptions correlateReturns(boolean on) {
        this.correlateReturns = on;
        return this;
    }

    public boolean correlateReturns() {
        return correlateReturns;
    }

    /**
     * What makes a burst of publishes on a connection: publishes closer together than this. A publish made on an
     * application thread when the connection is idle is written to the socket by that thread (no hop to the event
     * loop); within a burst the event loop's queue and coalesced flush take over (see
     * {@link #callerWritesPerBurst}). 50 us by default: above the hop's own median (20-30 us), below the gap at the
     * rates services publish at (100 us at 10,000 msg/s). 0 to 1 s.
     */
    public PublishOptions callerWriteGap(Duration gap) {
        Objects.requireNonNull(gap, "gap");
        if (gap.isNegative() || gap.compareTo(Duration.ofSeconds(1)) > 0) {
            throw new IllegalArgumentException("callerWriteGap must be within 0..1 s: " + gap);
        }
        this.callerWriteGap = gap;
        return this;
    }

    public Duration callerWriteGap() {
        return callerWriteGap;
    }

    /**
     * Publishes of one burst that their callers write themselves before the rest of it joins the event loop's
     * queue: a few at once (a paced publisher woken late catches up) cost a few syscalls, less than a hop; a long
     * burst would cost a syscall per message where the queue writes hundreds with one flush. 16 by default; 0: the
     * event loop writes every publish, as before callers wrote. 0..1024.
     */
    public PublishOptions callerWritesPerBurst(int count) {
        if (count < 0 || count > 1024) {
            throw new IllegalArgumentException("callerWritesPerBurst must be within 0..1024: " + count);
        }
        this.callerWritesPerBurst = count;
        return this;
    }

    public int callerWritesPerBurst() {
        return callerWritesPerBurst;
    }

    /**
     * The most publishes the event loop writes to a connection's socket between two flushes. By default there is
     * no bound by count ({@link #DEFAULT_MAX_MESSAGES_PER_FLUSH}): the loop flushes once per batch of publishes it
     * drains, and within a long batch every half {@link #writeBufferHighWaterMark} of bytes, so a busy connection
     * makes one {@code write} system call per few hundred small messages. 1 flushes after every publish (a system
     * call per message: to compare the two, as Netty's {@code FlushConsolidationHandler} is tuned per pipeline).
     * A publish its caller writes on an idle connection (see {@link #callerWriteGap}) is flushed at once whatever
     * this says. Read once, when the connection is made. At least 1.
     */
    public PublishOptions maxMessagesPerFlush(int count) {
        if (count < 1) {
            throw new IllegalArgumentException("maxMessagesPerFlush must be at least 1: " + count);
        }
        this.maxMessagesPerFlush = count;
        return this;
    }

    public int maxMessagesPerFlush() {
        return maxMessagesPerFlush;
    }

    @Override
    public String toString() {
        return "PublishOptions{maxOutstandingConfirms=" + maxOutstandingConfirms + ", maxPendingBytes="
                + maxPendingBytes + ", blockedPolicy=" + blockedPolicy + ", writeBufferHighWaterMark="
                + writeBufferHighWaterMark + ", correlateReturns=" + correlateReturns + ", callerWriteGap="
                + callerWriteGap + ", callerWritesPerBurst=" + callerWritesPerBurst + ", maxMessagesPerFlush="
                + maxMessagesPerFlush + "}";
    }
}
