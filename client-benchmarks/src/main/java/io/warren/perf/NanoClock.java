package io.warren.perf;

import java.util.concurrent.locks.LockSupport;

/**
 * The time a producer reads and the sleep it takes: the JVM's {@link #SYSTEM} in a run, a test's own clock in a
 * test, so that pacing and stamping can be checked without waiting for real time to pass.
 */
interface NanoClock {

    /** {@link System#nanoTime()} and {@link LockSupport#parkNanos(long)}. */
    NanoClock SYSTEM = new NanoClock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void parkNanos(long nanos) {
            LockSupport.parkNanos(nanos);
        }
    };

    /** As {@link System#nanoTime()}: only differences between two readings mean anything. */
    long nanoTime();

    /** Sleeps up to {@code nanos}; may return early (an interrupt, a spurious wake-up), as {@code parkNanos}. */
    void parkNanos(long nanos);
}
