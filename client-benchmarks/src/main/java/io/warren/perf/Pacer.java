package io.warren.perf;

/**
 * Paces one producer to a fixed rate ({@code --rate}): each call to {@link #await()} returns at the next
 * slot of a fixed schedule. A producer that fell behind by more than one second restarts the schedule
 * from now instead of bursting to catch up. Owned by one producer thread; not thread-safe.
 */
public final class Pacer {

    private static final long MAX_LAG_NANOS = 1_000_000_000L;

    private final long intervalNanos;
    private final NanoClock clock;
    // producer thread only
    private long next;

    /** {@code ratePerSecond} of 0 or less means unpaced: {@link #await()} returns at once. */
    public Pacer(double ratePerSecond) {
        this(ratePerSecond, NanoClock.SYSTEM);
    }

    /** As {@link #Pacer(double)}, on {@code clock}'s time; the schedule starts at its reading now. */
    Pacer(double ratePerSecond, NanoClock clock) {
        this.intervalNanos = ratePerSecond > 0 ? Math.max(1, (long) (1e9 / ratePerSecond)) : 0;
        this.clock = clock;
        this.next = clock.nanoTime();
    }

    /** Whether this pacer limits the rate at all. */
    public boolean paced() {
        return intervalNanos > 0;
    }

    /** Waits for the next slot. An interrupt ends the wait early and stays set. */
    public void await() {
        if (intervalNanos == 0) {
            return;
        }
        long now = clock.nanoTime();
        if (now - next > MAX_LAG_NANOS) {
            next = now;
        }
        while (next - now > 0 && !Thread.currentThread().isInterrupted()) {
            clock.parkNanos(next - now);
            now = clock.nanoTime();
        }
        next += intervalNanos;
    }
}
