package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.util.Arrays;

/**
 * One channel's delivery tags and their settlements: turns the application's acks into as few basic.ack
 * frames as is safe. Event loop only; it writes nothing itself but appends frames to a buffer that
 * {@link #takeFrames()} hands over.
 *
 * <h2>Why it is safe</h2>
 * A basic.ack with {@code multiple=true} acknowledges <em>every</em> unacknowledged delivery of the channel up
 * to its tag, whichever consumer (or basic.get) it went to. So acks are coalesced only over a run of tags that
 * are all settled: the run starts at the lowest tag not yet settled ({@code base}) and stops at the first
 * tag still waiting for its handler. The run's highest acked tag goes out as one ack with
 * {@code multiple=true}. Acks above a tag still waiting (out of order, e.g. with concurrent handlers) go out
 * one by one at the same flush rather than wait: a delivery that is held for long must not hold back the
 * others' acks, or the prefetch would fill with deliveries the application has long acknowledged.
 *
 * <h2>State</h2>
 * RabbitMQ numbers a channel's deliveries 1, 2, 3, ... (deliver and get-ok alike), so one byte per tag in a
 * ring indexed by {@code tag & mask} covers the window {@code [base, next)}: {@link #PENDING} (waits for
 * the application), {@link #ACKED} (acked, frame not written yet) or settled (0; also noAck deliveries, which
 * need nothing). The ring grows to {@value #MAX_CAPACITY} tags; beyond that the lowest waiting tags are moved
 * to a sorted side list ("stragglers": deliveries held for a very long time). While any exists, the acks
 * coalesced here go out one by one, since a {@code multiple=true} one would cover them; a multiple ack the
 * application makes over stragglers names the highest it covers (everything else below {@code base} is settled).
 *
 * <h2>Nacks and rejects</h2>
 * They are appended at once, so ahead of acks recorded earlier and not yet appended (those wait for
 * {@link #takeFrames()}): a single nack or reject names one tag, so the order between it and other tags' acks does
 * not matter. A multiple nack first appends the acks not yet appended, so that it cannot cover them, then names
 * the highest waiting tag up to the one asked for.
 *
 * <h2>Delivery times</h2>
 * Each waiting tag keeps the time it was delivered (the event loop's clock, read once per read batch), so that
 * {@link #oldestPendingSince()} tells how long the oldest delivery has waited: RabbitMQ closes the channel when
 * that passes its consumer timeout.
 *
 * <p>Settling a tag that is already settled is dropped ({@link #settle} returns false): the broker would
 * close the channel with 406 PRECONDITION_FAILED "unknown delivery tag". A tag never delivered on the channel
 * is passed through, for the broker to judge ({@link ChannelConsumers} refuses the application's before they get
 * here).
 */
final class AckCoalescer {

    static final int ACK = 0;
    static final int NACK = 1;
    static final int REJECT = 2;
    static final int KIND_MASK = 3;
    static final int MULTIPLE = 4;
    static final int REQUEUE = 8;

    static final int INITIAL_CAPACITY = 64;
    static final int MAX_CAPACITY = 1 << 16;

    private static final byte SETTLED = 0;
    private static final byte PENDING = 1;
    private static final byte ACKED = 2;

    /** {@link #oldestPendingSince()} when nothing waits. */
    static final long NONE = Long.MIN_VALUE;

    private final int channel;
    private final ByteBufAllocator alloc;

    // event loop only
    private byte[] ring = new byte[INITIAL_CAPACITY];
    /** When each PENDING tag of the ring was delivered, same index. */
    private long[] times = new long[INITIAL_CAPACITY];
    /** Every tag below is settled and its frame appended, or a straggler. */
    private long base = 1;
    /** One past the highest tag delivered. Ring entries outside [base, next) are always SETTLED. */
    private long next = 1;
    /** ACKED entries in the ring. */
    private int acked;

    private long[] stragglers = new long[0];
    private long[] stragglerTimes = new long[0];
    private int stragglerCount;
    private ByteBuf out;

    AckCoalescer(int channel, ByteBufAllocator alloc) {
        this.channel = channel;
        this.alloc = alloc;
    }

    /**
     * A delivery (basic.deliver or basic.get-ok) arrived at {@code nanos}; {@code needsAck} unless noAck /
     * autoAck.
     */
    void delivered(long tag, boolean needsAck, long nanos) {
        if (tag < next) {
            return; // tags only grow on a channel; one that does not is left to the broker to judge
        }
        if (!needsAck && base == next) {
            base = next = tag + 1; // nothing waits: a noAck consumer costs nothing here
            return;
        }
        makeRoom(tag);
        ring[index(tag)] = needsAck ? PENDING : SETTLED;
        times[index(tag)] = nanos;
        next = tag + 1;
    }

    /** {@link #delivered(long, boolean, long)} at time 0, for tests that do not look at times. */
    void delivered(long tag, boolean needsAck) {
        delivered(tag, needsAck, 0);
    }

    /** The highest tag delivered so far (0 for none): what tag 0 with multiple means now. */
    long lastDelivered() {
        return next - 1;
    }

