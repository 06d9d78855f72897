package io.warren.bench.publish;

import com.rabbitmq.client.ConnectionFactory;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
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
 * Large bodies into the real broker from plain application threads, without confirms: {@code threads} threads
 * publish {@code messages} bodies of {@code size} bytes each on ONE connection (a channel per thread) to a fanout
 * exchange without bindings (the broker reads, parses and routes every byte, and stores nothing). Warren's threads
 * wait for {@link Channel#isWritable()} and copy the caller's {@code byte[]} into a pooled direct buffer per
 * message, as an application holding a {@code byte[]} does ({@code warren-array}: they publish the {@code byte[]}
 * itself, which Warren wraps); amqp-client's publish the {@code byte[]}. A run is
 * done when every message is written to the socket (Warren: the last publish's outcome; amqp-client: the call
 * returned). Prints msg/s and the peak direct memory of the process (the JDK's direct buffer pool, which holds
 * Netty's pooled chunks and the socket's temporary buffers, plus Netty's own count of what it allocated without a
 * cleaner, if it does), sampled every 100 us.
 * One warm-up run, then one measured run; one client per JVM, so alternate clients run by run.
 *
 * <pre>
 * java -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.LargeBodyRateMain warren|warren-array|amqp-client SIZE THREADS MESSAGES [uri]
 *   e.g.  warren 65536 1 10000      64 KiB, one thread
 *         warren 1048576 16 100     16 threads x 100 x 1 MiB on one connection
 * </pre>
 */
public final class LargeBodyRateMain {

    private LargeBodyRateMain() {}

    public static void main(String[] args) throws Exception {
        String client = args[0];
        int size = Integer.parseInt(args[1]);
        int threads = Integer.parseInt(args[2]);
        int messages = Integer.parseInt(args[3]);
        String uri = args.length > 4 ? args[4] : "amqp://guest:guest@127.0.0.1:5672";
        byte[] body = new byte[size];
        String exchange = "warren-bench.large-rate." + Long.toHexString(System.nanoTime());
        Runner runner = client.startsWith("warren")
                ? new WarrenRunner(uri, exchange, threads, client.equals("warren-array"))
                : new AmqpClientRunner(uri, exchange, threads);
        try {
            runner.run(body, messages); // warm-up: JIT, pools
            long start;
            double seconds;
            long peak;
            String parts;
            try (DirectPeak direct = new DirectPeak()) {
                start = System.nanoTime();
                runner.run(body, messages);
                seconds = (System.nanoTime() - start) / 1e9;
                peak = direct.peak();
                parts = direct.parts();
            }
            long total = (long) threads * messages;
            System.out.printf(
                    Locale.ROOT,
                    "%-12s %d threads x %d x %d B: %.2f s, %,.0f msg/s, %,.1f MB/s,"
                            + " peak direct memory %,.1f MB (%s)%n",
                    client,
                    threads,
                    messages,
                    size,
                    seconds,
                    total / seconds,
                    total * (double) size / seconds / 1e6,
                    peak / 1e6,
                    parts);
        } finally {
            runner.close();
        }
    }

    interface Runner extends AutoCloseable {
        /** Every thread publishes {@code messages} copies of {@code body}; returns when all are written. */
        void run(byte[] body, int messages) throws Exception;
    }

    /** The process's direct memory, sampled: Netty's count (its pooled chunks) plus the JDK's direct buffer pool. */
    static final class DirectPeak implements AutoCloseable {
        private final BufferPoolMXBean jdk = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(b -> b.getName().equals("direct"))
                .findFirst()
                .orElseThrow();
        private final boolean noCleaner = PlatformDependent.useDirectBufferNoCleaner();
        private final Thread sampler;
        private volatile boolean running = true;
        private volatile long peak;
        private volatile long nettyPeak;
        private volatile long jdkPeak;

        DirectPeak() {
            sampler = new Thread(
                    () -> {
                        while (running) {
                            // Netty's count holds only what it allocated without a cleaner; what it allocated with one
                            // is
                            // in the JDK's pool too, and counted there
                            long netty = noCleaner ? Math.max(0, PlatformDependent.usedDirectMemory()) : 0;
                            long jdkUsed = jdk.getMemoryUsed();
                            if (netty + jdkUsed > peak) {
                                peak = netty + jdkUsed;
                            }
                            if (netty > nettyPeak) {
                                nettyPeak = netty;
                            }
                            if (jdkUsed > jdkPeak) {
                                jdkPeak = jdkUsed;
                            }
                            java.util.concurrent.locks.LockSupport.parkNanos(100_000);
                        }
                    },
                    "direct-peak");
            sampler.setDaemon(true);
            sampler.start();
        }

        long peak() {
            return peak;
        }

        /** The peaks of the two parts: Netty's count and the JDK's pool. */
        String parts() {
            return String.format(Locale.ROOT, "Netty %,.1f MB + JDK %,.1f MB", nettyPeak / 1e6, jdkPeak / 1e6);
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            sampler.join();
        }
    }

    static final class WarrenRunner implements Runner {
        final AmqpClient client = AmqpClient.create();
        final Connection connection;
        final List<Channel> channels = new ArrayList<>();
        final ExecutorService pool;
        final String exchange;
        final boolean array;

        WarrenRunner(String uri, String exchange, int threads, boolean array) throws Exception {
            this.exchange = exchange;
            this.array = array;
            pool = Executors.newFixedThreadPool(threads);
            connection = client.connect(ConnectionOptions.fromUri(uri).connectionName("large-body rate"))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            for (int i = 0; i < threads; i++) {
                channels.add(connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS));
            }
            channels.get(0)
                    .exchangeDeclare(exchange, "fanout")
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
        }

        @Override
        public void run(byte[] body, int messages) throws Exception {
            CyclicBarrier start = new CyclicBarrier(channels.size());
            List<Future<?>> done = new ArrayList<>();
            for (Channel ch : channels) {
                done.add(pool.submit(() -> {
                    start.await();
                    CompletableFuture<?> last = null;
                    for (int m = 0; m < messages; m++) {
                        while (!ch.isWritable()) {
                            ch.whenWritable().toCompletableFuture().get(60, TimeUnit.SECONDS);
                        }
                        ByteBuf buf = array
                                ? Unpooled.wrappedBuffer(body)
                                : PooledByteBufAllocator.DEFAULT
                                        .directBuffer(body.length)
                                        .writeBytes(body);
                        if (m == messages - 1) {
                            last = ch.publish(exchange, "", false, null, buf).toCompletableFuture();
                        } else {
                            ch.publishNoOutcome(exchange, "", false, null, buf);
                        }
                    }
                    last.get(120, TimeUnit.SECONDS); // a channel's publishes are written in order
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
        final ExecutorService pool;
        final String exchange;

        AmqpClientRunner(String uri, String exchange, int threads) throws Exception {
            this.exchange = exchange;
            pool = Executors.newFixedThreadPool(threads);
            ConnectionFactory f = new ConnectionFactory();
            f.setUri(uri);
            connection = f.newConnection("large-body rate (amqp-client)");
            for (int i = 0; i < threads; i++) {
                channels.add(connection.createChannel());
            }
            channels.get(0).exchangeDeclare(exchange, "fanout");
        }

        @Override
        public void run(byte[] body, int messages) throws Exception {
            CyclicBarrier start = new CyclicBarrier(channels.size());
            List<Future<?>> done = new ArrayList<>();
            for (com.rabbitmq.client.Channel ch : channels) {
                done.add(pool.submit(() -> {
                    start.await();
                    for (int m = 0; m < messages; m++) {
                        ch.basicPublish(exchange, "", null, body);
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
            channels.get(0).exchangeDelete(exchange);
            connection.close();
        }
    }
}
