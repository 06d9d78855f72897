package io.warren.bench.consume;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;

/** This JVM's process CPU time and the heap bytes its live threads (or some of them, by name) allocated. */
final class JvmMeter {

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private JvmMeter() {}

    static long cpuNanos() {
        return OS.getProcessCpuTime();
    }

    /** Bytes allocated so far by all threads, ended ones included. */
    static long allocatedBytes() {
        return THREADS.getTotalThreadAllocatedBytes();
    }

    /** Bytes allocated so far by the live threads whose name starts with {@code prefix}. */
    static long allocatedBytes(String prefix) {
        long[] all = THREADS.getAllThreadIds();
        ThreadInfo[] infos = THREADS.getThreadInfo(all);
        long[] matching = new long[all.length];
        int n = 0;
        for (ThreadInfo info : infos) {
            if (info != null && info.getThreadName().startsWith(prefix)) {
                matching[n++] = info.getThreadId();
            }
        }
        return sum(java.util.Arrays.copyOf(matching, n));
    }

    private static long sum(long[] ids) {
        long sum = 0;
        for (long b : THREADS.getThreadAllocatedBytes(ids)) {
            if (b > 0) {
                sum += b;
            }
        }
        return sum;
    }
}