    /**
     * The application settled {@code tag}; {@code op} is {@link #ACK}, {@link #NACK} or {@link #REJECT}, plus
     * {@link #MULTIPLE} and {@link #REQUEUE}. Returns false when the settlement was dropped because the tag
     * (or, for a multiple one, every tag it covers) is already settled: for tag 0 with {@link #MULTIPLE} (every
     * outstanding delivery), when none is outstanding, nothing delivered yet included.
     */
    boolean settle(long tag, int op) {
        int kind = op & KIND_MASK;
        boolean multiple = (op & MULTIPLE) != 0 && kind != REJECT;
        boolean requeue = (op & REQUEUE) != 0;
        if (tag == 0 && multiple) {
            if (next == 1) {
                return false; // nothing delivered: a frame would settle nothing
            }
            // "every delivery so far": the ones held here, so that none is written again after it; and none the
            // broker sent that this channel has not seen yet
            tag = next - 1;
        }
        if (tag < 1 || tag >= next) {
            appendFrame(kind, tag, multiple, requeue);
            return true;
        }
        if (!multiple) {
            if (tag >= base) {
                int i = index(tag);
                if (ring[i] != PENDING) {
                    return false;
                }
                if (kind == ACK) {
                    ring[i] = ACKED;
                    acked++;
                    return true;
                }
                ring[i] = SETTLED;
            } else if (!removeStraggler(tag)) {
                return false;
            }
            appendFrame(kind, tag, false, requeue);
            return true;
        }
        return kind == ACK ? ackMultiple(tag) : nackMultiple(tag, requeue);
    }

    private boolean ackMultiple(long tag) {
        boolean any = false;
        int covered = stragglersUpTo(tag);
        if (covered > 0) {
            // Stragglers lie below base, where everything else is settled: one multiple ack covers just them.
            appendAck(stragglers[covered - 1], true);
            removeStragglers(covered);
            any = true;
        }
        long top = Math.min(tag, next - 1);
        for (long t = base; t <= top; t++) {
            int i = index(t);
            if (ring[i] == PENDING) {
                ring[i] = ACKED;
                acked++;
                any = true;
            }
        }
        return any;
    }

    private boolean nackMultiple(long tag, boolean requeue) {
        appendAcks(); // acked but unwritten tags below must not be covered by the nack
        long highest = -1;
        int covered = stragglersUpTo(tag);
        if (covered > 0) {
            highest = stragglers[covered - 1];
            removeStragglers(covered);
        }
        long top = Math.min(tag, next - 1);
        for (long t = base; t <= top; t++) {
            int i = index(t);
            if (ring[i] == PENDING) {
                ring[i] = SETTLED;
                highest = t;
            }
        }
        if (highest < 0) {
            return false;
        }
        appendFrame(NACK, highest, true, requeue);
        advance();
        return true;
    }

    /** Appends the acks not yet written, coalesced where safe. */
    void appendAcks() {
        if (acked == 0) {
            advance();
            return;
        }
        long highest = 0;
        int run = 0;
        while (base < next) {
            int i = index(base);
            byte s = ring[i];
            if (s == PENDING) {
                break;
            }
            if (s == ACKED) {
                ring[i] = SETTLED;
                acked--;
                if (stragglerCount == 0) {
                    highest = base;
                    run++;
                } else {
                    appendAck(base, false); // a multiple ack would cover the stragglers
                }
            }
            base++;
        }
        if (run > 0) {
            appendAck(highest, run > 1);
        }
        for (long t = base; acked > 0 && t < next; t++) {
            int i = index(t);
            if (ring[i] == ACKED) {
                ring[i] = SETTLED;
                acked--;
                appendAck(t, false);
            }
        }
    }

    /** Whether {@code tag} was delivered on this channel and waits for nothing (settled, or noAck). */
    boolean isSettled(long tag) {
        if (tag < 1 || tag >= next) {
            return false;
        }
        if (tag < base) {
            return stragglerCount == 0 || Arrays.binarySearch(stragglers, 0, stragglerCount, tag) < 0;
        }
        return ring[index(tag)] != PENDING;
    }

    /**
     * When the oldest tag still waiting for the application was delivered, or {@link #NONE}. Cheap right after
     * {@link #takeFrames()} (the window then starts at a waiting tag); it scans acked tags otherwise.
     */
    long oldestPendingSince() {
        if (stragglerCount > 0) {
            return stragglerTimes[0]; // spilled from the bottom of the window: older than any in it
        }
        for (long t = base; t < next; t++) {
            int i = index(t);
            if (ring[i] == PENDING) {
                return times[i];
            }
        }
        return NONE;
    }

    /** {@link #appendAcks()}, then hands over everything appended (the caller owns it), or null. */
    ByteBuf takeFrames() {
        appendAcks();
        ByteBuf frames = out;
        out = null;
        return frames;
    }

    /** Acks recorded and not yet appended: the tags the broker still counts against the prefetch. */
    int unwrittenAcks() {
        return acked;
    }

    /** True when acks or other settlements wait to be taken. */
    boolean hasWork() {
        return acked > 0 || out != null;
    }

