package io.warren.bench.publish;

import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOptions;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * What metrics cost on the publish-with-confirms path: the same run (16 B bodies, confirm mode, 1,000 in flight,
 * {@code publishNoOutcome}, one thread, a fanout exchange with no bindings on the real broker) with
 * {@code ClientOptions.metricsEnabled} off and on, alternated in one JVM so that both see the same JIT and broker
 * state. Reports msg/s, the JVM's CPU time per message and bytes allocated per message. "Off" is the default
 * client: its hot paths call {@code MetricsCollector.NOOP}'s empty methods; "on" adds a LongAdder increment per
 * event and a byte-counting handler in the pipeline.
 *
 * <pre>
 * java -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.MetricsOverheadMain [seconds] [rounds] [uri]
 * </pre>
 */
public final class MetricsOverheadMain {

    private MetricsOverheadMain() {}

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        String uri = args.length > 2 ? args[2] : "amqp://guest:guest@127.0.0.1:5672";
        String exchange = "warren-bench.metrics." + Long.toHexString(System.nanoTime());
        byte[] body = new byte[16];
        for (int round = 0; round < rounds; round++) {
            for (boolean metrics : new boolean[] {false, true}) {
                AmqpClient client = AmqpClient.create(
                        new ClientOptions().metricsEnabled(metrics).ioThreads(1));
                Connection c = client.connect(ConnectionOptions.fromUri(uri)
                                .connectionName("metrics overhead")
                                .publishOptions(new PublishOptions().maxOutstandingConfirms(1000)))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                Channel ch = c.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
                ch.exchangeDeclare(exchange, "fanout").toCompletableFuture().get(30, TimeUnit.SECONDS);
                ch.confirmSelect().toCompletableFuture().get(30, TimeUnit.SECONDS);
                publish(ch, exchange, body, Math.max(1, seconds / 2)); // warm-up
                long cpu = JvmMeter.cpuNanos();
                long allocated = JvmMeter.allocatedBytes();
                long start = System.nanoTime();
                long n = publish(ch, exchange, body, seconds);
                double elapsed = (System.nanoTime() - start) / 1e9;
                System.out.printf(
                        Locale.ROOT,
                        "round %d metrics=%-5s %,10.0f msg/s %,8.2f us CPU/msg %,8.1f B/msg%s%n",
                        round,
                        metrics,
                        n / elapsed,
                        (JvmMeter.cpuNanos() - cpu) / 1e3 / n,
                        (double) (JvmMeter.allocatedBytes() - allocated) / n,
                        metrics
                                ? "  (published=" + client.metrics().published() + ", confirmed="
                                        + client.metrics().confirmed() + ")"
                                : "");
                ch.exchangeDelete(exchange).toCompletableFuture().get(30, TimeUnit.SECONDS);
                c.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
                client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
        }
    }

    private static long publish(Channel ch, String exchange, byte[] body, int seconds) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        long n = 0;
        while ((n & 63) != 0 || System.nanoTime() < end) {
            if (!ch.isWritable()) {
                ch.whenWritable().toCompletableFuture().join();
            }
            ch.publishNoOutcome(exchange, "", false, null, Unpooled.wrappedBuffer(body));
            n++;
        }
        return n;
    }
}
