package io.warren.perf;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Context switches per thread, from Linux's {@code /proc/self/task/<tid>/status} ({@code voluntary_ctxt_switches}:
 * the thread blocked or yielded; {@code nonvoluntary_ctxt_switches}: the scheduler preempted it). The JVM has no
 * API for them; {@code /proc/self/status} alone holds only the main thread's.
 */
final class ContextSwitches {

    private ContextSwitches() {}

    /** "tid name" -> {voluntary, involuntary} for every thread alive now; null without /proc. */
    static Map<String, long[]> perThread() {
        return ProcTasks.read((task, into) -> {
            long[] counts = new long[2];
            String name = "";
            for (String line : Files.readAllLines(task.resolve("status"), StandardCharsets.UTF_8)) {
                if (line.startsWith("Name:")) {
                    name = line.substring(5).trim();
                } else if (line.startsWith("voluntary_ctxt_switches:")) {
                    counts[0] = Long.parseLong(line.substring(24).trim());
                } else if (line.startsWith("nonvoluntary_ctxt_switches:")) {
                    counts[1] = Long.parseLong(line.substring(27).trim());
                }
            }
            into.put(task.getFileName() + " " + name, counts);
        });
    }

    /**
     * The switches of kind {@code which} (0 voluntary, 1 involuntary) between two readings, over the threads
     * alive at the end whose name {@code excluded} does not match (a thread new since the start counts from 0);
     * null when either reading is missing.
     */
    static Long since(Map<String, long[]> start, Map<String, long[]> end, Predicate<String> excluded, int which) {
        if (start == null || end == null) {
            return null;
        }
        long total = 0;
        for (Map.Entry<String, long[]> e : end.entrySet()) {
            String name = e.getKey().substring(e.getKey().indexOf(' ') + 1);
            if (excluded.test(name)) {
                continue;
            }
            long[] before = start.get(e.getKey());
            total += Math.max(0, e.getValue()[which] - (before == null ? 0 : before[which]));
        }
        return total;
    }
}
