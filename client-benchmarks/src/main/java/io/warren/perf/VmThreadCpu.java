package io.warren.perf;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Map;

/**
 * The CPU time of the JVM's own threads that are part of the client's CPU but not its code: the JIT compiler threads
 * ({@code C1 CompilerThread*}, {@code C2 CompilerThread*}) and the garbage collector's ({@code GC Thread#*} and G1's
 * {@code G1 *} threads), from Linux's {@code /proc/self/task/<tid>/stat} ({@code utime + stime}, in the kernel's
 * 10 ms ticks). The JVM lists neither among its threads. A run whose measured interval still holds compilations
 * pays for them in its CPU per message: this tells how much.
 *
 * <p>A compiler thread the JVM starts during the interval counts from 0; one it stops during the interval is lost
 * (HotSpot adds and removes compiler threads as their queue grows and shrinks), so the JIT share is a lower bound.
 */
final class VmThreadCpu {

    static final int JIT = 0;
    static final int GC = 1;

    private VmThreadCpu() {}

    /**
     * The JIT and GC parts of the client's CPU over an interval, in ns.
     *
     * @param jitNanos the compiler threads'
     * @param gcNanos the collector's threads'
     */
    record Split(long jitNanos, long gcNanos) {}

    /** "tid" -> {kind, CPU ns} of the JIT and GC threads alive now; null without /proc. */
    static Map<String, long[]> read() {
        return ProcTasks.read((task, into) -> {
            int kind = kind(Files.readString(task.resolve("comm"), StandardCharsets.US_ASCII)
                    .strip());
            if (kind >= 0) {
                String schedstat = Files.readString(task.resolve("schedstat"), StandardCharsets.US_ASCII);
                into.put(task.getFileName().toString(), new long[] {kind, runNanos(schedstat)});
            }
        });
    }

    /**
     * The time between two readings, of the threads in the later one (a thread in it that the earlier one lacks
     * counts from 0); null when either is missing. The later may merge several {@link #read}s, the newest last.
     */
    static Split since(Map<String, long[]> start, Map<String, long[]> end) {
        if (start == null || end == null) {
            return null;
        }
        long[] total = new long[2];
        for (Map.Entry<String, long[]> e : end.entrySet()) {
            long[] before = start.get(e.getKey());
            int kind = (int) e.getValue()[0];
            total[kind] += Math.max(0, e.getValue()[1] - (before == null ? 0 : before[1]));
        }
        return new Split(total[JIT], total[GC]);
    }

    /** {@link #JIT}, {@link #GC} or -1 for a native thread name (the first 15 characters of the Java name). */
    static int kind(String comm) {
        if (comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre")) {
            return JIT;
        }
        if (comm.startsWith("GC Thread#") || comm.startsWith("G1 ")) {
            return GC;
        }
        return -1;
    }

    /** The time on a CPU in a {@code schedstat} line ("run wait slices"): its first field, in ns. */
    static long runNanos(String schedstat) {
        String line = schedstat.strip();
        int space = line.indexOf(' ');
        return Long.parseLong(space < 0 ? line : line.substring(0, space));
    }
}
