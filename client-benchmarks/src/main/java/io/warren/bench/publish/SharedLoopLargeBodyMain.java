package io.warren.bench.publish;

import io.warren.ClientOptions;
import io.warren.perf.DirectMemory;
import io.warren.perf.PeakSampler;
import io.warren.perf.RunCosts;
import java.util.Locale;

/**
 * Several Warren connections on ONE event loop ({@link ClientOptions#ioThreads} 1), each with THREADS channels whose
 * threads publish MESSAGES heap bodies ({@code byte[]}) of SIZE bytes, no confirms, into a fanout exchange without
 * bindings. What two heavy connections cost a loop they share: each stages its heap bodies through a buffer of its
 * own, and the loop's pool must hold them both. The publishers are {@link OneConnectionPublishers#warrenOnOneLoop}'s:
 * the threads start together, each waits for writability before each publish, and a run is written when every
 * thread's last publish is, taken when each channel has made one round trip after it. One warm-up run,
 * then RUNS measured ones in the same JVM; prints msg/s, the peak direct memory (sampled every 100 us) and what a
 * message cost ({@link RunCosts}). Warren only: amqp-client has no event loop to share.
 *
 * <pre>
 * java -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.SharedLoopLargeBodyMain CONNECTIONS THREADS MESSAGES SIZE [RUNS] [uri]
 *   e.g.  2 8 100 1048576 3     two connections of 8 threads, 100 x 1 MiB each, three measured runs
 * </pre>
 */
public final class SharedLoopLargeBodyMain {

    private static final String SAMPLER = "direct-peak";

    private SharedLoopLargeBodyMain() {}

    /** The command line: positive counts, then optional RUNS and URI. */
    record Args(int connections, int threads, int messages, int size, int runs, String uri) {

        static final String USAGE = "usage: SharedLoopLargeBodyMain CONNECTIONS THREADS MESSAGES SIZE [RUNS] [uri]";

        /**
         * @throws IllegalArgumentException naming the usage, for a count that is not a whole number of at least 1 or
         *     too many arguments; never with an argument's text
         */
        static Args parse(String[] args) {
            if (args.length < 4 || args.length > 6) {
                throw new IllegalArgumentException(USAGE);
            }
            RunsAndUri tail = RunsAndUri.parse(args, 4, USAGE);
            return new Args(
                    RunsAndUri.positive(args[0], "CONNECTIONS", USAGE),
                    RunsAndUri.positive(args[1], "THREADS", USAGE),
                    RunsAndUri.positive(args[2], "MESSAGES", USAGE),
                    RunsAndUri.positive(args[3], "SIZE", USAGE),
                    tail.runs(),
                    tail.uri());
        }
    }

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        byte[] body = new byte[args.size()];
        String exchange = "warren-bench.shared-loop." + Long.toHexString(System.nanoTime());
        try (OneConnectionPublishers runner = OneConnectionPublishers.warrenOnOneLoop(
                args.uri(), "shared-loop large bodies", exchange, args.connections(), args.threads(), body)) {
            runner.run(args.messages()); // warm-up: JIT, pools
            for (int r = 1; r <= args.runs(); r++) {
                measure(runner, args, args.runs() > 1 ? " run " + r : "");
            }
        }
    }

    private static void measure(OneConnectionPublishers runner, Args args, String label) throws Exception {
        long peak;
        RunCosts before;
        RunCosts after;
        long start;
        OneConnectionPublishers.Ends ends;
        try (PeakSampler direct = new PeakSampler(SAMPLER, 100_000, DirectMemory::used)) {
            before = RunCosts.start(args.uri());
            start = System.nanoTime();
            ends = runner.run(args.messages());
            after = before.now();
            peak = direct.peak(0);
        }
        long total = (long) runner.threads() * args.messages(); // every connection's threads
        double seconds = (ends.written() - start) / 1e9;
        double takenSeconds = (ends.taken() - start) / 1e9;
        System.out.printf(
                Locale.ROOT,
                "%d connections on one event loop x %d threads x %d x %d B%s: %.2f s, %,.0f msg/s, %,.1f MB/s;"
                        + " taken by the broker %.2f s, %,.0f msg/s; peak direct memory %,.2f MB; %s,"
                        + " %.2f waits for writability per message%n",
                args.connections(),
                args.threads(),
                args.messages(),
                args.size(),
                label,
                seconds,
                total / seconds,
                total * (double) args.size() / seconds / 1e6,
                takenSeconds,
                total / takenSeconds,
                peak / 1e6,
                after.perMessage(before, total, SAMPLER),
                ends.writabilityWaits() / (double) total);
    }
}
