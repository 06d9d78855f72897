package io.warren.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;

/**
 * {@code --rerun-stolen N}: a run that met stolen time ({@link RunResult#stealWarning()}) is set aside and run again,
 * at most N times. A rerun that fails, throws or is stopped short ends the series, and the run before it is kept:
 * a set-aside run is a complete measurement, a cut-short one is not.
 */
final class StolenReruns {

    private StolenReruns() {}

    /** Hears each run as it completes, and each run as it is set aside ({@code again}: the rerun about to start). */
    interface Listener {
        void ran(RunResult run);

        void settingAside(RunResult run, int again, int reruns);
    }

    /**
     * What a series kept.
     *
     * @param kept the run for the tables: the last completed run
     * @param setAside the runs set aside before it, in the order run
     * @param failedRerun a rerun that completed with a failure (the leg ends), or null
     * @param thrown what a rerun threw (the leg ends with it), or null
     */
    record Series(RunResult kept, List<RunResult> setAside, RunResult failedRerun, Exception thrown) {}

    /**
     * Runs {@code once}, then again while the run kept met stolen time, {@code reruns} times at most and not after a
     * stop was requested. What the first run throws propagates: there is nothing to keep.
     */
    static Series run(Callable<RunResult> once, int reruns, BooleanSupplier stopRequested, Listener listener)
            throws Exception {
        RunResult kept = once.call();
        listener.ran(kept);
        List<RunResult> setAside = new ArrayList<>();
        for (int again = 1; again <= reruns && setAside(kept) && !stopRequested.getAsBoolean(); again++) {
            listener.settingAside(kept, again, reruns);
            RunResult rerun;
            try {
                rerun = once.call();
            } catch (Exception e) {
                return new Series(kept, List.copyOf(setAside), null, e);
            }
            listener.ran(rerun);
            if (rerun.failure() != null) {
                return new Series(kept, List.copyOf(setAside), rerun, null);
            }
            if (stopRequested.getAsBoolean()) {
                break; // cut short: the run before it stays
            }
            setAside.add(kept);
            kept = rerun;
        }
        return new Series(kept, List.copyOf(setAside), null, null);
    }

    /** Whether {@code run} is set aside when a rerun is left: it met stolen time and did not fail. */
    static boolean setAside(RunResult run) {
        return run.failure() == null && run.stealWarning() != null;
    }
}
