package io.warren.impl.queue;

import java.util.Queue;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The lock-free engine under {@link InboundMessageQueue}: one producer hands messages to one consumer,
 * the consumer accepts them one by one through a {@link Predicate} that may refuse, and both sides
 * learn from the returned bits when to schedule a drain and when the producer should stop or start
 * again. It never blocks, never spins, never allocates per message (the cross-thread flavour's array
 * chunks aside, recycled while the consumer keeps up) and never calls an executor itself: the caller
 * acts on the bits.
 *
 * <h2>Flavours</h2>
 * <ul>
 *   <li>{@link #sameThread(int, int)}: producer and consumer are the same thread (one Netty event
 *       loop); a plain {@code long} work-in-progress counter and an {@link java.util.ArrayDeque}.</li>
 *   <li>{@link #crossThread(int, int)}: one producer thread, consumer drains on other threads (never two
 *       at once); a {@code volatile long} counter updated through a field updater and a JCTools SPSC
 *       array queue.</li>
 * </ul>
 *
 * <h2>The work-in-progress word</h2>
 * One {@code long} holds the number of <em>pending</em> messages (queued, plus the one the consumer
 * refused and parked) in its low 60 bits and the writability state in the two bits above. Keeping both
 * in one word lets a single atomic update move the count and decide a writability transition, so the
 * producer and the consumer can never disagree on which of them made it.
 *
 * <h2>Ownership</h2>
 * The consumer side <em>owns</em> the queue while the pending count is above zero. {@link #add} returns
 * {@link #DRAIN_REQUIRED} to the producer whose message took the count from 0 to 1: that producer now
 * holds the ownership and must hand it to the consumer (run or schedule one {@link #drain}). A drain
 * keeps the ownership as long as it returns {@link #DRAIN_REQUIRED} (its predicate refused a message,
 * which is parked and offered first next time) and gives it up when the count reaches 0. Only the
 * owner may call {@link #drain} or {@link #clear}; successive owners on different threads must be
 * ordered by a happens-before edge, which the counter's atomic updates and an executor hand-off give.
 * So drains never overlap, whatever executor runs them.
 *
 * <h2>Writability</h2>
 * <pre>
 *            add: pending reaches high-water mark            drain: pending falls below low-water mark
 * WRITABLE ----------------------------------------&gt; UNWRITABLE -----------------------------------------&gt; RESUMING
 *    ^                 (add returns UNWRITABLE)           ^          (drain returns WRITABLE_AGAIN)          |
 *    |                                                    |                                                   |
 *    |                                                    +------- acknowledgeWritable(): pending is at or ----+
 *    |                                                              above high again, stay unwritable (false)  |
 *    +-------------------------- acknowledgeWritable(): resume the producer (true) ---------------------------+
 * </pre>
 * {@link #UNWRITABLE} is decided on the producer thread, {@link #WRITABLE_AGAIN} on the consumer's,
 * and the latter has to travel back to the producer (an {@code execute} on its event loop) before the
 * producer acts on it. The {@code RESUMING} state covers that trip: no new {@link #UNWRITABLE} can be
 * signalled until the producer has called {@link #acknowledgeWritable()}, so the producer sees strictly
 * alternating pause and resume signals, and if the queue filled up again meanwhile the producer simply
 * stays paused. Without it, a second high-water crossing could overtake the in-flight writable-again
 * signal and leave the producer reading while the queue is over its high-water mark.
 *
 * @param <M> the message type; {@code null} is refused
 */
public abstract sealed class HandoffQueue<M> permits SameThreadHandoffQueue, CrossThreadHandoffQueue {

    /**
     * Set by {@link #add} when the message took the pending count from 0 to 1 (the producer must hand
     * the ownership to the consumer: schedule a {@link #drain}), and by {@link #drain} when its
     * predicate refused a message (the consumer keeps the ownership: drain again when it can accept).
     */
    public static final int DRAIN_REQUIRED = 1;

    /**
     * Set by {@link #add}, once per unwritable period, when the pending count reached the high-water
     * mark: the producer should stop producing (Netty: {@code autoRead} off, or withhold credit).
     */
    public static final int UNWRITABLE = 1 << 1;

    /**
     * Set by {@link #drain} or {@link #clear}, once per unwritable period, when the pending count fell
     * below the low-water mark: the producer thread must call {@link #acknowledgeWritable()}, and
     * resume producing when it returns {@code true}.
     */
    public static final int WRITABLE_AGAIN = 1 << 2;

    static final long COUNT_MASK = (1L << 60) - 1;
    static final long STATE_MASK = 3L << 60;
    static final long STATE_WRITABLE = 0;
    static final long STATE_UNWRITABLE = 1L << 60;
    static final long STATE_RESUMING = 2L << 60;

    /** {@link #taken}: the count in the low 32 bits, the drain's stamp in the high 32. */
    private static final int STAMP_SHIFT = 32;

    private static final long TAKEN_MASK = (1L << STAMP_SHIFT) - 1;

    /** A round hands over at most this many messages, so that its count fits beside the stamp. */
    private static final long MAX_ROUND = TAKEN_MASK;

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicLongFieldUpdater<HandoffQueue<?>> TAKEN =
            (AtomicLongFieldUpdater) AtomicLongFieldUpdater.newUpdater(HandoffQueue.class, "taken");

    // immutable
    private final Queue<M> queue;
    private final long lowWaterMark;
    private final long highWaterMark;

    // consumer thread only (the current owner)
    private M parked;

    /**
     * Drains so far: each drain stamps its {@link #taken} counts with its number. It wraps, but two drains
     * 2<sup>32</sup> apart never race: the older would have to stall that long between two statements.
     */
    private int drains;

    // written by the owner, read by any thread (volatile, ordered stores)
    /**
     * Messages of the current round handed to the consumer (the one it holds included) and not yet subtracted
     * from the pending count, which is decremented once per round: {@link #waiting()} takes them off. Written by
     * the owner only, with ordered stores (no fence: a plain store on x86), read by anyone. The high 32 bits hold
     * the stamp of the drain that wrote it, so that a drain that has given up the ownership can reset its own
     * count without resetting an equal count of the next owner's (see {@link #drain}).
     */
    private volatile long taken;

    HandoffQueue(Queue<M> queue, int lowWaterMark, int highWaterMark) {
        checkWaterMarks(lowWaterMark, highWaterMark);
        this.queue = queue;
        this.lowWaterMark = lowWaterMark;
        this.highWaterMark = highWaterMark;
    }

    /** The flavour for a producer and a consumer on the same thread. */
    public static <M> HandoffQueue<M> sameThread(int lowWaterMark, int highWaterMark) {
        return new SameThreadHandoffQueue<>(lowWaterMark, highWaterMark);
    }

    /** The flavour for one producer thread and a consumer draining on other threads. */
    public static <M> HandoffQueue<M> crossThread(int lowWaterMark, int highWaterMark) {
        return new CrossThreadHandoffQueue<>(lowWaterMark, highWaterMark);
    }

    /** Whether {@code bits} has {@link #DRAIN_REQUIRED}. */
    public static boolean drainRequired(int bits) {
        return (bits & DRAIN_REQUIRED) != 0;
    }

    /** Whether {@code bits} has {@link #UNWRITABLE}. */
    public static boolean unwritable(int bits) {
        return (bits & UNWRITABLE) != 0;
    }

    /** Whether {@code bits} has {@link #WRITABLE_AGAIN}. */
    public static boolean writableAgain(int bits) {
        return (bits & WRITABLE_AGAIN) != 0;
    }

    static void checkWaterMarks(int lowWaterMark, int highWaterMark) {
        // A low-water mark of 0 could never be undercut: the producer would stay paused for ever.
        if (lowWaterMark < 1) {
            throw new IllegalArgumentException("lowWaterMark must be at least 1: " + lowWaterMark);
        }
        if (highWaterMark < lowWaterMark) {
            throw new IllegalArgumentException(
                    "highWaterMark (" + highWaterMark + ") must not be below lowWaterMark (" + lowWaterMark + ")");
        }
    }

    /**
     * Producer thread only. Queues {@code message}.
     *
     * @return {@link #DRAIN_REQUIRED} if the pending count went from 0 to 1, plus {@link #UNWRITABLE} if
     *     the count reached the high-water mark while the queue was writable
     * @throws NullPointerException if {@code message} is null (nothing is queued)
     */
    public final int add(M message) {
        // Offer before counting: a consumer that sees the count can always poll the message.
        queue.offer(message);
        long word = incrementWip();
        long pending = word & COUNT_MASK;
        int bits = pending == 1 ? DRAIN_REQUIRED : 0;
        if (pending >= highWaterMark && (word & STATE_MASK) == STATE_WRITABLE) {
            bits |= markUnwritable(word);
        }
        return bits;
    }

    private int markUnwritable(long word) {
        // The consumer may have drained below the mark between our increment and this update.
        while ((word & COUNT_MASK) >= highWaterMark && (word & STATE_MASK) == STATE_WRITABLE) {
            if (casWip(word, word | STATE_UNWRITABLE)) {
                return UNWRITABLE;
            }
            word = wip();
        }
        return 0;
    }

    /**
     * Owner (consumer thread) only. Offers the parked message, then the queued ones in order, to
     * {@code consumer} until it refuses one or none is left. The pending count is decremented once per
     * round, by the number accepted; a round ends when the messages counted at its start (at most
     * 2<sup>32</sup> - 1) are offered.
     *
     * <p>{@code consumer} must not throw: a message it has been offered counts as accepted or parked by
     * its return value only.
     *
     * @return {@link #DRAIN_REQUIRED} if a message was refused (parked; the caller keeps the ownership
     *     and drains again when the consumer can accept), plus {@link #WRITABLE_AGAIN} if the pending
     *     count fell below the low-water mark after an {@link #UNWRITABLE} signal; 0 when the queue is
     *     empty and the ownership is given up
     */
    public final int drain(Predicate<? super M> consumer) {
        // a message counts as taken while the consumer holds it, so that waiting() leaves it out; every count this
        // drain writes carries its stamp, which the next owner's differ from (it reads drains after our increment)
        long stamp = (long) ++drains << STAMP_SHIFT;
        long accepted = 0;
        M message = parked;
        if (message != null) {
            TAKEN.lazySet(this, stamp | 1);
            if (!consumer.test(message)) {
                TAKEN.lazySet(this, stamp);
                return DRAIN_REQUIRED;
            }
            parked = null;
            accepted = 1;
        }
        int bits = 0;
        long pending = wip() & COUNT_MASK;
        while (true) {
            long round = Math.min(pending, MAX_ROUND);
            while (accepted < round) {
                message = queue.poll();
                assert message != null : "a counted message is always in the queue";
                TAKEN.lazySet(this, stamp | (accepted + 1));
                if (!consumer.test(message)) {
                    TAKEN.lazySet(this, stamp | accepted);
                    parked = message;
                    break;
                }
                accepted++;
            }
            // read before the decrement: once it brings the count to 0 the ownership is given up, and a next owner
            // may park a message of its own
            boolean refused = parked != null;
            long word = addWip(-accepted);
            pending = word & COUNT_MASK;
            // after the decrement: a reader that sees 0 here sees the decrement too, so it never counts the
            // round's messages as waiting. With the count at 0 a next owner may already have stored a count of its
            // own, perhaps an equal one: the stamp tells ours apart, so only ours is reset.
            if (pending != 0) {
                TAKEN.lazySet(this, stamp);
            } else {
                TAKEN.compareAndSet(this, stamp | accepted, stamp);
            }
            if ((word & STATE_MASK) == STATE_UNWRITABLE && pending < lowWaterMark) {
                bits |= markResuming(word);
            }
            if (refused) {
                return bits | DRAIN_REQUIRED;
            }
            if (pending == 0) {
                // The ownership is given up here: the producer's next add takes it.
                return bits;
            }
            accepted = 0;
        }
    }

    private int markResuming(long word) {
        // The producer may have added between our decrement and this update.
        while ((word & STATE_MASK) == STATE_UNWRITABLE && (word & COUNT_MASK) < lowWaterMark) {
            if (casWip(word, (word & COUNT_MASK) | STATE_RESUMING)) {
                return WRITABLE_AGAIN;
            }
            word = wip();
        }
        return 0;
    }

    /**
     * Owner (consumer thread) only. Hands every pending message, the parked one first, to
     * {@code disposer} (typically {@code ReferenceCountUtil::release}) and gives up the ownership.
     * Messages the producer adds meanwhile are disposed too, if this call counts them.
     *
     * @return {@link #WRITABLE_AGAIN} if the producer was told {@link #UNWRITABLE}, else 0
     */
    public final int clear(Consumer<? super M> disposer) {
        return drain(message -> {
            disposer.accept(message);
            return true;
        });
    }

    /**
     * Producer thread only, after a {@link #WRITABLE_AGAIN} signal reached it. Completes the signal.
     *
     * @return {@code true} if the producer should resume producing; {@code false} if the queue reached
     *     its high-water mark again while the signal travelled, so the producer stays paused and a new
     *     {@link #WRITABLE_AGAIN} will follow when the consumer drains below the low-water mark
     * @throws IllegalStateException if no {@link #WRITABLE_AGAIN} signal is outstanding
     */
    public final boolean acknowledgeWritable() {
        while (true) {
            long word = wip();
            if ((word & STATE_MASK) != STATE_RESUMING) {
                throw new IllegalStateException("no writable-again signal to acknowledge");
            }
            boolean full = (word & COUNT_MASK) >= highWaterMark;
            if (casWip(word, (word & COUNT_MASK) | (full ? STATE_UNWRITABLE : STATE_WRITABLE))) {
                return !full;
            }
        }
    }

    /**
     * The number of pending messages, the parked one included. Exact on the producer or the consumer
     * thread of the same-thread flavour; a snapshot from any thread in the cross-thread flavour. During a
     * drain it still counts the messages the round has handed to the consumer: see {@link #waiting()}.
     */
    public final long pending() {
        return wip() & COUNT_MASK;
    }

    /**
     * The messages not yet handed to the consumer, the parked one included: the pending count without those the
     * current round has taken (the one the consumer holds among them). Exact on the owner (consumer) thread and,
     * in the same-thread flavour, on the producer's; from another thread a snapshot that may count a message
     * handed over while it reads, or miss the ones written meanwhile, but never a round already handed over.
     */
    public final long waiting() {
        long t = taken & TAKEN_MASK; // first: a round's end lowers the count before it resets this (see drain)
        return Math.max(0, (wip() & COUNT_MASK) - t);
    }

    /** The low-water mark. */
    public final long lowWaterMark() {
        return lowWaterMark;
    }

    /** The high-water mark. */
    public final long highWaterMark() {
        return highWaterMark;
    }

    /** For tests: {@link #STATE_WRITABLE}, {@link #STATE_UNWRITABLE} or {@link #STATE_RESUMING}. */
    final long writabilityState() {
        return wip() & STATE_MASK;
    }

    /** The whole work-in-progress word. */
    abstract long wip();

    /** Adds 1 to the word and returns the new word. */
    abstract long incrementWip();

    /** Adds {@code delta} to the word and returns the new word. */
    abstract long addWip(long delta);

    /** Sets the word to {@code update} if it is {@code expect}. */
    abstract boolean casWip(long expect, long update);
}
