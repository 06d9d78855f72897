package io.warren.bench.latency;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * Round-trip latency of one publish against the built-in loopback peer (no broker noise), Warren beside
 * amqp-client: from the publish call to the peer's receipt of the message's body frame, with the caller idle
 * between messages as in a paced service. No confirms.
 *
 * <p>Each invocation publishes ONE message and waits (parked, in 10 us slices: a spinning caller would keep the
 * peer's thread, woken on the caller's core, off the CPU) until the peer has read it; before the next, the caller
 * parks for {@code idleMicros} (JMH's per-invocation setup, not timed), so the client's threads go idle between
 * messages as they do in a service publishing now and then. One message is in flight at a time: nothing queues.
 *
 * <p><b>Both clients in the same seconds.</b> By default ({@code client=alternating}) one JVM holds both clients,
 * each with a loopback peer of its own, and the invocations take turns: Warren's message, amqp-client's, Warren's...
 * The tail of this figure is the kernel's: the slowest 1 % are the messages whose peer thread the kernel woke on the
 * other core rather than preempting the writer on its own, and a wake-up there waits for whatever that core runs
 * (a broker, a build, another benchmark). On a shared machine that background changes from one minute to the next,
 * so two rows measured minutes apart (one client, then the other) differed at p99 and p99.9 by more than the
 * clients do; taking turns message by message gives both the same background, the same GCs (the JVM's, whichever
 * client made the garbage) and the same JIT state. {@code -p client=warren} or {@code -p client=amqp-client}
 * measures one alone.
 *
 * <p><b>What is measured, and why HdrHistogram rather than JMH's own SampleTime.</b> The figure is the peer's: the
 * body carries {@code System.nanoTime()} taken right before the client's publish call, and the peer's event loop
 * subtracts it from its own {@code System.nanoTime()} when it handles the body frame (the message is complete: each
 * body fits in one frame), recording into its HdrHistogram {@code Recorder}. That is exactly publish call to
 * receipt. JMH's SampleTime (the primary score, kept as the caller's view) times the whole invocation on the caller
 * thread: it adds the time the caller takes to notice the receipt and to wake from its park, which
 * says more about the waiting than about the client (and with {@code client=alternating} it mixes both clients).
 * Each peer's histogram of each iteration goes to JMH as the secondary result {@code receipt.<client>} through
 * {@link ReceiptLatencyProfiler}, so JMH pools the percentiles of every measurement iteration of every fork into its
 * table; each fork also prints its trial's p50/p99/p99.9/max per client.
 *
 * <p><b>Where the peers run.</b> In this JVM, each on its own event loop thread ({@code warren-peer-*}), not in a
 * {@code PeerProcess}: the receipt histogram and the receipt count are read in process (the peer's public API), and
 * the stamp and the peer's clock are the same {@code System.nanoTime()}. The peer makes no garbage per message
 * (pooled buffers; its recorder only grows to the largest latency seen), so it adds no GC to the client's JVM; but
 * JVM-wide profilers count its threads too ({@code -prof gc} counts every thread), so read allocation from
 * PublishAllocationBenchmark, whose peer runs in a JVM of its own.
 *
 * <p>The caller is JMH's worker, a plain {@code java.lang.Thread}, as in most applications (Netty's pooled allocator
 * keeps no thread cache for it: Warren's body buffer objects are allocated, not recycled); {@link NettyThreadExecutor}
 * makes it a Netty thread instead. Run (about 2.5 minutes):
 *
 * <pre>
 * java -jar client-benchmarks/target/benchmarks.jar RoundTripLatencyBenchmark \
 *     -prof io.warren.bench.latency.ReceiptLatencyProfiler -f 2 -wi 3 -i 5 -w 2s -r 5s
 * </pre>
 *
 * Read the {@code :receipt.warren:p0.50}, {@code :receipt.amqp-client:p0.50} and {@code :p0.999} rows (us).
 * {@code -p idleMicros=N} sets the idle time (a park: the OS's timer slack, 50 us on Linux, comes on top). Both clients write each message to the socket on the
 * caller's thread here: amqp-client always, Warren because the connection is idle for longer than its caller-write
 * gap.
 */
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 5)
@Fork(
        value = 2,
        jvmArgsAppend = {"-Dio.netty.leakDetection.level=disabled"})
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class RoundTripLatencyBenchmark {

    /** The {@code client} that measures both clients in the same seconds, one message each in turn. */
    public static final String ALTERNATING = "alternating";

    /** Both clients, one message each in turn ({@value #ALTERNATING}), or one client alone. */
    @Param({ALTERNATING})
    public String client;

    /** Body bytes: the 12-byte stamp, then zeros. */
    @Param({"16", "1024"})
    public int bodySize;

    /** How long the caller is idle (parked) between one message's receipt and the next publish. */
    @Param({"100"})
    public int idleMicros;

    /** The clients measured, and each one's loopback peer. */
    private String[] names;

    private RoundTrip[] roundTrips;
    /** Invocations so far: this one publishes with {@code roundTrips[invocations % roundTrips.length]}. */
    private long invocations;

    private long idleNanos;
    /** Each client's measurement iterations of this trial (one fork), for the lines printed at its end. */
    private Histogram[] trial;

    @Setup(Level.Trial)
    public void start() throws Exception {
        names = ALTERNATING.equals(client) ? RoundTripClient.NAMES.toArray(String[]::new) : new String[] {client};
        roundTrips = new RoundTrip[names.length];
        trial = new Histogram[names.length];
        try {
            for (int i = 0; i < names.length; i++) {
                roundTrips[i] = RoundTrip.start(names[i], bodySize);
                trial[i] = new Histogram(3);
            }
        } catch (Exception | Error e) {
            try {
                closeAll();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        idleNanos = TimeUnit.MICROSECONDS.toNanos(idleMicros);
    }

    @Setup(Level.Iteration)
    public void startIteration() {
        for (RoundTrip roundTrip : roundTrips) {
            roundTrip.intervalLatency(null); // an iteration counts only its own messages
        }
    }

    @Setup(Level.Invocation)
    public void idle() {
        LockSupport.parkNanos(idleNanos);
    }

    @Benchmark
    public long publishAndAwaitReceipt() {
        return roundTrips[(int) (invocations++ % roundTrips.length)].publishAndAwaitReceipt();
    }

    @TearDown(Level.Iteration)
    public void endIteration(IterationParams iteration) {
        Map<String, Histogram> latencies = new LinkedHashMap<>();
        for (int i = 0; i < names.length; i++) {
            Histogram h = roundTrips[i].intervalLatency(null);
            if (iteration.getType() == IterationType.MEASUREMENT) {
                trial[i].add(h);
            }
            latencies.put(names[i], h);
        }
        ReceiptLatencyProfiler.iterationEnded(latencies);
    }

    @TearDown(Level.Trial)
    public void stop() throws Exception {
        // on lines of their own: JMH has printed the last iteration's label and prints its score after this
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < names.length; i++) {
            lines.append(System.lineSeparator()).append("fork's ").append(summary(names[i], bodySize, trial[i]));
        }
        System.out.println(lines);
        closeAll();
    }

    private void closeAll() throws Exception {
        Exception failed = null;
        for (RoundTrip roundTrip : roundTrips) {
            if (roundTrip == null) {
                continue;
            }
            try {
                roundTrip.close();
            } catch (Exception e) {
                if (failed == null) {
                    failed = e;
                } else {
                    failed.addSuppressed(e);
                }
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    /** One line: the count and p50/p99/p99.9/max in microseconds of {@code latencies} (ns). */
    static String summary(String client, int bodySize, Histogram latencies) {
        return String.format(
                Locale.ROOT,
                "receipt latency, %s, %d B, %,d messages: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us",
                client,
                bodySize,
                latencies.getTotalCount(),
                micros(latencies, 50),
                micros(latencies, 99),
                micros(latencies, 99.9),
                micros(latencies, 100));
    }

    private static double micros(Histogram latencies, double percentile) {
        return latencies.getValueAtPercentile(percentile) / 1000.0;
    }
}
