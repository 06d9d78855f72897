package io.warren.bench.latency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.SampleTimeResult;
import org.openjdk.jmh.runner.IterationType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * The round-trip benchmark's loop is correct for both clients: every message published is read whole by the peer,
 * one at a time, and has its receipt latency recorded; under JMH the profiler puts the peer's latencies into the
 * results. Correctness only: the figures belong to the benchmark.
 */
class RoundTripLatencyBenchmarkTest {

    private static final int MESSAGES = 300;

    @ParameterizedTest
    @CsvSource({"warren, 16", "warren, 1024", "amqp-client, 16", "amqp-client, 1024"})
    void everyMessageIsReadByThePeerBeforeTheNextIsPublished(String client, int bodySize) throws Exception {
        RoundTripLatencyBenchmark benchmark = new RoundTripLatencyBenchmark();
        benchmark.client = client;
        benchmark.bodySize = bodySize;
        benchmark.idleMicros = 100;
        benchmark.start();
        try {
            benchmark.startIteration();
            for (int i = 1; i <= MESSAGES; i++) {
                benchmark.idle();
                // the peer has read this message, and no other, when the call returns
                assertEquals(i, benchmark.publishAndAwaitReceipt(), client + " message " + i);
            }
            benchmark.endIteration(new IterationParams(IterationType.MEASUREMENT, 1, TimeValue.seconds(1), 1));
            Map<String, Histogram> latencies = ReceiptLatencyProfiler.takeLastIteration();
            assertNotNull(latencies, "the iteration's latencies are handed to the profiler");
            assertEquals(Set.of(client), latencies.keySet());
            assertEquals(MESSAGES, latencies.get(client).getTotalCount(), "one receipt recorded per message");
            assertEquals(
                    MESSAGES,
                    ReceiptLatencyProfiler.samples(latencies.get(client)).count());
        } finally {
            benchmark.stop();
        }
    }

    @Test
    void alternatingClientsTakeTurnsEachWithItsOwnPeer() throws Exception {
        RoundTripLatencyBenchmark benchmark = new RoundTripLatencyBenchmark();
        benchmark.client = RoundTripLatencyBenchmark.ALTERNATING;
        benchmark.bodySize = 16;
        benchmark.idleMicros = 100;
        benchmark.start();
        try {
            benchmark.startIteration();
            for (int i = 1; i <= MESSAGES; i++) {
                benchmark.idle();
                // odd messages are Warren's, even ones amqp-client's: each peer has read its client's messages alone
                assertEquals((i + 1) / 2, benchmark.publishAndAwaitReceipt(), "message " + i);
            }
            benchmark.endIteration(new IterationParams(IterationType.MEASUREMENT, 1, TimeValue.seconds(1), 1));
            Map<String, Histogram> latencies = ReceiptLatencyProfiler.takeLastIteration();
            assertNotNull(latencies, "the iteration's latencies are handed to the profiler");
            assertEquals(RoundTripClient.NAMES, List.copyOf(latencies.keySet()), "both clients, in a fixed order");
            for (String client : RoundTripClient.NAMES) {
                assertEquals(MESSAGES / 2, latencies.get(client).getTotalCount(), client + ": one receipt per message");
            }
        } finally {
            benchmark.stop();
        }
    }

    @Test
    void theNettyThreadExecutorRunsJmhWorkersOnNettyThreads() throws Exception {
        NettyThreadExecutor executor = new NettyThreadExecutor(1, "round-trip-test");
        try {
            assertTrue(executor.submit(() -> Thread.currentThread() instanceof FastThreadLocalThread)
                    .get(10, TimeUnit.SECONDS));
        } finally {
            executor.shutdown();
        }
    }

    @Test
    void underJmhTheReceiptPercentilesAreSecondaryResultsForEachClient() throws Exception {
        Collection<RunResult> runs = new Runner(new OptionsBuilder()
                        .include(RoundTripLatencyBenchmark.class.getName())
                        .param("bodySize", "16")
                        .param("client", RoundTripLatencyBenchmark.ALTERNATING, RoundTripClient.WARREN)
                        .forks(0)
                        .warmupIterations(0)
                        .measurementIterations(1)
                        .measurementTime(TimeValue.milliseconds(300))
                        .addProfiler(ReceiptLatencyProfiler.class)
                        .build())
                .run();
        Set<String> params = new HashSet<>();
        for (RunResult run : runs) {
            String param = run.getParams().getParam("client");
            params.add(param);
            List<String> clients =
                    RoundTripLatencyBenchmark.ALTERNATING.equals(param) ? RoundTripClient.NAMES : List.of(param);
            for (String client : clients) {
                String label = ReceiptLatencyProfiler.label(client);
                Result<?> receipt = run.getSecondaryResults().get(label);
                SampleTimeResult samples = assertInstanceOf(SampleTimeResult.class, receipt, param + ": " + label);
                assertTrue(samples.getSampleCount() > 0, "receipts recorded");
                assertNotNull(run.getSecondaryResults().get(label + ":p0.50"));
                assertNotNull(run.getSecondaryResults().get(label + ":p0.999"));
            }
            if (!RoundTripLatencyBenchmark.ALTERNATING.equals(param)) {
                assertNull(
                        run.getSecondaryResults().get(ReceiptLatencyProfiler.label(RoundTripClient.AMQP_CLIENT)),
                        "a single client's run reports that client alone");
            }
        }
        assertEquals(Set.of(RoundTripLatencyBenchmark.ALTERNATING, RoundTripClient.WARREN), params);
    }
}
