package io.warren.perf;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * Reads the {@link Metrics} once per second on its own thread ({@code warren-progress}), prints one
 * progress line, keeps the timeline for the report and adds each second's latencies to the run's
 * totals; samples direct memory every 100 ms. All counts are relative to the reading taken by
 * {@link #start}. After {@link #finish} (which joins the thread) its results are read by the caller.
 */
final class ProgressTicker {

    private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long SECOND_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Metrics metrics;
    private final ResourceMeter meter;
    private final PrintStream out;
    private final String label;
    private final long copies;
    private final Thread thread;

    // ticker thread until finish() joined it, then the caller's
    private final Histogram confirmTotal = new Histogram(3);
    private final Histogram consumerTotal = new Histogram(3);
    private final List<TimelinePoint> timeline = new ArrayList<>();
    private Histogram confirmInterval;
    private Histogram consumerInterval;
    private Metrics.Counters baseline;
    private Metrics.Counters previous;
    private long startNanos;
    private long previousNanos;
    private long previousCpu;

    private volatile boolean stopped;
    /** Set by {@link #close()}: the thread, idle since {@link #finish}, ends. */
    private volatile boolean exit;
    /** Counted down by the thread once it has stopped ticking: the caller owns the fields from then on. */
    private final CountDownLatch idle = new CountDownLatch(1);

    /**
     * @param copies deliveries each publish makes (one per consumer's own queue, one for a shared queue); 0 when
     *     the run does not both publish and consume, so there is no backlog to follow
     */
    ProgressTicker(Metrics metrics, ResourceMeter meter, PrintStream out, String label, long copies) {
        this.metrics = metrics;
        this.meter = meter;
        this.out = out;
        this.label = label;
        this.copies = copies;
        // 15 characters: Linux keeps that much of a thread's name, and ResourceMeter tells this thread from the
        // producers' and consumers' (warren-perf-producer-N, ...) by it
        this.thread = new Thread(this::loop, "warren-progress");
        this.thread.setDaemon(true);
    }

    /** Takes the baseline reading at {@code nanos} and starts ticking. */
    void start(long nanos) {
        startNanos = nanos;
        previousNanos = nanos;
        previousCpu = meter.processCpuNanos();
        baseline = metrics.counters();
        previous = baseline;
        // latencies recorded before the start belong to no interval
        confirmInterval = metrics.intervalConfirmLatency(null);
        consumerInterval = metrics.intervalConsumerLatency(null);
        thread.start();
    }

    /**
     * Stops ticking and closes the last (possibly partial) interval at {@code nanos}, the run's end: its counts are
     * read first, so that nothing done after the end is counted. The thread stays, idle, until {@link #close()}: it
     * is one of the tool's threads, whose CPU the meter's reading at the end leaves out only while it lives.
     */
    void finish(long nanos) throws InterruptedException {
        Metrics.Counters atEnd = metrics.counters();
        stopped = true;
        LockSupport.unpark(thread);
        idle.await();
        if (nanos - previousNanos >= TICK_NANOS || timeline.isEmpty()) {
            tick(nanos, true, atEnd);
        } else {
            // too short to be a rate of its own: its counts and latencies still go to the totals
            collect(nanos, atEnd);
        }
    }

    /** Ends the thread, idle since {@link #finish} (or never started). */
    void close() throws InterruptedException {
        exit = true;
        LockSupport.unpark(thread);
        if (thread.isAlive()) {
            thread.join();
        }
    }

    /** Counts since {@link #start}, as of {@link #finish}. */
    Metrics.Counters totals() {
        Metrics.Counters c = previous;
        return new Metrics.Counters(
                c.published() - baseline.published(),
                c.confirmed() - baseline.confirmed(),
                c.nacked() - baseline.nacked(),
                c.returned() - baseline.returned(),
                c.received() - baseline.received(),
                c.producersDone(),
                c.consumersDone());
    }

    Histogram confirmLatency() {
        return confirmTotal;
    }

    Histogram consumerLatency() {
        return consumerTotal;
    }

    List<TimelinePoint> timeline() {
        return timeline;
    }

    /** The current counts since the start (for the run's stop conditions; any thread). */
    Metrics.Counters current() {
        Metrics.Counters c = metrics.counters();
        Metrics.Counters b = baseline;
        return new Metrics.Counters(
                c.published() - b.published(),
                c.confirmed() - b.confirmed(),
                c.nacked() - b.nacked(),
                c.returned() - b.returned(),
                c.received() - b.received(),
                c.producersDone(),
                c.consumersDone());
    }

    private void loop() {
        try {
            tickUntilStopped();
        } finally {
            idle.countDown();
        }
        while (!exit) {
            LockSupport.park(this);
        }
    }

    private void tickUntilStopped() {
        long nextSecond = startNanos + SECOND_NANOS;
        while (!stopped) {
            LockSupport.parkNanos(TICK_NANOS);
            if (stopped) {
                return;
            }
            meter.sampleDirect();
            long now = System.nanoTime();
            if (now - nextSecond >= 0) {
                tick(now, false, metrics.counters());
                nextSecond += SECOND_NANOS;
                if (now - nextSecond >= 0) {
                    nextSecond = now + SECOND_NANOS; // a stall (GC, a suspended machine): no burst of ticks
                }
            }
        }
    }

    private void tick(long now, boolean last, Metrics.Counters counters) {
        Metrics.Counters before = previous;
        double seconds = (now - previousNanos) / 1e9;
        long cpu = meter.processCpuNanos();
        double cpuPercent = cpu < 0 || previousCpu < 0 ? Double.NaN : (cpu - previousCpu) / 1e7 / seconds;
        previousCpu = cpu;
        collect(now, counters);
        Metrics.Counters c = previous;
        TimelinePoint point = new TimelinePoint(
                (now - startNanos) / 1e9,
                (c.published() - before.published()) / seconds,
                (c.confirmed() - before.confirmed()) / seconds,
                (c.received() - before.received()) / seconds,
                micros(confirmInterval, 50),
                micros(confirmInterval, 99),
                micros(consumerInterval, 50),
                micros(consumerInterval, 99),
                // absolute counts: what the warmup left in the queue is still waiting, and drains during the run
                copies == 0 ? Double.NaN : (double) c.published() * copies - c.received(),
                cpuPercent,
                meter.heapUsed() / 1048576.0);
        timeline.add(point);
        out.println(format(point, last));
    }

    private void collect(long now, Metrics.Counters counters) {
        previous = counters;
        previousNanos = now;
        confirmInterval = metrics.intervalConfirmLatency(confirmInterval);
        consumerInterval = metrics.intervalConsumerLatency(consumerInterval);
        confirmTotal.add(confirmInterval);
        consumerTotal.add(consumerInterval);
    }

    private String format(TimelinePoint p, boolean last) {
        StringBuilder line = new StringBuilder(160);
        line.append(label)
                .append(' ')
                .append(String.format(java.util.Locale.ROOT, "%6.1f s", p.seconds()))
                .append(last ? "*" : " ")
                .append(" | sent ")
                .append(Format.rate(p.sentRate()))
                .append(" | confirmed ")
                .append(Format.rate(p.confirmedRate()))
                .append(" | received ")
                .append(Format.rate(p.receivedRate()))
                .append(" | confirm latency p50/p99 ")
                .append(Format.micros(p.confirmP50Micros()))
                .append(" / ")
                .append(Format.micros(p.confirmP99Micros()))
                .append(" | consumer latency p50/p99 ")
                .append(Format.micros(p.consumerP50Micros()))
                .append(" / ")
                .append(Format.micros(p.consumerP99Micros()));
        if (!Double.isNaN(p.backlog())) {
            line.append(" | backlog ").append(Format.count((long) p.backlog()));
        }
        return line.toString();
    }

    /** The percentile of {@code h} in microseconds, or NaN without samples. */
    static double micros(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1000.0;
    }

    /**
     * One second of a run.
     *
     * @param seconds end of the interval, since the producers started
     * @param sentRate publishes per second
     * @param confirmedRate confirms per second
     * @param receivedRate deliveries per second
     * @param confirmP50Micros median confirm latency in the interval (NaN without samples), likewise the next three
     * @param backlog messages published but not yet received (each consumer's copy counted; the warmup's too), at
     *     the end of the interval: what waits in the client's and the broker's queues; NaN unless the run both
     *     publishes and consumes
     * @param cpuPercent the process's CPU time over the interval, in percent of one core (the in-process peer's
     *     threads and the tool's included)
     * @param heapMebibytes heap in use at the end of the interval
     */
    record TimelinePoint(
            double seconds,
            double sentRate,
            double confirmedRate,
            double receivedRate,
            double confirmP50Micros,
            double confirmP99Micros,
            double consumerP50Micros,
            double consumerP99Micros,
            double backlog,
            double cpuPercent,
            double heapMebibytes) {}
}
