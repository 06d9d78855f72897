package io.warren.bench.publish;

import com.sun.management.GarbageCollectionNotificationInfo;
import io.warren.perf.PeakSampler;
import io.warren.perf.ProcStat;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * What the scenario mains read from this JVM: bytes allocated by every live thread, process CPU time,
 * garbage collections, and the peak heap (sampled every millisecond and taken from every collection's
 * before-GC usage, so a peak between two samples is not missed).
 */
final class JvmMeter {

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private static final java.util.Set<String> HEAP_POOLS = new java.util.HashSet<>();

    static {
        for (java.lang.management.MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == java.lang.management.MemoryType.HEAP) {
                HEAP_POOLS.add(pool.getName());
            }
        }
    }

    private JvmMeter() {}

    /** Bytes allocated so far by all live threads (a thread that ended takes its count with it: keep them alive). */
    static long allocatedBytes() {
        long[] ids = THREADS.getAllThreadIds();
        long sum = 0;
        for (long b : THREADS.getThreadAllocatedBytes(ids)) {
            if (b > 0) {
                sum += b;
            }
        }
        return sum;
    }

    static long cpuNanos() {
        return OS.getProcessCpuTime();
    }

    /**
     * The part of the process CPU time spent in the kernel (Linux: {@code stime} of {@code /proc/self/stat}, in clock
     * ticks of 10 ms), or -1 where that file is not there. On loopback the sender's kernel time includes the TCP work
     * of the receiving side, the same for any client sending the same bytes.
     */
    static long systemCpuNanos() {
        try {
            long ticks = ProcStat.systemTicks(java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/stat")));
            return ticks < 0 ? -1 : ticks * ProcStat.NANOS_PER_TICK;
        } catch (java.io.IOException | RuntimeException e) {
            return -1;
        }
    }

    static long gcCount() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    static long gcMillis() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionTime());
        }
        return n;
    }

    static long heapUsed() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Heap used after full collections: the idle baseline. */
    static long settledHeap() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        return heapUsed();
    }

    /** Tracks the peak heap while running: sampled every millisecond, and each collection's before-GC usage. */
    static final class PeakHeap implements AutoCloseable {
        private final PeakSampler sampler = new PeakSampler("peak-heap-sampler", 1_000_000, JvmMeter::heapUsed);
        private final NotificationListener onGc;

        PeakHeap() {
            onGc = (notification, handback) -> {
                if (GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(notification.getType())) {
                    GarbageCollectionNotificationInfo info =
                            GarbageCollectionNotificationInfo.from((CompositeData) notification.getUserData());
                    long before = 0;
                    for (java.util.Map.Entry<String, MemoryUsage> e :
                            info.getGcInfo().getMemoryUsageBeforeGc().entrySet()) {
                        if (HEAP_POOLS.contains(e.getKey())) { // the map has the non-heap pools too
                            before += e.getValue().getUsed();
                        }
                    }
                    sampler.record(0, before);
                }
            };
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                ((NotificationEmitter) gc).addNotificationListener(onGc, null, null);
            }
        }

        long peak() {
            return sampler.peak(0);
        }

        @Override
        public void close() throws Exception {
            sampler.close();
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                ((NotificationEmitter) gc).removeNotificationListener(onGc);
            }
        }
    }
}
