package io.warren.perf;

/**
 * The fields of a Linux {@code /proc/<pid>/stat} line that the tools read, and the unit of its times. The command
 * name (field 2) is in parentheses and may hold spaces and parentheses itself, so fields are counted from the last
 * ')'.
 */
public final class ProcStat {

    /**
     * Nanoseconds per tick of a process's times: Linux reports them in USER_HZ ticks, which its ABI fixes at 100 per
     * second on the architectures the JDK runs on.
     */
    public static final long NANOS_PER_TICK = 10_000_000L;

    private ProcStat() {}

    /** utime + stime (fields 14 and 15), in ticks; -1 when the line has too few fields. */
    public static long cpuTicks(String stat) {
        String[] f = afterName(stat);
        return f.length < 13 ? -1 : Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** stime (field 15): the time spent in the kernel, in ticks; -1 when the line has too few fields. */
    public static long systemTicks(String stat) {
        String[] f = afterName(stat);
        return f.length < 13 ? -1 : Long.parseLong(f[12]);
    }

    /** The process's start time (field 22), which tells a reused process number apart; -1 when missing. */
    public static long startTime(String stat) {
        String[] f = afterName(stat);
        return f.length < 20 ? -1 : Long.parseLong(f[19]);
    }

    /** The fields from the state (field 3) on; empty without a name in parentheses. */
    private static String[] afterName(String stat) {
        int close = stat.lastIndexOf(')');
        return close < 0 ? new String[0] : stat.substring(close + 1).trim().split("\\s+");
    }
}
