package io.warren.perf;

import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.management.GcInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.management.ThreadInfo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * What the client cost the JVM during the measured interval: CPU time, heap allocation, peak heap,
 * live heap after collections, peak direct memory, collections.
 *
 * <p>How each one is measured, and what it includes:
 * <ul>
 *   <li><b>CPU</b>: the process's CPU time ({@code OperatingSystemMXBean.getProcessCpuTime}, user +
 *       system, every thread including GC and JIT compiler threads) over the interval, less the CPU
 *       time of the tool's own threads that are not the client's work: the in-process loopback peer's
 *       ({@code warren-peer-*}) and the progress ticker ({@code warren-progress}), each read with
 *       {@code ThreadMXBean.getThreadCpuTime}. Producer threads are counted: publishing is the client's work.
 *       The JIT compiler's and the collector's threads' parts are told apart too ({@link VmThreadCpu}).
 *       Their share is also told apart ({@code warren-perf-producer-*}, the same way, of the threads alive at the
 *       end: a run whose producers ended before, with their counts, has no share): it holds the publish calls
 *       (with the socket write, and on loopback the kernel's delivery to the broker, where a client writes on the
 *       caller's thread) and the pacer's sleeps between them, the application's part of a paced run.</li>
 *   <li><b>Allocation</b>: {@code com.sun.management.ThreadMXBean.getTotalThreadAllocatedBytes()}, the
 *       heap bytes allocated by all threads, terminated ones included, over the interval, less what the
 *       same excluded threads allocated ({@code getThreadAllocatedBytes}). Direct (off-heap) buffers are
 *       not heap allocation and are not in it.</li>
 *   <li><b>Peak heap</b>: each heap {@link MemoryPoolMXBean}'s peak is reset at the start; at the end the
 *       peaks are added up. Pools peak at different moments, so this is an upper bound, and it follows
 *       the collector's sizing (the young generation fills before it is collected) as much as the
 *       client's needs.</li>
 *   <li><b>Live heap peak</b>: the largest heap occupancy right after a collection during the interval
 *       (GC notifications): what the client actually kept alive. Null when no collection happened.</li>
 *   <li><b>Context switches</b>: {@code voluntary_ctxt_switches} plus {@code nonvoluntary_ctxt_switches} of
 *       every thread in {@code /proc/self/task/}, less the tool's own threads (by their native names, the
 *       first 15 characters of the Java name), over the interval. A thread that ended during the interval is
 *       not in it (the client's event loops, producers and consumers live as long as the run). Null where
 *       there is no {@code /proc} (not Linux).</li>
 *   <li><b>Peak direct memory</b>: sampled every 100 ms ({@link DirectMemory#used()}): NIO direct buffers
 *       ({@code BufferPoolMXBean} "direct") plus what Netty allocated without a cleaner, less the in-process
 *       peer's (its own allocator). For a client not on Netty (amqp-client) Netty's allocators are left out
 *       ({@link DirectMemory#usedOutsideNetty()}): an earlier Warren run's pools stay for the JVM's life and are
 *       not that client's.</li>
 *   <li><b>Stolen time</b>: the machine's, not the process's ({@link StolenTime}): how much of the interval the
 *       hypervisor ran other guests on this machine's CPUs. It tells a run whose tails the host made apart.</li>
 *   <li><b>Broker CPU</b>: the CPU time of the run's RabbitMQ nodes ({@link BrokerCpu}), when they run on this
 *       machine; not the client's, and not in its CPU.</li>
 * </ul>
 * The thread this meter is created on calls {@link #start()} and {@link #stop()}; {@link #sampleDirect()}
 * runs on the progress ticker.
 */
final class ResourceMeter {

    private static final String PEER_THREADS = "warren-peer";
    // each within Linux's 15 characters of a native thread name, so /proc tells them apart from the client's threads
    private static final String[] EXCLUDED_THREADS = {PEER_THREADS, "warren-progress", PerfRun.RUN_THREAD};
    /** The tool's publishing threads, as both drivers name them. */
    private static final String PRODUCER_THREADS = "warren-perf-producer-";

    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private final List<MemoryPoolMXBean> heapPools = new ArrayList<>();
    private final Set<String> heapPoolNames = new HashSet<>();
    private final List<GarbageCollectorMXBean> collectors = ManagementFactory.getGarbageCollectorMXBeans();
    private final NotificationListener gcListener = this::onGc;

    // start/stop thread only
    private long cpuAtStart;
    private long allocatedAtStart;
    private Map<Long, long[]> excludedAtStart;
    private Map<Long, Long> producersAtStart;
    private Map<String, long[]> switchesAtStart;
    private Map<String, long[]> vmThreadsAtStart;
    /** The JIT's and GC's threads as last read (a stopped compiler thread keeps its last time); start/stop/ticker. */
    private final Map<String, long[]> vmThreadsSeen = new java.util.concurrent.ConcurrentHashMap<>();
    /** Direct memory samples so far: every tenth also reads the JIT's and GC's threads. Ticker only. */
    private int samples;

    private long gcCountAtStart;
    private long gcMillisAtStart;
    private long[] stolenAtStart;
    private long brokerAtStart;

    /** The local broker's nodes, or null when the run's broker is not on this machine. */
    private final BrokerCpu broker;

    // written by the ticker (direct) and by GC notification threads (live heap)
    private volatile long peakDirect;
    private volatile long liveHeapPeak = -1;
    private volatile boolean measuring;

    /** Whether the client allocates through Netty: else Netty's allocators are left out of its direct memory. */
    private final boolean onNetty;

    /** Whether an in-process peer's direct memory is left out of the client's. */
    private final boolean peerInProcess;

    /** A meter for a client on Netty, against a broker. */
    ResourceMeter(BrokerCpu broker) {
        this(broker, true, false);
    }

    /**
     * A meter that also reads {@code broker}'s CPU time (null: none), counts the direct memory of Netty's allocators
     * only when the client is {@code onNetty}, and leaves out the {@link LoopbackPeer}'s when {@code peerInProcess}.
     */
    ResourceMeter(BrokerCpu broker, boolean onNetty, boolean peerInProcess) {
        this.broker = broker;
        this.onNetty = onNetty;
        this.peerInProcess = peerInProcess;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP && pool.isValid()) {
                heapPools.add(pool);
                heapPoolNames.add(pool.getName());
            }
        }
        if (threads.isThreadCpuTimeSupported()) {
            threads.setThreadCpuTimeEnabled(true);
        }
        if (threads.isThreadAllocatedMemorySupported()) {
            threads.setThreadAllocatedMemoryEnabled(true);
        }
    }

    /** Starts measuring now. */
    void start() {
        for (GarbageCollectorMXBean gc : collectors) {
            if (gc instanceof NotificationEmitter emitter) {
                emitter.addNotificationListener(gcListener, null, null);
            }
        }
        heapPools.forEach(MemoryPoolMXBean::resetPeakUsage);
        liveHeapPeak = -1;
        peakDirect = directUsed();
        gcCountAtStart = gcCount();
        gcMillisAtStart = gcMillis();
        excludedAtStart = excludedThreads();
        producersAtStart = producerThreadsCpu();
        switchesAtStart = ContextSwitches.perThread();
        vmThreadsAtStart = VmThreadCpu.read();
        vmThreadsSeen.clear();
        // before the allocation and CPU readings: reading /proc/stat is the tool's work, not the client's
        stolenAtStart = StolenTime.read();
        brokerAtStart = broker == null ? -1 : broker.read();
        allocatedAtStart = totalAllocated();
        cpuAtStart = os.getProcessCpuTime();
        measuring = true;
    }

    /** Samples direct memory (progress ticker, every 100 ms), and once a second the JIT's and GC's threads. */
    void sampleDirect() {
        long used = directUsed();
        if (used > peakDirect) {
            peakDirect = used;
        }
        if (measuring && ++samples % 10 == 0) {
            seeVmThreads();
        }
    }

    private void seeVmThreads() {
        Map<String, long[]> now = VmThreadCpu.read();
        if (now != null) {
            // the larger time of a thread wins: a ticker's reading may land after the stop's newer one
            now.forEach((tid, v) -> vmThreadsSeen.merge(tid, v, (a, b) -> b[1] >= a[1] ? b : a));
        }
    }

    /** Stops measuring and returns the usage over the interval. */
    Usage stop() {
        long cpu = os.getProcessCpuTime();
        long allocated = totalAllocated();
        long[] stolen = StolenTime.read(); // after them, as at the start
        long brokerAtEnd = broker == null ? -1 : broker.read();
        measuring = false;
        Map<String, long[]> switchesAtEnd = ContextSwitches.perThread();
        seeVmThreads();
        VmThreadCpu.Split vmCpu = VmThreadCpu.since(vmThreadsAtStart, vmThreadsSeen.isEmpty() ? null : vmThreadsSeen);
        Map<Long, long[]> excludedAtEnd = excludedThreads();
        Map<Long, Long> producersAtEnd = producerThreadsCpu();
        sampleDirect();
        long excludedCpu = 0;
        long excludedAlloc = 0;
        long peerCpu = 0;
        long peerAlloc = 0;
        for (Map.Entry<Long, long[]> e : excludedAtEnd.entrySet()) {
            long[] before = excludedAtStart.getOrDefault(e.getKey(), new long[3]);
            long cpuDelta = Math.max(0, e.getValue()[0] - before[0]);
            long allocDelta = Math.max(0, e.getValue()[1] - before[1]);
            excludedCpu += cpuDelta;
            excludedAlloc += allocDelta;
            if (e.getValue()[2] == 1) {
                peerCpu += cpuDelta;
                peerAlloc += allocDelta;
            }
        }
        long peakHeap = 0;
        for (MemoryPoolMXBean pool : heapPools) {
            MemoryUsage peak = pool.getPeakUsage();
            if (peak != null) {
                peakHeap += peak.getUsed();
            }
        }
        for (GarbageCollectorMXBean gc : collectors) {
            if (gc instanceof NotificationEmitter emitter) {
                try {
                    emitter.removeNotificationListener(gcListener);
                } catch (javax.management.ListenerNotFoundException ignored) {
                    // never added: nothing to remove
                }
            }
        }
        Long cpuNanos = cpu < 0 || cpuAtStart < 0 ? null : Math.max(0, cpu - cpuAtStart - excludedCpu);
        Long producerCpuNanos = null;
        if (cpuNanos != null && threads.isThreadCpuTimeEnabled()) {
            long sum = 0;
            for (Map.Entry<Long, Long> e : producersAtEnd.entrySet()) {
                // a producer started after the start began at 0
                sum += Math.max(0, e.getValue() - producersAtStart.getOrDefault(e.getKey(), 0L));
            }
            producerCpuNanos = Math.min(sum, cpuNanos);
        }
        Long allocBytes = allocated < 0 || allocatedAtStart < 0
                ? null
                : Math.max(0, allocated - allocatedAtStart - excludedAlloc);
        long live = liveHeapPeak;
        return new Usage(
                cpuNanos,
                allocBytes,
                peakHeap,
                live < 0 ? null : live,
                DirectMemory.measured() ? peakDirect : null,
                gcCount() - gcCountAtStart,
                gcMillis() - gcMillisAtStart,
                peerCpu,
                peerAlloc,
                ContextSwitches.since(switchesAtStart, switchesAtEnd, ResourceMeter::excludedNative, 0),
                ContextSwitches.since(switchesAtStart, switchesAtEnd, ResourceMeter::excludedNative, 1),
                producerCpuNanos,
                producersAtEnd.size(),
                StolenTime.percent(stolenAtStart, stolen),
                brokerAtStart < 0 || brokerAtEnd < brokerAtStart ? null : brokerAtEnd - brokerAtStart,
                broker == null ? 0 : broker.nodes(),
                vmCpu);
    }

    /** The process's CPU time so far (every thread, the in-process peer's too), -1 when not measured. */
    long processCpuNanos() {
        return os.getProcessCpuTime();
    }

    /** Heap in use now (live and not yet collected). */
    long heapUsed() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Whether a native thread name (a Java name cut to 15 characters) is one of the tool's own threads. */
    static boolean excludedNative(String comm) {
        return excluded(comm);
    }

    private long totalAllocated() {
        return threads.isThreadAllocatedMemoryEnabled() ? threads.getTotalThreadAllocatedBytes() : -1;
    }

    /** Thread id -> {cpu ns, allocated bytes, 1 for a peer thread} of the threads that are the tool's, not the client's. */
    private Map<Long, long[]> excludedThreads() {
        Map<Long, long[]> result = new HashMap<>();
        long[] ids = threads.getAllThreadIds();
        ThreadInfo[] infos = threads.getThreadInfo(ids);
        for (int i = 0; i < ids.length; i++) {
            if (infos[i] != null && excluded(infos[i].getThreadName())) {
                long cpu = Math.max(0, threads.getThreadCpuTime(ids[i]));
                long alloc = Math.max(0, threads.getThreadAllocatedBytes(ids[i]));
                result.put(
                        ids[i], new long[] {cpu, alloc, infos[i].getThreadName().startsWith(PEER_THREADS) ? 1 : 0});
            }
        }
        return result;
    }

    /** Thread id -> CPU ns of the producer threads alive now. */
    private Map<Long, Long> producerThreadsCpu() {
        Map<Long, Long> result = new HashMap<>();
        long[] ids = threads.getAllThreadIds();
        ThreadInfo[] infos = threads.getThreadInfo(ids);
        for (int i = 0; i < ids.length; i++) {
            if (infos[i] != null && infos[i].getThreadName().startsWith(PRODUCER_THREADS)) {
                long cpu = threads.getThreadCpuTime(ids[i]);
                if (cpu >= 0) {
                    result.put(ids[i], cpu);
                }
            }
        }
        return result;
    }

    private static boolean excluded(String name) {
        for (String prefix : EXCLUDED_THREADS) {
            if (name.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private long directUsed() {
        if (!onNetty) {
            return DirectMemory.usedOutsideNetty(); // the peer's allocator is Netty's too
        }
        long used = DirectMemory.used();
        return peerInProcess ? Math.max(0, used - LoopbackPeer.directMemory()) : used;
    }

    private long gcCount() {
        long n = 0;
        for (GarbageCollectorMXBean gc : collectors) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    private long gcMillis() {
        long n = 0;
        for (GarbageCollectorMXBean gc : collectors) {
            n += Math.max(0, gc.getCollectionTime());
        }
        return n;
    }

    private void onGc(Notification notification, Object handback) {
        if (!measuring
                || !GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(notification.getType())) {
            return;
        }
        GcInfo info = GarbageCollectionNotificationInfo.from((CompositeData) notification.getUserData())
                .getGcInfo();
        long used = 0;
        for (Map.Entry<String, MemoryUsage> e : info.getMemoryUsageAfterGc().entrySet()) {
            if (heapPoolNames.contains(e.getKey())) {
                used += e.getValue().getUsed();
            }
        }
        synchronized (this) {
            if (used > liveHeapPeak) {
                liveHeapPeak = used;
            }
        }
    }

    /**
     * Usage over one measured interval; null where the JVM does not measure it.
     *
     * @param cpuNanos client CPU time
     * @param allocatedBytes client heap allocation
     * @param peakHeapBytes sum of the heap pools' peaks
     * @param liveHeapPeakBytes largest heap occupancy after a collection, null without a collection
     * @param peakDirectBytes largest direct memory in use (sampled)
     * @param gcCount collections during the interval
     * @param gcMillis time the collectors reported for them
     * @param peerCpuNanos CPU time of the in-process loopback peer's threads (left out of {@code cpuNanos})
     * @param peerAllocatedBytes heap allocated by the peer's threads (left out of {@code allocatedBytes})
     * @param voluntarySwitches the client's threads' voluntary context switches (they blocked), null without /proc
     * @param involuntarySwitches their involuntary ones (preempted), null without /proc
     * @param producerCpuNanos the part of {@code cpuNanos} spent in the producer threads alive at the end, null when
     *     not measured
     * @param producerThreadsAtEnd the producer threads alive at the end (one that ended before is not counted)
     * @param stolenPercent the machine's CPU time a hypervisor took over the interval, in per cent (all CPUs, every
     *     process: {@link StolenTime}); null without {@code /proc/stat}
     * @param brokerCpuNanos the CPU time of the run's RabbitMQ nodes over the interval ({@link BrokerCpu}); null when
     *     they are elsewhere or not readable, or a node stopped meanwhile
     * @param brokerNodes how many nodes that time is of
     * @param vmCpu the JIT compiler's and the garbage collector's threads' part of {@code cpuNanos}
     *     ({@link VmThreadCpu}), null without {@code /proc}
     */
    record Usage(
            Long cpuNanos,
            Long allocatedBytes,
            long peakHeapBytes,
            Long liveHeapPeakBytes,
            Long peakDirectBytes,
            long gcCount,
            long gcMillis,
            long peerCpuNanos,
            long peerAllocatedBytes,
            Long voluntarySwitches,
            Long involuntarySwitches,
            Long producerCpuNanos,
            int producerThreadsAtEnd,
            Double stolenPercent,
            Long brokerCpuNanos,
            int brokerNodes,
            VmThreadCpu.Split vmCpu) {}
}
