package io.warren.bench.codec;

import java.lang.management.ManagementFactory;
import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResultMetaData;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * The benchmark JVM's CPU time per operation ({@code cpu.time.norm}, ns/op), all its threads together: the
 * benchmark thread, Warren's event loop, GC and compiler threads. On a machine shared with other work the
 * ops/s of a short run swing with the scheduler; the CPU an operation costs moves much less, so a
 * same-run comparison of two sides is read more reliably from this figure.
 *
 * <p>Use: {@code -prof io.warren.bench.codec.CpuTimeProfiler}.
 */
public final class CpuTimeProfiler implements InternalProfiler {

    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private long cpuAtStart;

    @Override
    public String getDescription() {
        return "process CPU time per operation (ns/op)";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        cpuAtStart = os.getProcessCpuTime();
    }

    @Override
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams,
            IterationResult result) {
        long cpu = os.getProcessCpuTime() - cpuAtStart;
        IterationResultMetaData md = result.getMetadata();
        long ops = md == null ? 0 : md.getAllOps();
        if (ops == 0) {
            return List.of();
        }
        return List.of(new ScalarResult("cpu.time.norm", (double) cpu / ops, "ns/op", AggregationPolicy.AVG));
    }
}
