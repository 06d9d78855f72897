package io.warren.perf;

/**
 * The waits one producer makes before each publish, the same for every driver: the next slot of its
 * {@link Pacer}, then, with confirms, room in its {@link ConfirmTracker}'s window. Owned by the producer thread.
 */
final class PublishGate {

    /** How long one look for room in the window waits at most, so that the producer sees its stop flag. */
    static final long WAIT_SLICE_MILLIS = 100;

    private final Pacer pacer;
    private final ConfirmTracker confirms;
    private final long sliceMillis;

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
     * Waits for the next slot of the pace, then up to one slice for room in the window. True: publish now (the
     * window's room is taken). False: no room came within the slice; the producer looks at its stop flag and calls
     * again. Interrupts propagate.
     */
    boolean await() throws InterruptedException {
        pacer.await();
        return confirms == null || confirms.acquire(sliceMillis);
    }
}
