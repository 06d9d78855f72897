package io.warren.impl.consume;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * The application's demand in front of deliveries counted in flight ({@link SlotDispatch}): a delivery takes a
 * unit of it to start, and one that finds none is held until a fetch brings some. {@code Long.MAX_VALUE} is
 * unbounded and never taken from. Lock-free: the drain holds and takes, any thread adds, pauses and releases.
 *
 * @param <T> what is held (the dispatch's deliveries)
 */
final class DemandGate<T> {

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicLongFieldUpdater<DemandGate<?>> DEMAND =
            (AtomicLongFieldUpdater) AtomicLongFieldUpdater.newUpdater(DemandGate.class, "demand");

    // immutable
    private final Queue<T> held;

    // any thread (volatile, field updater)
    private volatile long demand;

    DemandGate(long initialDemand) {
        this(initialDemand, new ConcurrentLinkedQueue<>());
    }

    /** With {@code held} for what waits (a lock-free queue; tests pass one that stops inside poll). */
    DemandGate(long initialDemand, Queue<T> held) {
        this.demand = initialDemand;
        this.held = held;
    }

    /** Takes a unit of demand, if there is one. Any thread. */
    boolean take() {
        while (true) {
            long d = demand;
            if (d == 0) {
                return false;
            }
            if (d == Long.MAX_VALUE || DEMAND.compareAndSet(this, d, d - 1)) {
                return true;
            }
        }
    }

    /** Adds {@code amount} (positive) to the demand, saturating at unbounded. Any thread. */
    void add(long amount) {
        while (true) {
            long d = demand;
            long next = d + amount;
            if (next < 0 || d == Long.MAX_VALUE) {
                next = Long.MAX_VALUE;
            }
            if (next == d || DEMAND.compareAndSet(this, d, next)) {
                return;
            }
        }
    }

    /** No demand from now on. Any thread. */
    void pause() {
        demand = 0;
    }

    /**
     * Holds {@code d}, which found no demand. Returns whether there is demand now: an add racing with the hold
     * may have looked for held deliveries before this one was there, so the caller then {@link #release}s.
     */
    boolean hold(T d) {
        held.offer(d);
        return demand != 0;
    }

    /**
     * The next held delivery, with a unit of demand taken for it; null when none is held or there is no demand.
     * Any thread.
     */
    T release() {
        while (!held.isEmpty()) {
            if (!take()) {
                return null;
            }
            T d = held.poll();
            if (d != null) {
                return d;
            }
            // another thread took the one we saw: give the demand back and look again, since a delivery held
            // meanwhile saw no demand (we had it) and left its release to whoever holds the demand
            add(1);
        }
        return null;
    }

    /** The next held delivery whatever the demand (for disposal), or null. Any thread. */
    T poll() {
        return held.poll();
    }

    /** How many are held. Any thread. */
    long held() {
        return held.size();
    }
}
