package io.warren.bench.latency;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ResultRole;
import org.openjdk.jmh.results.SampleTimeResult;
import org.openjdk.jmh.util.SampleBuffer;

/**
 * Puts the loopback peer's receipt latencies of each iteration into JMH's results, as the secondary result
 * {@code receipt}: JMH then pools every measurement iteration of every fork and prints {@code receipt} (the mean)
 * and {@code receipt:p0.50} ... {@code receipt:p0.999} ... {@code receipt:p1.00} beside the primary score, one row
 * per client and body size. Enable it with {@code -prof io.warren.bench.latency.ReceiptLatencyProfiler}.
 *
 * <p>{@link RoundTripLatencyBenchmark} hands over each iteration's histogram at the iteration's end; JMH calls
 * {@link #afterIteration} after that, on its own thread. Other benchmarks hand over nothing and get no result.
 */
public final class ReceiptLatencyProfiler implements InternalProfiler {

    /** The label of the secondary result. */
    static final String LABEL = "receipt";

    private static final AtomicReference<Histogram> LAST_ITERATION = new AtomicReference<>();

    /** Called by the benchmark at an iteration's end with that iteration's latencies in ns (kept, not copied). */
    static void iterationEnded(Histogram latencies) {
        LAST_ITERATION.set(latencies);
    }

    /** The histogram the benchmark handed over last, or null; taken, so each is reported once. */
    static Histogram takeLastIteration() {
        return LAST_ITERATION.getAndSet(null);
    }

    @Override
    public String getDescription() {
        return "the loopback peer's publish-to-receipt latency (RoundTripLatencyBenchmark)";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        LAST_ITERATION.set(null); // nothing left over from an iteration this profiler did not see end
    }

    @Override
    public List<? extends Result> afterIteration(
            BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
        Histogram latencies = takeLastIteration();
        if (latencies == null || latencies.getTotalCount() == 0) {
            return List.of();
        }
        return List.of(
                new SampleTimeResult(ResultRole.SECONDARY, LABEL, samples(latencies), benchmarkParams.getTimeUnit()));
    }

    /** The histogram's values (ns) as JMH's sample buffer, which keeps about three significant digits as well. */
    static SampleBuffer samples(Histogram latencies) {
        SampleBuffer buffer = new SampleBuffer();
        for (HistogramIterationValue v : latencies.recordedValues()) {
            long value = latencies.highestEquivalentValue(v.getValueIteratedTo());
            for (long i = v.getCountAtValueIteratedTo(); i > 0; i--) {
                buffer.add(value);
            }
        }
        return buffer;
    }
}
