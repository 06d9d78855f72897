package io.warren.bench.publish;

import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.perf.DirectMemory;
import io.warren.perf.PeakSampler;
import io.warren.perf.RunCosts;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Several Warren connections on ONE event loop ({@link ClientOptions#ioThreads} 1), each with THREADS channels whose
 * threads publish MESSAGES heap bodies ({@code byte[]}) of SIZE bytes, no confirms, into a fanout exchange without
 * bindings. What two heavy connections cost a loop they share: each stages its heap bodies through a buffer of its
 * own, and the loop's pool must hold them both. A thread waits for {@link Channel#isWritable()} before each publish;
 * a run ends when every thread's last publish is written and each channel has made one round trip. One warm-up run,
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
        AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(1));
        List<Connection> connections = new ArrayList<>();
        List<Channel> channels = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(args.connections() * args.threads());
        try {
            for (int c = 0; c < args.connections(); c++) {
                Connection connection = client.connect(
                                ConnectionOptions.fromUri(args.uri()).connectionName("shared-loop large bodies " + c))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                connections.add(connection);
                for (int t = 0; t < args.threads(); t++) {
                    channels.add(connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS));
                }
            }
            channels.get(0)
                    .exchangeDeclare(exchange, "fanout")
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            run(pool, channels, exchange, body, args.messages()); // warm-up: JIT, pools
            for (int r = 1; r <= args.runs(); r++) {
                measure(pool, channels, exchange, body, args, args.runs() > 1 ? " run " + r : "");
            }
            channels.get(0).exchangeDelete(exchange).toCompletableFuture().get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
            for (Connection c : connections) {
                c.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    private static void measure(
            ExecutorService pool, List<Channel> channels, String exchange, byte[] body, Args args, String label)
            throws Exception {
        long peak;
        RunCosts before;
        RunCosts after;
        long start;
        long end;
        try (PeakSampler direct = new PeakSampler(SAMPLER, 100_000, DirectMemory::used)) {
            before = RunCosts.now();
            start = System.nanoTime();
            run(pool, channels, exchange, body, args.messages());
            end = System.nanoTime();
            after = RunCosts.now();
            peak = direct.peak(0);
        }
        long total = (long) channels.size() * args.messages();
        double seconds = (end - start) / 1e9;
        System.out.printf(
                Locale.ROOT,
                "%d connections on one event loop x %d threads x %d x %d B%s: %.2f s, %,.0f msg/s, %,.1f MB/s;"
                        + " peak direct memory %,.2f MB; %s%n",
                args.connections(),
                args.threads(),
                args.messages(),
                args.size(),
                label,
                seconds,
                total / seconds,
                total * (double) args.size() / seconds / 1e6,
                peak / 1e6,
                after.perMessage(before, total, SAMPLER));
    }

    /** Every channel's thread publishes {@code messages} bodies; returns when all are written and taken. */
    private static void run(ExecutorService pool, List<Channel> channels, String exchange, byte[] body, int messages)
            throws Exception {
        List<Future<?>> threads = new ArrayList<>();
        for (Channel ch : channels) {
            threads.add(pool.submit(() -> {
                CompletableFuture<?> last = null;
                for (int m = 0; m < messages; m++) {
                    while (!ch.isWritable()) {
                        ch.whenWritable().toCompletableFuture().get(60, TimeUnit.SECONDS);
                    }
                    if (m == messages - 1) {
                        last = ch.publish(exchange, "", false, null, Unpooled.wrappedBuffer(body))
                                .toCompletableFuture();
                    } else {
                        ch.publishNoOutcome(exchange, "", false, null, Unpooled.wrappedBuffer(body));
                    }
                }
                last.get(120, TimeUnit.SECONDS);
                // a round trip: the broker has read every message of this channel
                ch.exchangeDeclare(exchange, "fanout").toCompletableFuture().get(120, TimeUnit.SECONDS);
                return null;
            }));
        }
        for (Future<?> f : threads) {
            f.get(300, TimeUnit.SECONDS);
        }
    }
}
