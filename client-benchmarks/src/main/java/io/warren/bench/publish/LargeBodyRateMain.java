package io.warren.bench.publish;

import io.warren.bench.publish.OneConnectionPublishers.Body;
import io.warren.perf.DirectMemory;
import io.warren.perf.PeakSampler;
import io.warren.perf.RunCosts;
import java.util.List;
import java.util.Locale;

/**
 * Large bodies into the real broker from plain application threads, without confirms: {@code threads} threads
 * publish {@code messages} bodies of {@code size} bytes each on ONE connection (a channel per thread) to a fanout
 * exchange without bindings (the broker reads, parses and routes every byte, and stores nothing). Warren's threads
 * wait for {@link Channel#isWritable()} and copy the caller's {@code byte[]} into a pooled direct buffer per
 * message, as an application holding a {@code byte[]} does ({@code warren-array}: they publish the {@code byte[]}
 * itself, which Warren wraps); amqp-client's publish the {@code byte[]}. A run is
 * done when every message is written to the socket (Warren: the last publish's outcome; amqp-client: the call
 * returned); msg/s is counted to then. Each thread then makes one round trip on its channel (exchange.declare), and
 * the rate "taken by the broker" is counted to when the last came back: the broker had then read every message, so a
 * client whose socket buffers more cannot look faster. For Warren it prints how often a thread found its channel not
 * writable and waited, per message. Prints the peak direct memory of the process ({@link DirectMemory}: the JDK's
 * direct buffer pool, which holds Netty's pooled chunks and the socket's temporary buffers, plus what Netty allocated
 * without a cleaner, if it does), sampled every 100 us, and what each message cost ({@link RunCosts}: the process's CPU, its
 * threads' context switches but the sampler's, and the CPU of the RabbitMQ nodes on this machine).
 * One warm-up run, then RUNS measured runs (default 1) in the same JVM: a short run's rate includes the JIT
 * compiling the client's write path, later runs show the steady state. One client per JVM, so alternate clients
 * JVM by JVM.
 *
 * <pre>
 * java -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.LargeBodyRateMain warren|warren-array|amqp-client SIZE THREADS MESSAGES [RUNS] [uri]
 *   e.g.  warren 65536 1 10000          64 KiB, one thread
 *         warren 1048576 16 100         16 threads x 100 x 1 MiB on one connection
 *         warren-array 1048576 16 500 4 the same, 500 each, four measured runs
 * </pre>
 */
public final class LargeBodyRateMain {

    /** The direct-memory sampler's thread: it wakes every 100 us, so its switches are left out of the client's. */
    private static final String SAMPLER = "direct-peak";

    private LargeBodyRateMain() {}

    /** The command line: a client it knows, positive counts, then optional RUNS and URI. */
    record Args(String client, int size, int threads, int messages, int runs, String uri) {

        static final String USAGE =
                "usage: LargeBodyRateMain warren|warren-array|amqp-client SIZE THREADS MESSAGES" + " [RUNS] [uri]";

        /**
         * @throws IllegalArgumentException naming the usage, for a client it does not know, a count that is not a whole
         *     number of at least 1, or too many arguments; never with an argument's text
         */
        static Args parse(String[] args) {
            if (args.length < 4
                    || args.length > 6
                    || !List.of("warren", "warren-array", "amqp-client").contains(args[0])) {
                throw new IllegalArgumentException(USAGE);
            }
            RunsAndUri tail = RunsAndUri.parse(args, 4, USAGE);
            return new Args(
                    args[0],
                    RunsAndUri.positive(args[1], "SIZE", USAGE),
                    RunsAndUri.positive(args[2], "THREADS", USAGE),
                    RunsAndUri.positive(args[3], "MESSAGES", USAGE),
                    tail.runs(),
                    tail.uri());
        }
    }

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        String client = args.client();
        int size = args.size();
        int threads = args.threads();
        int messages = args.messages();
        int runs = args.runs();
        String uri = args.uri();
        byte[] body = new byte[size];
        String exchange = "warren-bench.large-rate." + Long.toHexString(System.nanoTime());
        OneConnectionPublishers runner = client.startsWith("warren")
                ? OneConnectionPublishers.warren(
                        uri,
                        "large-body rate",
                        exchange,
                        threads,
                        false,
                        body,
                        client.equals("warren-array") ? Body.ARRAY : Body.POOLED_COPY)
                : OneConnectionPublishers.amqpClient(
                        uri, "large-body rate (amqp-client)", exchange, threads, false, body);
        try {
            runner.run(messages); // warm-up: JIT, pools
            for (int run = 1; run <= runs; run++) {
                measure(runner, client, size, threads, messages, uri, runs > 1 ? " run " + run : "");
            }
        } finally {
            runner.close();
        }
    }

    private static void measure(
            OneConnectionPublishers runner,
            String client,
            int size,
            int threads,
            int messages,
            String uri,
            String label)
            throws Exception {
        long start;
        double seconds;
        double takenSeconds;
        long waits;
        long peak;
        String parts;
        RunCosts before;
        RunCosts after;
        // the total, and its two parts: what Netty allocated without a cleaner, the JDK's pool
        try (PeakSampler direct = new PeakSampler(
                SAMPLER, 100_000, DirectMemory::used, DirectMemory::nettyNoCleanerUsed, DirectMemory::jdkUsed)) {
            before = RunCosts.start(uri);
            start = System.nanoTime();
            OneConnectionPublishers.Ends ends = runner.run(messages);
            after = before.now();
            seconds = (ends.written() - start) / 1e9;
            takenSeconds = (ends.taken() - start) / 1e9;
            waits = ends.writabilityWaits();
            peak = direct.peak(0);
            parts = String.format(
                    Locale.ROOT, "Netty %,.2f MB + JDK %,.2f MB", direct.peak(1) / 1e6, direct.peak(2) / 1e6);
        }
        long total = (long) threads * messages;
        String waited = waits < 0
                ? ""
                : String.format(Locale.ROOT, ", %.2f waits for writability per message", waits / (double) total);
        System.out.printf(
                Locale.ROOT,
                "%-12s %d threads x %d x %d B%s: %.2f s, %,.0f msg/s, %,.1f MB/s; taken by the broker %.2f s,"
                        + " %,.0f msg/s; peak direct memory %,.2f MB (%s); %s%s%n",
                client,
                threads,
                messages,
                size,
                label,
                seconds,
                total / seconds,
                total * (double) size / seconds / 1e6,
                takenSeconds,
                total / takenSeconds,
                peak / 1e6,
                parts,
                after.perMessage(before, total, SAMPLER),
                waited);
    }
}
