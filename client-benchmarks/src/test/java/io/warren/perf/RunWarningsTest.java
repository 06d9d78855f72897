package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/**
 * A run says what its figures measure besides the clients: consumers that fell behind (consumer latency is then
 * mostly the queue's), a hypervisor that took the machine's CPUs (the tails are then the host's).
 */
class RunWarningsTest {

    private static RunOptions options(int producers, int consumers) {
        return options(WarrenPerf.DEFAULT_URI, producers, consumers);
    }

    /** Run options to {@code uri} with {@code producers} and {@code consumers}, the rest the tool's defaults. */
    static RunOptions options(String uri, int producers, int consumers) {
        return new RunOptions(
                List.of(uri),
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
        return result(options, sent, received, timeline, stolenPercent, failure);
    }

    /** A 10 s Warren run that sent and received so many, over {@code timeline}. */
    static RunResult result(
            RunOptions options,
            long sent,
            long received,
            List<ProgressTicker.TimelinePoint> timeline,
            Double stolenPercent,
            String failure) {
        ResourceMeter.Usage usage = new ResourceMeter.Usage(
                1_000_000L, 1000L, 1, null, null, 0, 0, 0, 0, 10L, 5L, null, 0, stolenPercent, null, 0, null);
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
    void aRunThatMetStolenTimeIsSetAsideWhenItCompleted() {
        assertTrue(StolenReruns.setAside(run(options(1, 1), 100_000, 99_990, 12.0)));
        assertFalse(StolenReruns.setAside(run(options(1, 1), 100_000, 99_990, 0.5)), "a quiet run counts");
        assertFalse(
                StolenReruns.setAside(run(options(1, 1), 100_000, 99_990, 12.0, "connection refused")),
                "a failed run ends the leg, whatever the host did");
    }

    /** Runs handed out in order by {@link #next}; an Exception in the list is thrown instead. */
    private static final class Canned implements Callable<RunResult> {
        private final List<Object> runs;
        int calls;

        Canned(Object... runs) {
            this.runs = List.of(runs);
        }

        @Override
        public RunResult call() throws Exception {
            Object next = runs.get(calls++);
            if (next instanceof Exception e) {
                throw e;
            }
            return (RunResult) next;
        }
    }

    private static final StolenReruns.Listener QUIET = new StolenReruns.Listener() {
        @Override
        public void ran(RunResult run) {}

        @Override
        public void settingAside(RunResult run, int again, int reruns) {}
    };

    private static RunResult stolen() {
        return run(options(1, 1), 100_000, 99_990, 12.0);
    }

    private static RunResult quiet() {
        return run(options(1, 1), 100_000, 99_990, 0.5);
    }

    @Test
    void rerunsReplaceRunsThatMetStolenTimeUntilOneIsQuietOrNoneAreLeft() throws Exception {
        RunResult first = stolen();
        RunResult second = stolen();
        RunResult third = quiet();
        Canned runs = new Canned(first, second, third);
        StolenReruns.Series series = StolenReruns.run(runs, 2, () -> false, QUIET);
        assertSame(third, series.kept());
        assertEquals(List.of(first, second), series.setAside());
        assertEquals(3, runs.calls);

        Canned limited = new Canned(first, second, third);
        StolenReruns.Series used = StolenReruns.run(limited, 1, () -> false, QUIET);
        assertSame(second, used.kept(), "the last rerun counts, with its warning");
        assertEquals(List.of(first), used.setAside());
        assertEquals(2, limited.calls);

        Canned none = new Canned(first);
        assertSame(first, StolenReruns.run(none, 0, () -> false, QUIET).kept(), "--rerun-stolen 0: every run counts");
        Canned calm = new Canned(third, first);
        assertSame(third, StolenReruns.run(calm, 2, () -> false, QUIET).kept());
        assertEquals(1, calm.calls, "a quiet run is not run again");
    }

    @Test
    void aRerunThatFailsThrowsOrIsStoppedLeavesTheSetAsideRunKept() throws Exception {
        RunResult first = stolen();
        RunResult failed = run(options(1, 1), 100_000, 99_990, 0.5, "connection reset");
        StolenReruns.Series afterFailure = StolenReruns.run(new Canned(first, failed), 2, () -> false, QUIET);
        assertSame(first, afterFailure.kept(), "a complete measurement, not a failed one");
        assertSame(failed, afterFailure.failedRerun());
        assertEquals(List.of(), afterFailure.setAside());

        IllegalStateException refused = new IllegalStateException("broker gone");
        StolenReruns.Series afterThrow = StolenReruns.run(new Canned(first, refused), 2, () -> false, QUIET);
        assertSame(first, afterThrow.kept());
        assertSame(refused, afterThrow.thrown());

        AtomicBoolean stop = new AtomicBoolean();
        Canned stopped = new Canned(first, quiet());
        StolenReruns.Series afterStop = StolenReruns.run(
                () -> {
                    RunResult r = stopped.call();
                    stop.set(stopped.calls == 2); // Ctrl-C during the rerun
                    return r;
                },
                2,
                stop::get,
                QUIET);
        assertSame(first, afterStop.kept(), "a rerun cut short does not replace a complete run");
        assertNull(afterStop.failedRerun());
        assertNull(afterStop.thrown());
    }

    @Test
    void theListenerHearsEveryRunAndEverySettingAside() throws Exception {
        List<String> heard = new ArrayList<>();
        RunResult first = stolen();
        RunResult second = quiet();
        StolenReruns.run(new Canned(first, second), 3, () -> false, new StolenReruns.Listener() {
            @Override
            public void ran(RunResult run) {
                heard.add(run == first ? "ran first" : "ran second");
            }

            @Override
            public void settingAside(RunResult run, int again, int reruns) {
                heard.add("aside " + (run == first) + " " + again + " of " + reruns);
            }
        });
        assertEquals(List.of("ran first", "aside true 1 of 3", "ran second"), heard);
    }

    @Test
    void contextSwitchesPerMessageCountBothKinds() {
        RunResult r = run(options(1, 1), 100, 50);
        assertEquals(0.1, r.contextSwitchesPerMessage(), 1e-12, "15 switches over 150 publishes + deliveries");
    }

    /** Paced runs leave throughput out of the headline: a client that did not keep the pace is named. */
    @Test
    void aClientThatFellShortOfThePaceIsNamed() {
        Map<String, Object> kept = new java.util.HashMap<>(Map.of("client", "amqp-client", "sent_rate", 9_990.0));
        Map<String, Object> short_ = new java.util.HashMap<>(Map.of("client", "warren", "sent_rate", 6_000.0));
        List<String> clients = List.of("amqp-client", "warren");
        List<String> lines = WarrenPerf.belowPace(
                WarrenPerf.plan("-x", "1", "-y", "1", "-r", "10000").options(), List.of(kept, short_), clients);
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.get(0).startsWith("warren sent 6,000 msg/s, below the pace of 10,000"), lines.get(0));
        assertTrue(
                WarrenPerf.belowPace(
                                WarrenPerf.plan("-x", "1", "-y", "1", "-r", "-1")
                                        .options(),
                                List.of(kept, short_),
                                clients)
                        .isEmpty(),
                "unpaced: nothing to fall short of");
    }
}
