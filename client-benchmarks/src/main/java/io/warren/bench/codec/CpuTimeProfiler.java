package io.warren.bench.codec;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.IterationResultMetaData;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * CPU time per operation (ns/op), two ways: {@code cpu.time.norm}, the whole benchmark JVM (benchmark thread,
 * Warren's event loop, GC and JIT compiler threads), and {@code threads.cpu.time.norm}, the Java threads only
 * (no GC, no JIT: the code being measured, plus JMH's own threads). On a machine shared with other work the
 * ops/s of a short run swing with the scheduler; the CPU an operation costs moves much less, so a same-run
 * comparison of two sides is read more reliably from these figures. The threads-only figure leaves out the
 * garbage collection an allocating side causes, which flatters that side, and late JIT compilation, which
 * otherwise lands on whichever side is still warming up.
 *
 * <p>Use: {@code -prof io.warren.bench.codec.CpuTimeProfiler}.
 */
public final class CpuTimeProfiler implements InternalProfiler {

    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private long cpuAtStart;
    private final Map<Long, Long> threadCpuAtStart = new HashMap<>();

    @Override
    public String getDescription() {
        return "process CPU time per operation (ns/op)";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        cpuAtStart = os.getProcessCpuTime();
        threadCpuAtStart.clear();
        for (long id : threads.getAllThreadIds()) {
            threadCpuAtStart.put(id, threads.getThreadCpuTime(id));
        }
    }

    /**
     * The CPU the Java threads used since {@link #beforeIteration}: per thread, so that a thread ending in
     * between (its time is no longer readable) does not subtract what it had used before.
     */
    private long threadsCpuSinceStart() {
        long sum = 0;
        for (long id : threads.getAllThreadIds()) {
            long now = threads.getThreadCpuTime(id);
            if (now < 0) {
                continue;
            }
            Long before = threadCpuAtStart.get(id);
            sum += before == null || before < 0 ? now : now - before;
        }
        return sum;
    }

    @Override
    public Collection<? extends Result> afterIteration(
            BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
        long cpu = os.getProcessCpuTime() - cpuAtStart;
        long threadsCpu = threadsCpuSinceStart();
        IterationResultMetaData md = result.getMetadata();
        long ops = md == null ? 0 : md.getAllOps();
        if (ops == 0) {
            return List.of();
        }
        return List.of(
                new ScalarResult("cpu.time.norm", (double) cpu / ops, "ns/op", AggregationPolicy.AVG),
                new ScalarResult("threads.cpu.time.norm", (double) threadsCpu / ops, "ns/op", AggregationPolicy.AVG));
    }
}
