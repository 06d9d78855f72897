package io.warren.perf;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The share of the machine's CPU time a hypervisor gave to other guests: the {@code steal} column of the {@code cpu}
 * line of Linux's {@code /proc/stat}. On a virtual machine whose host is busy, a runnable thread can wait
 * milliseconds for a CPU that the guest counts as its own; a paced run's latency tails then measure the host. Such
 * runs are told apart by this figure rather than by their tails.
 */
final class StolenTime {

    private static final Path STAT = Path.of("/proc/stat");

    /** The first eight columns after "cpu": user, nice, system, idle, iowait, irq, softirq, steal. */
    private static final int COLUMNS = 8;

    private StolenTime() {}

    /** {steal, total} in clock ticks since boot, all CPUs; null without a readable {@code /proc/stat}. */
    static long[] read() {
        return read(STAT);
    }

    static long[] read(Path stat) {
        // line by line, up to the machine's: the file goes on with a long line of interrupt counts
        try (BufferedReader lines = Files.newBufferedReader(stat, StandardCharsets.US_ASCII)) {
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                if (line.startsWith("cpu ")) {
                    return parse(line);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or not readable: the figure is not measured
        }
        return null;
    }

    /**
     * {steal, total} of a {@code cpu} line of {@code /proc/stat}: the steal column and the sum of the eight columns
     * that split the CPUs' time (the guest columns after them are already counted in user and nice). Null when the
     * line has fewer columns (a kernel without steal accounting).
     */
    static long[] parse(String cpuLine) {
        String[] f = cpuLine.trim().split("\\s+");
        if (f.length < COLUMNS + 1) {
            return null;
        }
        long total = 0;
        for (int i = 1; i <= COLUMNS; i++) {
            total += Long.parseLong(f[i]);
        }
        return new long[] {Long.parseLong(f[COLUMNS]), total};
    }

    /**
     * Fewest ticks (all CPUs, 10 ms each) between two readings for a percentage: the file counts whole ticks, so over
     * 500 a tick is 0.2 % and the 2 % warning is not two ticks' noise (a 2.5 s run on 2 CPUs).
     */
    static final long MIN_TICKS = 500;

    /**
     * The percentage of the CPU time between two readings that was stolen; null when either is missing or they are
     * fewer than {@link #MIN_TICKS} apart.
     */
    static Double percent(long[] start, long[] end) {
        if (start == null || end == null || end[1] - start[1] < MIN_TICKS) {
            return null;
        }
        return 100.0 * Math.max(0, end[0] - start[0]) / (end[1] - start[1]);
    }
}
