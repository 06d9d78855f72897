package io.warren.perf;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The shared recorders a {@link ClientDriver} reports into: counters and latency histograms. Every
 * method may be called from any thread, concurrently; none blocks and none allocates on the recording
 * side (HdrHistogram's {@link Recorder} resizes itself only when a value beyond its range first shows up).
 *
 * <p>The run reads them once per tick ({@link #counters()}, {@link #intervalConfirmLatency}): it never
 * resets a counter, it takes differences.
 */
public final class Metrics {

    // any thread: striped counters, so producers, the client's I/O threads and consumers don't contend
    private final LongAdder published = new LongAdder();
    private final LongAdder confirmed = new LongAdder();
    private final LongAdder nacked = new LongAdder();
    private final LongAdder returned = new LongAdder();
    private final LongAdder received = new LongAdder();
    private final AtomicInteger producersDone = new AtomicInteger();
    private final AtomicInteger consumersDone = new AtomicInteger();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    // any thread records; the run's ticker reads intervals (Recorder's writer-reader phaser)
    private final Recorder confirmLatency = new Recorder(3);
    private final Recorder consumerLatency = new Recorder(3);

    /** One message handed to the client for publishing. */
    public void published() {
        published.increment();
    }

    /** {@code n} messages handed to the client for publishing at once (a batch). */
    public void published(int n) {
        published.add(n);
    }

    /** {@code n} publishes confirmed by basic.ack. */
    public void confirmed(int n) {
        confirmed.add(n);
    }

    /** {@code n} publishes refused by basic.nack. */
    public void nacked(int n) {
        nacked.add(n);
    }

    /** One mandatory publish came back with basic.return. */
    public void returned() {
        returned.increment();
    }

    /** One publish confirmed {@code nanos} after it was handed to the client. */
    public void confirmLatency(long nanos) {
        confirmLatency.recordValue(Math.max(0, nanos));
    }

    /**
     * One delivery reached the application. {@code publishNanos} is the body's stamp
     * ({@link MessageBody#publishNanos}); {@link MessageBody#NO_STAMP} counts the delivery without a
     * latency sample.
     */
    public void received(long publishNanos) {
        received.increment();
        if (publishNanos != MessageBody.NO_STAMP) {
            consumerLatency.recordValue(Math.max(0, System.nanoTime() - publishNanos));
        }
    }

    /** A producer published its {@code --pmessages} and saw them confirmed (when confirming). */
    public void producerDone() {
        producersDone.incrementAndGet();
    }

    /** A consumer took its {@code --cmessages}. */
    public void consumerDone() {
        consumersDone.incrementAndGet();
    }

    /**
     * Something the run cannot go on with (a channel closed by the broker, a lost connection): the run
     * stops at its next tick and reports this. The first failure wins.
     */
    public void fail(Throwable cause) {
        failure.compareAndSet(null, cause);
    }

    /** The first failure reported, or null. */
    public Throwable failure() {
        return failure.get();
    }

    /** The counters now. */
    public Counters counters() {
        return new Counters(
                published.sum(),
                confirmed.sum(),
                nacked.sum(),
                returned.sum(),
                received.sum(),
                producersDone.get(),
                consumersDone.get());
    }

    /**
     * The confirm latencies (ns) recorded since the last call, in {@code recycle} (may be null) or a new
     * histogram; the run's ticker is the only caller.
     */
    Histogram intervalConfirmLatency(Histogram recycle) {
        return confirmLatency.getIntervalHistogram(recycle);
    }

    /** As {@link #intervalConfirmLatency} for consumer latencies. */
    Histogram intervalConsumerLatency(Histogram recycle) {
        return consumerLatency.getIntervalHistogram(recycle);
    }

    /** A consistent-enough reading of the counters (each one exact, read one after the other). */
    public record Counters(
            long published,
            long confirmed,
            long nacked,
            long returned,
            long received,
            int producersDone,
            int consumersDone) {}
}
