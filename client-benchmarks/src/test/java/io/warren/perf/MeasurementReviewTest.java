package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** How warren-perf measures and reports: each test failed before its fix (a review of the tool found them). */
class MeasurementReviewTest {

    private static RunOptions options(String uri, int producers, int consumers) {
        return RunWarningsTest.options(uri, producers, consumers);
    }

    /**
     * The backlog counts every consumer's copy, so the half second it is held against counts them too: before, it was
     * publishes per second, and 4 server-named queues each 0.2 s behind set the warning off.
     */
    @Test
    void theBacklogWarningHoldsEveryCopyAgainstHalfASecondOfDeliveries() {
        RunOptions o = options(WarrenPerf.DEFAULT_URI, 1, 4); // 4 consumers, one server-named queue each
        long sent = 100_000; // 10,000 msg/s over 10 s
        long perQueueBehind = 2_000; // each consumer 0.2 s behind its producer
        long received = sent * 4 - 4 * perQueueBehind;
        List<ProgressTicker.TimelinePoint> timeline = new ArrayList<>();
        for (int t = 1; t <= 10; t++) {
            double backlog = 4.0 * perQueueBehind; // steady, not growing
            timeline.add(new ProgressTicker.TimelinePoint(
                    t, sent / 10.0, 0, received / 10.0, Double.NaN, Double.NaN, 100, 200, backlog, 50, 20));
        }
        RunResult r = RunWarningsTest.result(o, sent, received, timeline, null, null);
        assertEquals(8_000L, r.backlogAtEnd());
        assertNull(
                r.backlogWarning(),
                "each queue is 0.2 s of publishing behind, under the half second the warning is about: "
                        + r.backlogWarning());
    }

    /** A driver that "publishes" every ~50 us on its own thread and keeps each publish's time. */
    static final class TimedDriver implements ClientDriver {
        final long[] stamps = new long[2_000_000];
        volatile int count;
        volatile boolean running = true;
        volatile long startedAt;
        volatile String runThread;
        Metrics metrics;
        Thread thread;

        @Override
        public String name() {
            return "timed";
        }

        @Override
        public String transport() {
            return "none";
        }

        @Override
        public void connect(RunOptions options, Metrics metrics) {
            this.metrics = metrics;
        }

        @Override
        public long declare() {
            return 0;
        }

        @Override
        public void startConsumers() {
            startedAt = System.nanoTime(); // after PerfRun took its start (no warm-up)
            runThread = Thread.currentThread().getName();
        }

        @Override
        public void startProducers() {
            thread = new Thread(
                    () -> {
                        while (running && count < stamps.length) {
                            stamps[count] = System.nanoTime(); // before the count: a conservative bound
                            metrics.published();
                            count++;
                            LockSupport.parkNanos(50_000);
                        }
                    },
                    "warren-perf-producer-0");
            thread.start();
        }

        @Override
        public void stop() throws Exception {
            running = false;
            thread.join();
        }

        @Override
        public void close() {
            running = false;
        }
    }

    /**
     * A run stopped by time counts what was done by its end: before, PerfRun took {@code end}, read the resources
     * ({@code meter.stop()}: /proc for every thread, ...) and only then the counters, while rates divide by
     * {@code end - start}.
     */
    @Test
    void aRunStoppedByTimeCountsNothingMadeAfterItsEnd() throws Exception {
        // a host that is not this machine: no broker process to look for
        RunOptions o = options("amqp://guest:guest@192.0.2.1:5672", 1, 0);
        PrintStream out = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        PerfRun perfRun = new PerfRun(o, 1, 0, "test", null, out, new PerfRun.StopSignal(), null);
        TimedDriver driver = new TimedDriver();
        RunResult r = perfRun.run(driver, 1);
        assertEquals("time", r.stoppedBy());
        assertEquals(PerfRun.RUN_THREAD, driver.runThread, "the run's own thread, which the meter leaves out");

        // start <= startedAt, so end = start + duration <= startedAt + duration
        long latestEnd = driver.startedAt + (long) (r.durationSeconds() * 1e9);
        int madeByEnd = 0;
        for (int i = 0; i < driver.count; i++) {
            if (driver.stamps[i] <= latestEnd) {
                madeByEnd++;
            }
        }
        assertTrue(
                r.totals().published() <= madeByEnd,
                "counted " + r.totals().published() + " publishes, of which only " + madeByEnd
                        + " were made by the end of the measured window (" + r.durationSeconds() + " s)");
    }

    /**
     * PerfRun's own thread (polling the stop conditions every 20 ms) is one of the tool's excluded threads: before,
     * the run ran on "main", whose switches and CPU were billed to the client. The run's thread is named so now.
     */
    @Test
    void theRunsOwnThreadIsNotCountedAsTheClients() {
        Map<String, long[]> start = new HashMap<>();
        Map<String, long[]> end = new HashMap<>();
        start.put("100 " + PerfRun.RUN_THREAD, new long[] {0, 0});
        end.put("100 " + PerfRun.RUN_THREAD, new long[] {500, 0}); // 10 s of stop.await(20)
        start.put("101 warren-progress", new long[] {0, 0});
        end.put("101 warren-progress", new long[] {100, 0});
        assertEquals(
                0L,
                ContextSwitches.since(start, end, ResourceMeter::excludedNative, 0),
                "the tool's threads' switches are not the client's");
    }

    /** 999.6 us prints as "1.0 ms" (before: "1000 us"), and 999,999.6 us as "1.00 s" (before: "1000.0 ms"). */
    @Test
    void aLatencyJustUnderAUnitBoundaryPrintsInTheNextUnit() {
        assertEquals("1.0 ms", Format.micros(999.6));
        assertEquals("1.00 s", Format.micros(999_999.6));
    }
}
