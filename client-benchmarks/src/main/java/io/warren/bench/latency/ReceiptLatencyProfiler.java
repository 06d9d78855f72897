package io.warren.bench.latency;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * Puts the loopback peers' receipt latencies of each iteration into JMH's results, one secondary result per client,
 * {@code receipt.warren} and {@code receipt.amqp-client}: JMH then pools every measurement iteration of every fork
 * and prints {@code receipt.warren} (the mean) and {@code receipt.warren:p0.50} ... {@code receipt.warren:p0.999}
 * ... {@code receipt.warren:p1.00} beside the primary score, for each body size. Enable it with
 * {@code -prof io.warren.bench.latency.ReceiptLatencyProfiler}.
 *
 * <p>{@link RoundTripLatencyBenchmark} hands over each iteration's histograms at the iteration's end; JMH calls
 * {@link #afterIteration} after that, on its own thread. Other benchmarks hand over nothing and get no result.
 */
public final class ReceiptLatencyProfiler implements InternalProfiler {

    /** The secondary results' labels: this, a dot, and the client's name. */
    static final String LABEL = "receipt";

    private static final AtomicReference<Map<String, Histogram>> LAST_ITERATION = new AtomicReference<>();

    /** The label of {@code client}'s secondary result. */
    static String label(String client) {
        return LABEL + "." + client;
    }

    /**
     * Called by the benchmark at an iteration's end with that iteration's latencies in ns by client, in the order
     * they are to be reported (kept, not copied).
     */
    static void iterationEnded(Map<String, Histogram> latencies) {
        LAST_ITERATION.set(latencies);
    }

    /** The histograms the benchmark handed over last, or null; taken, so each is reported once. */
    static Map<String, Histogram> takeLastIteration() {
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
        Map<String, Histogram> latencies = takeLastIteration();
        if (latencies == null) {
            return List.of();
        }
        List<Result> results = new ArrayList<>();
        latencies.forEach((client, histogram) -> {
            if (histogram.getTotalCount() > 0) {
                results.add(new SampleTimeResult(
                        ResultRole.SECONDARY, label(client), samples(histogram), benchmarkParams.getTimeUnit()));
            }
        });
        return results;
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
