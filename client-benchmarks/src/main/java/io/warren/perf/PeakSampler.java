package io.warren.perf;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * The peaks of a few gauges (heap in use, direct memory, ...) while it runs: a daemon thread reads every gauge at a
 * fixed interval and keeps each one's largest value; {@link #record} adds a value seen elsewhere (a collection's
 * before-GC usage, say), so a peak between two samples is not missed. Made by the measuring thread, which closes it.
 */
public final class PeakSampler implements AutoCloseable {

    private final LongSupplier[] gauges;
    private final AtomicLongArray peaks;
    private final Thread sampler;
    private volatile boolean running = true;

    /**
     * Starts sampling now.
     *
     * @param threadName the sampling thread's name
     * @param intervalNanos how long the thread parks between two rounds of reads
     * @param gauges what to read, in the order {@link #peak(int)} numbers them
     */
    public PeakSampler(String threadName, long intervalNanos, LongSupplier... gauges) {
        this.gauges = gauges.clone();
        this.peaks = new AtomicLongArray(gauges.length);
        for (int i = 0; i < gauges.length; i++) {
            peaks.set(i, Long.MIN_VALUE); // nothing read yet
        }
        sample();
        sampler = new Thread(
                () -> {
                    while (running) {
                        sample();
                        LockSupport.parkNanos(intervalNanos);
                    }
                },
                threadName);
        sampler.setDaemon(true);
        sampler.start();
    }

    private void sample() {
        for (int i = 0; i < gauges.length; i++) {
            record(i, gauges[i].getAsLong());
        }
    }

    /** Counts {@code value} for gauge {@code i} as if sampled. Any thread. */
    public void record(int i, long value) {
        peaks.accumulateAndGet(i, value, Math::max);
    }

    /** The largest value of gauge {@code i} so far. */
    public long peak(int i) {
        return peaks.get(i);
    }

    /** Stops sampling (after one last round) and waits for the thread. */
    @Override
    public void close() throws InterruptedException {
        running = false;
        LockSupport.unpark(sampler);
        sampler.join();
        sample();
    }
}
