package io.warren.bench.consume;

import io.netty.util.internal.PlatformDependent;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.bench.PeerProcess;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * A server that ignores basic.qos against a slow consumer (#13, item 1): the loopback peer in flood mode, in a JVM of
 * its own, streams {@code deliveries} deliveries of {@code body} bytes as fast as the socket takes them to one
 * manual-ack consumer whose handler (on a single worker thread) sleeps {@code handlerMillis} and acks. The consumer
 * has a prefetch (which the peer accepts and ignores) or none. Every 100 ms this JVM's heap in use, Netty's direct
 * memory in use and the consumer's queue are sampled; the run ends after {@code seconds}, when every delivery was
 * handled, or when the connection closes for good. The figures are the peaks; an OutOfMemoryError on the event loop
 * drops the connection, which recovery reopens (counted).
 *
 * <pre>
 * java -Xmx256m -cp client-benchmarks/target/benchmarks.jar io.warren.bench.consume.PrefetchFloodMain \
 *     [prefetch|none] [deliveries] [body] [handlerMillis] [seconds]
 * </pre>
 * Defaults: prefetch 10, 300,000 deliveries of 1,024 bytes, 5 ms per delivery, 20 seconds.
 */
public final class PrefetchFloodMain {

    private PrefetchFloodMain() {}

    public static void main(String[] args) throws Exception {
        int prefetch =
                args.length > 0 && !args[0].equals("none") ? Integer.parseInt(args[0]) : args.length > 0 ? -1 : 10;
        long deliveries = args.length > 1 ? Long.parseLong(args[1]) : 300_000;
        int body = args.length > 2 ? Integer.parseInt(args[2]) : 1024;
        long handlerMillis = args.length > 3 ? Long.parseLong(args[3]) : 5;
        int seconds = args.length > 4 ? Integer.parseInt(args[4]) : 20;
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        BufferPoolMXBean nio = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(b -> b.getName().equals("direct"))
                .findFirst()
                .orElseThrow();
        ExecutorService worker = Executors.newSingleThreadExecutor();
        LongAdder handled = new LongAdder();
        AtomicReference<Object> died = new AtomicReference<>();
        AmqpClient client = AmqpClient.create(new ClientOptions().metricsEnabled(true));
        try (PeerProcess peer = PeerProcess.startFlood(body, deliveries)) {
            Connection connection =
                    client.connect(peer.uri()).toCompletableFuture().get(30, TimeUnit.SECONDS);
            connection.closeFuture().whenComplete((cause, never) -> died.set(cause));
            Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            ConsumeOptions options = new ConsumeOptions().executor(worker);
            if (prefetch >= 0) {
                options.prefetch(prefetch);
            }
            ConsumerHandle consumer = ch.consume("flood", options, d -> {
                        try {
                            Thread.sleep(handlerMillis);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        d.ack();
                        handled.increment();
                    })
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            long start = System.nanoTime();
            long end = start + TimeUnit.SECONDS.toNanos(seconds);
            long maxHeap = 0;
            long maxNettyDirect = 0;
            long maxNioDirect = 0;
            long maxQueued = 0;
            while (System.nanoTime() < end && died.get() == null && handled.sum() < deliveries) {
                Thread.sleep(100);
                maxHeap = Math.max(maxHeap, memory.getHeapMemoryUsage().getUsed());
                maxNettyDirect = Math.max(maxNettyDirect, PlatformDependent.usedDirectMemory());
                maxNioDirect = Math.max(maxNioDirect, nio.getMemoryUsed());
                maxQueued = Math.max(maxQueued, consumer.queued());
            }
            double elapsed = (System.nanoTime() - start) / 1e9;
            Object cause = died.get();
            System.out.printf(
                    Locale.ROOT,
                    "prefetch %s, %,d x %,d B, handler %d ms, -Xmx%d MiB: %.1f s, "
                            + "received %,d, handled %,d, queued at most %,d (now %,d), heap at most %,d MiB, "
                            + "direct at most %,d MiB (Netty) / %,d MiB (NIO), beyond prefetch %,d, connection lost and recovered "
                            + "%d times, %s%n",
                    prefetch < 0 ? "none" : String.valueOf(prefetch),
                    deliveries,
                    body,
                    handlerMillis,
                    Runtime.getRuntime().maxMemory() >> 20,
                    elapsed,
                    client.metrics().consumed(),
                    handled.sum(),
                    maxQueued,
                    consumer.queued(),
                    maxHeap >> 20,
                    maxNettyDirect >> 20,
                    maxNioDirect >> 20,
                    client.metrics().deliveriesBeyondPrefetch(),
                    client.metrics().recoveries(),
                    cause == null ? "connection open" : "connection closed: " + cause);
        } finally {
            worker.shutdownNow();
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }
}
