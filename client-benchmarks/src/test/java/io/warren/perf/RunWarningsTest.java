package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/**
 * A run says what its figures measure besides the clients: consumers that fell behind (consumer latency is then
 * mostly the queue's), a hypervisor that took the machine's CPUs (the tails are then the host's).
 */
class RunWarningsTest {

    private static RunOptions options(int producers, int consumers) {
        return new RunOptions(
                List.of(WarrenPerf.DEFAULT_URI),
                producers,
                consumers,
                12,
                0,
                0,
                -1,
                -1,
                0,
                0,
                false,
                "",
                false,
                false,
                "rk",
                "direct",
                "direct",
                Map.of(),
                true,
                false);
    }

    /** A 10 s run: {@code sent} and {@code received} in total, the backlog rising linearly to its end value. */
    private static RunResult run(RunOptions options, long sent, long received) {
        return run(options, sent, received, null);
    }

    private static RunResult run(RunOptions options, long sent, long received, Double stolenPercent) {
        return run(options, sent, received, stolenPercent, null);
    }

    private static RunResult run(RunOptions options, long sent, long received, Double stolenPercent, String failure) {
        List<ProgressTicker.TimelinePoint> timeline = new ArrayList<>();
        for (int t = 1; t <= 10; t++) {
            double backlog = (sent * options.deliveriesPerPublish() - received) * t / 10.0;
            timeline.add(new ProgressTicker.TimelinePoint(
                    t, sent / 10.0, 0, received / 10.0, Double.NaN, Double.NaN, 100, 200, backlog, 50, 20));
        }
        ResourceMeter.Usage usage = new ResourceMeter.Usage(
                1_000_000L, 1000L, 1, null, null, 0, 0, 0, 0, 10L, 5L, null, 0, stolenPercent, null, 0);
        return new RunResult(
                null,
                "warren",
                "nio",
                1,
                options,
                "amqp://guest@localhost:5672",
                0,
                10.0,
                new Metrics.Counters(sent, 0, 0, 0, received, 0, 0),
                new Histogram(3),
                new Histogram(3),
                new Histogram(3),
                timeline,
                usage,
                null,
                "time",
                failure);
    }

    @Test
    void aGrowingBacklogIsWarnedAboutWithTheCounts() {
        RunResult r = run(options(1, 1), 417_000, 234_000);
        assertEquals(183_000L, r.backlogAtEnd());
        String warning = r.backlogWarning();
        assertTrue(
                warning != null
                        && warning.startsWith("the backlog grew from 91,500 mid-run to 183,000 at the end "
                                + "(sent 417,000, received 234,000)"),
                warning);
        assertTrue(warning.contains("consumer latency includes the wait in that queue"), warning);
        assertEquals(warning, r.toJson().get("backlog_warning"));
    }

    @Test
    void consumersThatKeepUpAreNotWarnedAbout() {
        RunResult r = run(options(1, 1), 100_000, 99_990);
        assertEquals(10L, r.backlogAtEnd());
        assertNull(r.backlogWarning());
    }

    @Test
    void everyConsumersCopyCountsAndOneSidedRunsHaveNoBacklog() {
        assertEquals(0L, run(options(1, 2), 50_000, 100_000).backlogAtEnd(), "two server-named queues, two copies");
        assertNull(run(options(1, 0), 50_000, 0).backlogAtEnd(), "publishing alone leaves nothing to compare");
        assertNull(run(options(1, 0), 50_000, 0).backlogWarning());
    }

    @Test
    void aRunWhoseHostTookTheCpusIsWarnedAbout() {
        RunResult r = run(options(1, 1), 100_000, 99_990, 12.34);
        String warning = r.stealWarning();
        assertTrue(
                warning != null && warning.startsWith("the hypervisor took 12.3 % of this machine's CPU time"),
                warning);
        assertEquals(12.34, r.toJson().get("steal_percent"));
        assertEquals(warning, r.toJson().get("steal_warning"));
    }

    @Test
    void aQuietHostOrNoFigureIsNotWarnedAbout() {
        assertNull(run(options(1, 1), 100_000, 99_990, 1.9).stealWarning());
        assertTrue(run(options(1, 1), 100_000, 99_990, 2.0).stealWarning() != null);
        RunResult unmeasured = run(options(1, 1), 100_000, 99_990, null);
        assertNull(unmeasured.stealWarning());
        assertNull(unmeasured.toJson().get("steal_percent"));
    }

    @Test
    void aRunThatMetStolenTimeIsSetAsideWhileRerunsAreLeft() {
        RunResult robbed = run(options(1, 1), 100_000, 99_990, 12.0);
        assertTrue(WarrenPerf.setAside(robbed, 1));
        assertFalse(WarrenPerf.setAside(robbed, 0), "no rerun left: it counts, with its warning");
        assertFalse(WarrenPerf.setAside(run(options(1, 1), 100_000, 99_990, 0.5), 3), "a quiet run counts");
        assertFalse(
                WarrenPerf.setAside(run(options(1, 1), 100_000, 99_990, 12.0, "connection refused"), 3),
                "a failed run ends the leg, whatever the host did");
    }

    @Test
    void contextSwitchesPerMessageCountBothKinds() {
        RunResult r = run(options(1, 1), 100, 50);
        assertEquals(0.1, r.contextSwitchesPerMessage(), 1e-12, "15 switches over 150 publishes + deliveries");
    }
}
