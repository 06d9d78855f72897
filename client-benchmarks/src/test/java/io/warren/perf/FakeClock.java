package io.warren.perf;

import java.util.concurrent.atomic.AtomicLong;

/** A test's {@link NanoClock}: time moves only when a producer sleeps on it or the test moves it. Any thread. */
final class FakeClock implements NanoClock {

    // far from 0, as System.nanoTime() may be: nothing may take 0 for "no time"
    private final AtomicLong now = new AtomicLong(7_000_000_000L);

    @Override
    public long nanoTime() {
        return now.get();
    }

    /** Sleeps exactly {@code nanos}: the time moves on by that much, at once. */
    @Override
    public void parkNanos(long nanos) {
        now.addAndGet(nanos);
    }

    void advance(long nanos) {
        now.addAndGet(nanos);
    }
}
