package io.warren.bench.publish;

import com.rabbitmq.client.ConnectionFactory;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOutcome;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The RabbitMQ .NET client's large-message scenario against the real broker: 16 threads publish 100 messages of
 * 1 MiB each on ONE connection (a channel per thread, confirms awaited at the end), all from the same
 * {@code byte[]}, as the .NET test does. Reports the peak heap above the idle baseline (heap after full GCs
 * with the connection and channels open: G1 counts eden by whole regions, so this is coarse), the collections
 * during the run and the bytes allocated by every thread. One client per JVM run.
 *
 * <p>Messages go to a fanout exchange without bindings declared for the run: the broker reads, routes to no
 * queue and confirms, so the broker stores nothing.
 *
 * <pre>
 * java -Xmx1g -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.LargeMessageHeapMain warren|warren-direct|amqp-client [uri]
 * </pre>
 * {@code warren} publishes the {@code byte[]} (wrapped: Netty's NIO transport copies heap bytes into a pooled
 * direct buffer at the socket, off the heap); {@code warren-direct} a direct {@code ByteBuffer} (no copy at all).
 */
public final class LargeMessageHeapMain {

    static final int THREADS = 16;
    static final int MESSAGES = 100;
    static final int SIZE = 1024 * 1024;

    private LargeMessageHeapMain() {}

    public static void main(String[] args) throws Exception {
        String client = args.length > 0 ? args[0] : "warren";
        String uri = args.length > 1 ? args[1] : "amqp://guest:guest@127.0.0.1:5672";
        byte[] body = new byte[SIZE];
        ByteBuffer direct = ByteBuffer.allocateDirect(SIZE);
        String exchange = "warren-bench.large." + Long.toHexString(System.nanoTime());
        Runner runner = client.startsWith("warren")
                ? new WarrenRunner(uri, exchange, client.equals("warren-direct") ? null : body, direct)
                : new AmqpClientRunner(uri, exchange, body);
        try {
            runner.run(); // warm-up round: JIT, buffer pools
            long baseline = JvmMeter.settledHeap();
            long gcs = JvmMeter.gcCount();
            long gcMillis = JvmMeter.gcMillis();
            long allocated = JvmMeter.allocatedBytes();
            long start = System.nanoTime();
            long peak;
            try (JvmMeter.PeakHeap heap = new JvmMeter.PeakHeap()) {
                runner.run();
                peak = heap.peak();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            long bytes = JvmMeter.allocatedBytes() - allocated;
            System.out.printf(
                    Locale.ROOT,
                    "%-13s %d threads x %d x %d KiB: %.2f s, peak heap above idle %,.1f MiB"
                            + " (idle %,.1f MiB), %d GCs (%d ms), allocated %,.1f MiB (%,d B/message)%n",
                    client,
                    THREADS,
                    MESSAGES,
                    SIZE / 1024,
                    seconds,
                    (peak - baseline) / 1048576.0,
                    baseline / 1048576.0,
                    JvmMeter.gcCount() - gcs,
                    JvmMeter.gcMillis() - gcMillis,
                    bytes / 1048576.0,
                    bytes / (THREADS * MESSAGES));
        } finally {
            runner.close();
        }
    }

    interface Runner extends AutoCloseable {
        /** Every thread publishes its messages; returns when all are confirmed. */
        void run() throws Exception;
    }

    static final class WarrenRunner implements Runner {
        final AmqpClient client = AmqpClient.create();
        final Connection connection;
        final List<Channel> channels = new ArrayList<>();
        final ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        final String exchange;
        final byte[] body;
        final ByteBuffer direct;

        WarrenRunner(String uri, String exchange, byte[] body, ByteBuffer direct) throws Exception {
            this.exchange = exchange;
            this.body = body;
            this.direct = direct;
            connection = client.connect(ConnectionOptions.fromUri(uri).connectionName("large-message heap"))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            for (int i = 0; i < THREADS; i++) {
                Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
                ch.confirmSelect().toCompletableFuture().get(30, TimeUnit.SECONDS);
                channels.add(ch);
            }
            channels.get(0)
                    .exchangeDeclare(exchange, "fanout")
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
        }

        @Override
        public void run() throws Exception {
            CyclicBarrier start = new CyclicBarrier(THREADS);
            List<Future<?>> done = new ArrayList<>();
            for (Channel ch : channels) {
                done.add(pool.submit(() -> {
                    start.await();
                    CompletableFuture<?>[] outcomes = new CompletableFuture<?>[MESSAGES];
                    for (int m = 0; m < MESSAGES; m++) {
                        if (!ch.isWritable()) {
                            ch.whenWritable().toCompletableFuture().get(60, TimeUnit.SECONDS);
                        }
                        CompletableFuture<PublishOutcome> f = (body != null
                                        ? ch.publish(exchange, "", false, null, body)
                                        : ch.publish(exchange, "", false, null, direct.duplicate()))
                                .toCompletableFuture();
                        outcomes[m] = f;
                    }
                    for (CompletableFuture<?> f : outcomes) {
                        f.get(120, TimeUnit.SECONDS);
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(300, TimeUnit.SECONDS);
            }
        }

        @Override
        public void close() throws Exception {
            pool.shutdownNow();
            channels.get(0).exchangeDelete(exchange).toCompletableFuture().get(30, TimeUnit.SECONDS);
            connection.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    static final class AmqpClientRunner implements Runner {
        final com.rabbitmq.client.Connection connection;
        final List<com.rabbitmq.client.Channel> channels = new ArrayList<>();
        final ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        final String exchange;
        final byte[] body;

        AmqpClientRunner(String uri, String exchange, byte[] body) throws Exception {
            this.exchange = exchange;
            this.body = body;
            ConnectionFactory f = new ConnectionFactory();
            f.setUri(uri);
            connection = f.newConnection("large-message heap (amqp-client)");
            for (int i = 0; i < THREADS; i++) {
                com.rabbitmq.client.Channel ch = connection.createChannel();
                ch.confirmSelect();
                channels.add(ch);
            }
            channels.get(0).exchangeDeclare(exchange, "fanout");
        }

        @Override
        public void run() throws Exception {
            CyclicBarrier start = new CyclicBarrier(THREADS);
            List<Future<?>> done = new ArrayList<>();
            for (com.rabbitmq.client.Channel ch : channels) {
                done.add(pool.submit(() -> {
                    start.await();
                    for (int m = 0; m < MESSAGES; m++) {
                        ch.basicPublish(exchange, "", null, body);
                    }
                    ch.waitForConfirmsOrDie(120_000);
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(300, TimeUnit.SECONDS);
            }
        }

        @Override
        public void close() throws Exception {
            pool.shutdownNow();
            channels.get(0).exchangeDelete(exchange);
            connection.close();
        }
    }
}
