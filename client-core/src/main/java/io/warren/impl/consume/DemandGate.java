package io.warren.impl.consume;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * The application's demand in front of deliveries counted in flight ({@link SlotDispatch}): a delivery takes a
 * unit of it to start, and one that finds none is held until a fetch brings some. Lock-free: the drain holds and
 * takes, any thread adds, pauses, gives back and releases.
 *
 * <p>A unit taken may be given back (its delivery was lost with its channel, or a release found nothing to poll),
 * but not over a pause made since: pause() means no delivery from then on until a fetch, and a unit given back
 * after it would start one. So the demand shares one long with a pause epoch, updated together by CAS: the high
 * 16 bits count pauses (wrapping), the rest is the demand, all ones for unbounded (never taken from, so taking it
 * is a volatile read). A taker keeps the epoch it took under ({@link Taker}), and its give-back adds 1 only while
 * the epoch is unchanged. The epoch wraps after 65,536 pauses; a give-back is then wrongly kept only if a multiple
 * of that many pauses fell between its take and its give-back.
 *
 * @param <T> what is held (the dispatch's deliveries)
 */
final class DemandGate<T extends DemandGate.Taker> {

    /** What takes a unit of demand: keeps the epoch it took it under, for giving it back. */
    interface Taker {

        /** Set by the thread that took the unit, before it hands the taker on. */
        void demandEpoch(int epoch);

        /** Read by the thread that gives the unit back, after the hand-over. */
        int demandEpoch();
    }

    private static final int EPOCH_BITS = 16;
    private static final int DEMAND_BITS = Long.SIZE - EPOCH_BITS;
    private static final long EPOCH_ONE = 1L << DEMAND_BITS;
    /** The demand's bits; all ones is unbounded. */
    private static final long DEMAND = EPOCH_ONE - 1;

    private static final long UNBOUNDED = DEMAND;

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicLongFieldUpdater<DemandGate<?>> STATE =
            (AtomicLongFieldUpdater) AtomicLongFieldUpdater.newUpdater(DemandGate.class, "state");

    // immutable
    private final Queue<T> held;

    // any thread (volatile, field updater): pause epoch << DEMAND_BITS | demand
    private volatile long state;

    /** {@code initialDemand} not negative, saturating at unbounded ({@code Long.MAX_VALUE} is unbounded). */
    DemandGate(long initialDemand) {
        this(initialDemand, new ConcurrentLinkedQueue<>());
    }

    /** With {@code held} for what waits (a lock-free queue; tests pass one that stops inside poll). */
    DemandGate(long initialDemand, Queue<T> held) {
        this.state = Math.min(initialDemand, UNBOUNDED);
        this.held = held;
    }

    /** Takes a unit of demand for {@code t}, if there is one, and gives {@code t} its epoch. Any thread. */
    boolean take(T t) {
        int epoch = take();
        if (epoch < 0) {
            return false;
        }
        t.demandEpoch(epoch);
        return true;
    }

    /** Takes a unit of demand; returns the epoch it was taken under, or -1 for none. */
    private int take() {
        while (true) {
            long s = state;
            long d = s & DEMAND;
            if (d == 0) {
                return -1;
            }
            if (d == UNBOUNDED || STATE.compareAndSet(this, s, s - 1)) {
                return epoch(s);
            }
        }
    }

    /** Gives back the unit {@code t} took, unless a pause came since. Any thread. */
    void giveBack(T t) {
        giveBack(t.demandEpoch());
    }

    private void giveBack(int epoch) {
        while (true) {
            long s = state;
            if (epoch(s) != epoch || (s & DEMAND) == UNBOUNDED) {
                return; // paused since (the unit went with the pause), or unbounded (never taken from)
            }
            if (STATE.compareAndSet(this, s, s + 1)) { // below unbounded, so no carry into the epoch
                return;
            }
        }
    }

    /** Adds {@code amount} (positive) to the demand, saturating at unbounded. Any thread. */
    void add(long amount) {
        while (true) {
            long s = state;
            long d = s & DEMAND;
            long next = amount >= UNBOUNDED - d ? UNBOUNDED : d + amount;
            if (next == d || STATE.compareAndSet(this, s, s - d + next)) {
                return;
            }
        }
    }

    /** No demand from now on; units taken before it are not given back. Any thread. */
    void pause() {
        while (true) {
            long s = state;
            if (STATE.compareAndSet(this, s, (s & ~DEMAND) + EPOCH_ONE)) { // the epoch wraps
                return;
            }
        }
    }

    /**
     * Holds {@code d}, which found no demand. Returns whether there is demand now: an add racing with the hold
     * may have looked for held deliveries before this one was there, so the caller then {@link #release}s.
     */
    boolean hold(T d) {
        held.offer(d);
        return (state & DEMAND) != 0;
    }

    /**
     * The next held delivery, with a unit of demand taken for it (its epoch given to it); null when none is held
     * or there is no demand. Any thread.
     */
    T release() {
        while (!held.isEmpty()) {
            int epoch = take();
            if (epoch < 0) {
                return null;
            }
            T d = held.poll();
            if (d != null) {
                d.demandEpoch(epoch);
                return d;
            }
            // another thread took the one we saw: give the demand back (unless paused since) and look again, since
            // a delivery held meanwhile saw no demand (we had it) and left its release to whoever holds the demand
            giveBack(epoch);
        }
        return null;
    }

    /** The next held delivery whatever the demand (for disposal), or null. Any thread. */
    T poll() {
        return held.poll();
    }

    /** Whether any is held. Any thread. */
    boolean anyHeld() {
        return !held.isEmpty();
    }

    /** How many are held. Any thread. */
    long held() {
        return held.size();
    }

    private static int epoch(long state) {
        return (int) (state >>> DEMAND_BITS);
    }
}