    /**
     * basic.recover was written: the broker requeues every tag still waiting and forgets it, so they are forgotten
     * here too, as if settled. Nothing waits behind them to coalesce, and a multiple nack or "every outstanding
     * delivery" cannot name them. Called right after {@link #takeFrames()} (no ack is recorded and unappended);
     * frames appended since stay.
     */
    void forgetWaiting() {
        assert acked == 0 : "acks recorded and not appended before basic.recover";
        Arrays.fill(ring, SETTLED);
        base = next;
        acked = 0;
        stragglerCount = 0;
    }

    /** The channel is closed: the broker requeued everything unsettled; forget it all. */
    void clear() {
        Arrays.fill(ring, SETTLED);
        base = next;
        acked = 0;
        stragglerCount = 0;
        if (out != null) {
            out.release();
            out = null;
        }
    }

    // ---- for tests -----------------------------------------------------------------------------------------

    /** Tags delivered and not yet settled (waiting for the application), stragglers included. */
    int pendingCount() {
        int n = stragglerCount;
        for (long t = base; t < next; t++) {
            if (ring[index(t)] == PENDING) {
                n++;
            }
        }
        return n;
    }

    int capacity() {
        return ring.length;
    }

    int stragglerCount() {
        return stragglerCount;
    }

    // ---- internals -----------------------------------------------------------------------------------------

    private int index(long tag) {
        return (int) tag & (ring.length - 1);
    }

    /** Moves base over settled tags so that the window stays small. */
    private void advance() {
        while (base < next && ring[index(base)] == SETTLED) {
            base++;
        }
    }

    private void makeRoom(long tag) {
        advance();
        if (base == next) {
            base = next = tag; // empty window: start it at the new tag
            return;
        }
        while (tag - base >= ring.length) {
            if (ring.length < MAX_CAPACITY) {
                grow();
            } else if (base < next) {
                spillBase();
            } else {
                // every tag delivered so far has left the ring (waiting ones as stragglers): it starts again at the
                // new tag rather than step over the gap one tag at a time (a broker jumping tags would spin here)
                base = next = tag;
                return;
            }
        }
    }

    private void grow() {
        byte[] bigger = new byte[ring.length << 1];
        long[] biggerTimes = new long[bigger.length];
        int mask = bigger.length - 1;
        for (long t = base; t < next; t++) {
            bigger[(int) t & mask] = ring[index(t)];
            biggerTimes[(int) t & mask] = times[index(t)];
        }
        ring = bigger;
        times = biggerTimes;
    }

    /** The ring is at its largest: the lowest tag leaves it (as a straggler if it still waits). */
    private void spillBase() {
        int i = index(base);
        if (ring[i] == PENDING) {
            addStraggler(base, times[i]);
        } else if (ring[i] == ACKED) {
            acked--;
            appendAck(base, false);
        }
        ring[i] = SETTLED;
        base++;
        advance();
    }

    private void addStraggler(long tag, long nanos) {
        if (stragglerCount == stragglers.length) {
            stragglers = Arrays.copyOf(stragglers, Math.max(16, stragglerCount * 2));
            stragglerTimes = Arrays.copyOf(stragglerTimes, stragglers.length);
        }
        stragglerTimes[stragglerCount] = nanos;
        stragglers[stragglerCount++] = tag; // spilled in tag order: the list stays sorted
    }

    private boolean removeStraggler(long tag) {
        int i = Arrays.binarySearch(stragglers, 0, stragglerCount, tag);
        if (i < 0) {
            return false;
        }
        System.arraycopy(stragglers, i + 1, stragglers, i, stragglerCount - i - 1);
        System.arraycopy(stragglerTimes, i + 1, stragglerTimes, i, stragglerCount - i - 1);
        stragglerCount--;
        return true;
    }

    /** How many stragglers are at most {@code tag}. */
    private int stragglersUpTo(long tag) {
        int i = Arrays.binarySearch(stragglers, 0, stragglerCount, tag);
        return i >= 0 ? i + 1 : -i - 1;
    }

    private void removeStragglers(int count) {
        System.arraycopy(stragglers, count, stragglers, 0, stragglerCount - count);
        System.arraycopy(stragglerTimes, count, stragglerTimes, 0, stragglerCount - count);
        stragglerCount -= count;
    }

    private void appendAck(long tag, boolean multiple) {
        ConsumeFrames.writeAck(buffer(), channel, tag, multiple);
    }

    private void appendFrame(int kind, long tag, boolean multiple, boolean requeue) {
        switch (kind) {
            case ACK -> ConsumeFrames.writeAck(buffer(), channel, tag, multiple);
            case NACK -> ConsumeFrames.writeNack(buffer(), channel, tag, multiple, requeue);
            default -> ConsumeFrames.writeReject(buffer(), channel, tag, requeue);
        }
    }

    private ByteBuf buffer() {
        if (out == null) {
            out = alloc.buffer(ConsumeFrames.SETTLEMENT_FRAME_SIZE * 4);
        }
        return out;
    }
}
