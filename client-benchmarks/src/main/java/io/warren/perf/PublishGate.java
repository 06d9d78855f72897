package io.warren.perf;

/**
 * The waits one producer makes before each publish, the same for every driver: the next slot of its
 * {@link Pacer}, then, with confirms, room in its {@link ConfirmTracker}'s window. Owned by the producer thread.
 *
 * <p>A slot taken is kept until a publish uses it: while the window is full the producer looks for room a slice at a
 * time (to see its stop flag), and each look does not take a slot of its own. A full window therefore delays the
 * publishes without shortening the schedule, the same for every client.
 */
final class PublishGate {

    /** How long one look for room in the window waits at most, so that the producer sees its stop flag. */
    static final long WAIT_SLICE_MILLIS = 100;

    private final Pacer pacer;
    private final ConfirmTracker confirms;
    private final long sliceMillis;
    // producer thread only: a slot of the pace taken and not yet used by a publish
    private boolean holdingSlot;

    /** {@code confirms} null: no confirm window, only the pace. */
    PublishGate(Pacer pacer, ConfirmTracker confirms) {
        this(pacer, confirms, WAIT_SLICE_MILLIS);
    }

    PublishGate(Pacer pacer, ConfirmTracker confirms, long sliceMillis) {
        this.pacer = pacer;
        this.confirms = confirms;
        this.sliceMillis = sliceMillis;
    }

    /**
     * Waits for the next slot of the pace (unless the last call took one and found no room), then up to one slice
     * for room in the window. True: publish now (the slot is used, the window's room taken). False: no room came
     * within the slice; the producer looks at its stop flag and calls again, and keeps its slot. Interrupts propagate.
     */
    boolean await() throws InterruptedException {
        if (!holdingSlot) {
            pacer.await();
            holdingSlot = true;
        }
        if (confirms != null && !confirms.acquire(sliceMillis)) {
            // taking the next slot on the next call would lose this one: one slot per look at a full window (about
            // one per 100 ms), a shorter schedule than a client's whose producer waits for the window in one go
            return false;
        }
        holdingSlot = false;
        return true;
    }
}
