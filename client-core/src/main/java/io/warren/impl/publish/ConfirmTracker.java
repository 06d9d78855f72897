package io.warren.impl.publish;

import io.netty.util.collection.LongObjectHashMap;
import io.warren.PublishNackedException;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.impl.metrics.MetricsCollector;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The unconfirmed publishes of one channel in confirm mode, keyed by sequence number. Event loop only, but for the
 * hand-off of the publishes written on their callers' threads (below).
 *
 * <p>A ring of slots indexed by {@code sequenceNumber & mask}: no boxed key, no entry object, nothing
 * allocated per publish. The window is the span {@code [lowest, next)}: RabbitMQ confirms nearly in order,
 * so the span is close to the number outstanding, and bounding the span (rather than the count) is what keeps
 * every outstanding sequence number in its own slot. The ring grows (doubling) up to the span the publisher
 * allows. A slot holds the publish's future, or {@link #NO_OUTCOME} for a publish without one.
 *
 * <h2>basic.return in confirm mode</h2>
 * A returned publish must complete as {@link PublishOutcome.Status#RETURNED}, but basic.return does not say
 * which publish it returns. RabbitMQ writes basic.return before the returned publish's ack, and the ack comes
 * later, so a return waits here until an ack or nack settles its publish. Which publish:
 * <ol>
 *   <li><b>By its header</b>: the publisher stamps every mandatory publish in confirm mode with its sequence
 *   number ({@link Publisher#SEQUENCE_HEADER}); the returned message carries it back. Exact.</li>
 *   <li><b>By order</b>, when the header is off ({@link io.warren.PublishOptions#correlateReturns}) or missing:
 *   RabbitMQ's channel handles one publish at a time and flushes the confirms it has recorded after each, and the
 *   returned publish, being the newest it has read, usually ends that flush: the next ack's tag is the returned
 *   publish when it is an outstanding mandatory one. Else returns (which come in publish order) go to the oldest
 *   mandatory publishes not yet returned, up to the tag. Not exact: a flush that also confirms older routed
 *   publishes (late confirms from a quorum or durable queue) starts with their ack, which this takes for the
 *   returned one.</li>
 * </ol>
 *
 * <h2>Publishes written by their callers</h2>
 * A publish written on its caller's thread under the outbound path's writer token is numbered there: numbering
 * happens only under the token (the loop's own publishes too), so numbering order is wire order. The caller takes
 * {@link #callerSequence()} and records its publish ({@link #recordCaller}) in a small ring of its own BEFORE it
 * writes: the ack can only follow the write, so the loop, which takes the records into the tracker first thing in
 * every method here, always knows the publish an ack names. The token makes the callers one producer; the loop is
 * the one consumer. A record taken after {@link #failAll} fails at once: the channel is gone.
 */
final class ConfirmTracker {

    private static final Logger LOG = LoggerFactory.getLogger(ConfirmTracker.class);

    /** The slot of a publish made without an outcome future. */
    static final Object NO_OUTCOME = new Object();

    private static final byte MANDATORY = 1;
    private static final byte RETURNED = 2;

    /** Caller-written publishes in the hand-off at most; one more takes the queued way (the loop empties it often). */
    static final int HANDOFF_CAPACITY = 128;

    private record ReturnInfo(int replyCode, String replyText) {}

    private final int channel;
    private final int maxSpan;
    private final MetricsCollector metrics;

    // event loop only
    private Object[] slots;
    private byte[] flags;
    /** When each outstanding publish was written (System.nanoTime), for confirm latencies; null until timed. */
    private long[] sentAt;

    private int mask;
    private long next = 1;
    private long lowest = 1;
    private int outstanding;
    private final ArrayDeque<ReturnInfo> pendingReturns = new ArrayDeque<>(2);
    private LongObjectHashMap<ReturnInfo> returned;
    /** Why {@link #failAll} ran: a record taken after it fails at once. */
    private Throwable failedBy;

    // token holder (a caller under the outbound path's writer token): the hand-off, slot sequence & handoffMask
    private final Object[] handoffSlots;
    private final byte[] handoffFlags;
    private final long[] handoffSentAt;
    private final int handoffMask;

    // any thread (volatile)
    /**
     * The next sequence number to give; written only by the token holder (a caller, or the loop when it numbers),
     * after the record it publishes to the loop.
     */
    private volatile long numbered = 1;
    /** {@code lowest} and {@code next} as the loop last left them: the window and the hand-off's room, for callers. */
    private volatile long lowestForCallers = 1;

    private volatile long takenForCallers = 1;

    /**
     * Caller-written publishes the socket refused (nothing written) whose task has not reached the loop yet: the
     * sequence numbers, copied on write (rare: a connection going). Callers add, the loop removes.
     */
    private volatile long[] refused = NONE;

    private static final long[] NONE = new long[0];
    private static final AtomicReferenceFieldUpdater<ConfirmTracker, long[]> REFUSED =
            AtomicReferenceFieldUpdater.newUpdater(ConfirmTracker.class, long[].class, "refused");

    // event loop only
    /** The outcomes of refused publishes that {@link #failAll} left to their task (see {@link #forgetRefused}). */
    private LongObjectHashMap<Object> refusedOutcomes;

    ConfirmTracker(int channel, int maxSpan, MetricsCollector metrics) {
        this.channel = channel;
        this.maxSpan = maxSpan;
        this.metrics = metrics;
        int capacity = Math.min(1024, ceilPowerOfTwo(maxSpan));
        this.slots = new Object[capacity];
        this.flags = new byte[capacity];
        this.mask = capacity - 1;
        int handoff = Math.min(HANDOFF_CAPACITY, capacity);
        this.handoffSlots = new Object[handoff];
        this.handoffFlags = new byte[handoff];
        this.handoffSentAt = new long[handoff];
        this.handoffMask = handoff - 1;
    }

    // ---- token holder ------------------------------------------------------------------------------------

    /**
     * The sequence number a publish its caller writes gets, or 0 when it must take the queued way: the confirm
     * window is full (as {@link #isFull}, from the loop's last settled state: never too generous) or the hand-off is.
     * Token holder.
     */
    long callerSequence() {
        long seq = numbered;
        return seq - lowestForCallers < maxSpan && seq - takenForCallers < handoffSlots.length ? seq : 0;
    }

    /** Whether the window is full as callers see it (the loop's last settled state). Any thread. */
    boolean windowFullForCallers() {
        return numbered - lowestForCallers >= maxSpan;
    }

    /**
     * Records the publish numbered {@code sequence} ({@link #callerSequence()}), before it is written: from here its
     * number is spent. {@code future} may be null (no outcome); {@code sentAtNanos} as for {@link #add}. Token holder.
     */
    void recordCaller(long sequence, CompletableFuture<PublishOutcome> future, boolean mandatory, long sentAtNanos) {
        int i = (int) sequence & handoffMask;
        handoffSlots[i] = future == null ? NO_OUTCOME : future;
        handoffFlags[i] = mandatory ? MANDATORY : 0;
        handoffSentAt[i] = sentAtNanos;
        numbered = sequence + 1; // publishes the record to the loop
    }

    /**
     * The socket refused the write of the publish its caller recorded as {@code sequence}: nothing of it was written.
     * Its task follows to the loop ({@link #forgetRefused}); meanwhile {@link #failAll} leaves its outcome alone. Any
     * thread, after {@link #recordCaller}.
     */
    void refusedByCaller(long sequence) {
        long[] before;
        long[] after;
        do {
            before = refused;
            after = Arrays.copyOf(before, before.length + 1);
            after[before.length] = sequence;
        } while (!REFUSED.compareAndSet(this, before, after));
    }

    // ---- event loop --------------------------------------------------------------------------------------

    /**
     * Takes a refused publish ({@link #refusedByCaller}) out of the tracker: no ack will come for it and no close
     * fails it. True when its outcome is its task's to settle (not written); false when a close failed it before it
     * was marked (then its outcome is settled already).
     */
    boolean forgetRefused(long sequence) {
        takeCallers();
        removeRefusedMark(sequence);
        if (refusedOutcomes != null && refusedOutcomes.remove(sequence) != null) {
            return true; // failAll left it
        }
        if (sequence < lowest || sequence >= next) {
            return false;
        }
        int i = (int) sequence & mask;
        if (slots[i] == null) {
            return false;
        }
        slots[i] = null;
        flags[i] = 0;
        if (sentAt != null) {
            sentAt[i] = 0;
        }
        outstanding--;
        metrics.publishNotWritten(true); // counted as written and awaiting a confirm before the refused write
        skipSettled();
        lowestForCallers = lowest;
        return true;
    }

    private boolean isRefused(long sequence) {
        return contains(refused, sequence);
    }

    private static boolean contains(long[] marks, long sequence) {
        for (long r : marks) {
            if (r == sequence) {
                return true;
            }
        }
        return false;
    }

    private void removeRefusedMark(long sequence) {
        long[] before;
        long[] after;
        do {
            before = refused;
            int at = -1;
            for (int i = 0; i < before.length; i++) {
                if (before[i] == sequence) {
                    at = i;
                    break;
                }
            }
            if (at < 0) {
                return;
            }
            after = new long[before.length - 1];
            System.arraycopy(before, 0, after, 0, at);
            System.arraycopy(before, at + 1, after, at, after.length - at);
        } while (!REFUSED.compareAndSet(this, before, after));
    }

    /** A refused publish's outcome {@link #failAll} leaves to its task; its counts as written are taken back. */
    private void leaveToRefusedTask(long sequence, Object slot) {
        metrics.publishNotWritten(true);
        if (refusedOutcomes == null) {
            refusedOutcomes = new LongObjectHashMap<>(2);
        }
        refusedOutcomes.put(sequence, slot);
    }

    /**
     * Takes the callers' records into the tracker, in sequence order; after {@link #failAll} they fail at once.
     * Every other method starts here: an ack or return may name a caller's publish.
     */
    void takeCallers() {
        long end = numbered;
        if (next == end) {
            return;
        }
        while (next < end) {
            int i = (int) next & handoffMask;
            Object slot = handoffSlots[i];
            byte f = handoffFlags[i];
            long t = handoffSentAt[i];
            handoffSlots[i] = null;
            if (failedBy != null) {
                failLate(next++, slot);
            } else {
                append(slot, f, t);
            }
        }
        if (failedBy != null) {
            lowest = next;
            lowestForCallers = lowest;
        }
        takenForCallers = next;
    }

    /** A caller's record taken after {@link #failAll}: it fails as those did, counted as they were. */
    private void failLate(long seq, Object slot) {
        if (isRefused(seq)) {
            leaveToRefusedTask(seq, slot); // never written: its task fails it as such, or carries it over
            return;
        }
        metrics.publishesUnconfirmed(1);
        if (slot != NO_OUTCOME) {
            ((CompletableFuture<?>) slot).completeExceptionally(notConfirmed(seq, failedBy));
        }
    }

    /** True when the span of outstanding sequence numbers has reached the bound: hold further publishes. */
    boolean isFull() {
        takeCallers();
        return next - lowest >= maxSpan;
    }

    /** The span of sequence numbers from the oldest unconfirmed to the newest: what the window bounds. */
    long span() {
        takeCallers();
        return next - lowest;
    }

    /** Number of publishes without their confirm yet. */
    int outstanding() {
        takeCallers();
        return outstanding;
    }

    /** The sequence number the next publish gets; the loop numbers only under the writer token. */
    long nextSequenceNumber() {
        takeCallers();
        return next;
    }

    /**
     * Records the next publish; {@code future} may be null (no outcome); {@code sentAtNanos} is when it was written
     * (System.nanoTime), or 0 when confirm latencies are not recorded. Returns its sequence number. The loop's own
     * publish, numbered under the outbound path's writer token (no caller numbers meanwhile).
     */
    long add(CompletableFuture<PublishOutcome> future, boolean mandatory, long sentAtNanos) {
        takeCallers();
        long seq = append(future == null ? NO_OUTCOME : future, mandatory ? MANDATORY : 0, sentAtNanos);
        numbered = next;
        takenForCallers = next;
        return seq;
    }

    private long append(Object slot, byte flag, long sentAtNanos) {
        if (next - lowest >= slots.length) {
            grow();
        }
        long seq = next++;
        int i = (int) seq & mask;
        slots[i] = slot;
        flags[i] = flag;
        if (sentAtNanos != 0 || sentAt != null) {
            if (sentAt == null) {
                sentAt = new long[slots.length]; // the first timed publish: timing was switched on
            }
            sentAt[i] = sentAtNanos;
        }
        outstanding++;
        return seq;
    }

    /**
     * basic.return on this channel (confirm mode, returns correlated): {@code sequence} is the number the returned
     * message carries in its header, or -1. Every mandatory publish this tracker numbers was stamped, so a return
     * that names none of them is of a publish it does not track (written before confirm.select): it goes to the
     * listeners only, and is never matched by order to a stamped publish that was routed.
     */
    void returnedStamped(int replyCode, String replyText, long sequence) {
        takeCallers();
        if (sequence > 0 && isUnreturnedMandatory(sequence)) {
            markReturned(sequence, new ReturnInfo(replyCode, replyText));
        } else {
            LOG.debug(
                    "channel {}: basic.return of a message whose sequence number ({}) names no outstanding mandatory"
                            + " publish: not tracked here, left to the return listeners",
                    channel,
                    sequence);
        }
    }

    /**
     * basic.return on this channel (confirm mode, returns not correlated,
     * {@link io.warren.PublishOptions#correlateReturns}): matched to its publish by order at the next ack or nack.
     */
    void returned(int replyCode, String replyText) {
        pendingReturns.add(new ReturnInfo(replyCode, replyText));
    }

    /** basic.ack from the broker. */
    void ack(long tag, boolean multiple) {
        settle(tag, multiple, true);
    }

    /** basic.nack from the broker. */
    void nack(long tag, boolean multiple) {
        settle(tag, multiple, false);
    }

    private void settle(long tag, boolean multiple, boolean ack) {
        takeCallers(); // the publish the ack names may be a caller's, recorded before it was written
        if (!pendingReturns.isEmpty()) {
            attributeReturns(tag);
        }
        if (tag >= next || (tag < lowest && !(multiple && tag == 0))) {
            LOG.debug(
                    "channel {}: basic.{} for unknown sequence number {} (outstanding {}..{}); ignored",
                    channel,
                    ack ? "ack" : "nack",
                    tag,
                    lowest,
                    next - 1);
            return;
        }
        // one clock read per basic.ack, however many publishes it confirms
        long now = ack && sentAt != null ? System.nanoTime() : 0;
        if (multiple) {
            // multiple with tag 0 would mean "everything"; RabbitMQ never sends it, treated as up to the newest
            long last = tag == 0 ? next - 1 : tag;
            // Fields are read again at every step: completing a future runs application code that may publish
            // (add) or grow the ring.
            while (lowest <= last) {
                settleOne(lowest++, ack, now);
            }
        } else {
            settleOne(tag, ack, now);
        }
        skipSettled();
        lowestForCallers = lowest;
    }

    private void settleOne(long seq, boolean ack, long now) {
        int i = (int) seq & mask;
        Object slot = slots[i];
        if (slot == null) {
            return; // settled already (a single ack before a multiple one), or never published
        }
        byte f = flags[i];
        slots[i] = null;
        flags[i] = 0;
        outstanding--;
        // counted before the future completes: whoever its completion wakes sees the metrics include it
        if (ack) {
            metrics.publishesConfirmed(1);
        } else {
            metrics.publishesNacked(1);
        }
        if (now != 0 && sentAt[i] != 0) {
            metrics.confirmLatency(now - sentAt[i]);
            sentAt[i] = 0;
        }
        ReturnInfo r = (f & RETURNED) != 0 ? returned.remove(seq) : null;
        if (slot == NO_OUTCOME) {
            if (!ack) {
                LOG.debug("channel {}: publish {} (without outcome) nacked by the broker", channel, seq);
            }
            return;
        }
        @SuppressWarnings("unchecked")
        CompletableFuture<PublishOutcome> future = (CompletableFuture<PublishOutcome>) slot;
        if (!ack) {
            future.completeExceptionally(new PublishNackedException(
                    "the broker nacked publish " + seq + " on channel " + channel
                            + (r == null ? "" : " (returned: " + r.replyCode + " " + r.replyText + ")"),
                    channel,
                    seq));
        } else if (r != null) {
            future.complete(PublishOutcome.returned(r.replyCode, r.replyText));
        } else {
            future.complete(PublishOutcome.CONFIRMED);
        }
    }

    private void skipSettled() {
        while (lowest < next && slots[(int) lowest & mask] == null) {
            lowest++;
        }
    }

    private void attributeReturns(long tag) {
        if (pendingReturns.size() == 1 && isUnreturnedMandatory(tag)) {
            markReturned(tag, pendingReturns.poll());
            return;
        }
        ReturnInfo r;
        while ((r = pendingReturns.poll()) != null) {
            long seq = oldestUnreturnedMandatory(tag);
            if (seq < 0) {
                // An ack for older publishes can come between a return and the returned publish's own ack (the
                // broker acks a routed range and the unroutable newest one in the same flush, the range first):
                // the returns wait for the ack that covers a mandatory publish.
                pendingReturns.addFirst(r);
                LOG.debug(
                        "channel {}: basic.ack {} covers no outstanding mandatory publish; {} return(s) wait for"
                                + " the next ack",
                        channel,
                        tag,
                        pendingReturns.size());
                return;
            }
            LOG.debug(
                    "channel {}: {} returns before one ack (tag {}); matched to publish {} by publish order",
                    channel,
                    pendingReturns.size() + 1,
                    tag,
                    seq);
            markReturned(seq, r);
        }
    }

    private boolean isUnreturnedMandatory(long seq) {
        if (seq < lowest || seq >= next) {
            return false;
        }
        int i = (int) seq & mask;
        return slots[i] != null && flags[i] == MANDATORY;
    }

    private long oldestUnreturnedMandatory(long upTo) {
        long end = Math.min(upTo, next - 1);
        for (long s = lowest; s <= end; s++) {
            if (isUnreturnedMandatory(s)) {
                return s;
            }
        }
        return -1;
    }

    private void markReturned(long seq, ReturnInfo info) {
        flags[(int) seq & mask] |= RETURNED;
        if (returned == null) {
            returned = new LongObjectHashMap<>(4);
        }
        returned.put(seq, info);
    }

    /**
     * The channel or connection closed: every outstanding publish fails with a retryable
     * {@link PublishNotConfirmedException} (its message was written, so the broker may have it).
     */
    void failAll(Throwable cause) {
        takeCallers(); // the callers' records so far fail with the rest; those recorded later fail one by one
        // (failLate)
        failedBy = cause;
        pendingReturns.clear();
        // counted before any future fails: whoever its completion wakes sees the metrics include it
        long[] marks = refused; // one view of the refusals for both passes: a mark made after it comes too late
        int unconfirmedCount = 0;
        for (long seq = lowest; seq < next; seq++) {
            if (slots[(int) seq & mask] != null && !contains(marks, seq)) {
                unconfirmedCount++;
            }
        }
        if (unconfirmedCount > 0) {
            metrics.publishesUnconfirmed(unconfirmedCount);
        }
        while (lowest < next) {
            long seq = lowest++;
            int i = (int) seq & mask;
            Object slot = slots[i];
            slots[i] = null;
            flags[i] = 0;
            if (slot != null) {
                outstanding--;
                if (contains(marks, seq)) {
                    leaveToRefusedTask(seq, slot); // never written: its task fails it as such, or carries it over
                } else if (slot != NO_OUTCOME) {
                    ((CompletableFuture<?>) slot).completeExceptionally(notConfirmed(seq, cause));
                }
            }
        }
        lowestForCallers = lowest;
        if (returned != null) {
            returned.clear();
        }
    }

    private PublishNotConfirmedException notConfirmed(long seq, Throwable cause) {
        return new PublishNotConfirmedException(
                "publish " + seq + " on channel " + channel + " was not confirmed: " + cause.getMessage(),
                cause,
                channel,
                true);
    }

    private void grow() {
        int capacity = slots.length * 2;
        Object[] s = new Object[capacity];
        byte[] f = new byte[capacity];
        int m = capacity - 1;
        for (long seq = lowest; seq < next; seq++) {
            s[(int) seq & m] = slots[(int) seq & mask];
            f[(int) seq & m] = flags[(int) seq & mask];
        }
        if (sentAt != null) {
            long[] t = new long[capacity];
            for (long seq = lowest; seq < next; seq++) {
                t[(int) seq & m] = sentAt[(int) seq & mask];
            }
            sentAt = t;
        }
        slots = s;
        flags = f;
        mask = m;
    }

    private static int ceilPowerOfTwo(int n) {
        return n <= 1 ? 1 : Integer.highestOneBit(n - 1) << 1;
    }
}
