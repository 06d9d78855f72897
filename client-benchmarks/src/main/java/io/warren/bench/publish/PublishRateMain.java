package io.warren.bench.publish;

import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.ConnectionFactory;
import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOptions;
import io.warren.perf.AmqpClientDriver;
import java.util.Locale;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Publish rate against the real broker for 16 B, 1 KiB and 64 KiB bodies, without confirms and with confirms
 * (at most 1,000 unconfirmed), one publishing thread on one channel, and the client's CPU time per message (the
 * whole JVM's CPU time over the measured interval divided by the messages). Messages go to a fanout exchange
 * with no bindings (read, routed nowhere and confirmed by the broker: the broker stores nothing). One client
 * per JVM run; bodies come from one {@code byte[]} for both clients ({@code warren-direct}: from one direct
 * {@code ByteBuffer}, which the socket reads in place; a {@code byte[]} is copied into a direct buffer by Netty's
 * NIO transport, as the JDK would copy it for any heap array).
 *
 * <p>Warren: {@code publishNoOutcome} (wrapping the array), waiting on {@code whenWritable()} when the channel
 * is not writable; with confirms its window ({@link PublishOptions#maxOutstandingConfirms} 1000) holds the
 * publisher. amqp-client: {@code basicPublish} (blocking on the socket), with confirms a semaphore of 1,000
 * released by its {@code ConfirmListener} (PerfTest's way).
 *
 * <pre>
 * java -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.PublishRateMain warren|warren-direct|amqp-client [seconds] [uri] [sizes]
 * </pre>
 *
 * <p>{@code sizes}: body sizes to run, comma-separated (default {@code 16,1024,65536}). Besides the CPU per message,
 * each line gives the kernel's part of it ({@code sys}), which on loopback carries the receiving side's TCP work too.
 */
public final class PublishRateMain {

    static final int[] SIZES = {16, 1024, 65536};
    static final int IN_FLIGHT = 1000;

    private PublishRateMain() {}

    interface Publisher extends AutoCloseable {
        void publish() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        String client = args.length > 0 ? args[0] : "warren";
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        String uri = args.length > 2 ? args[2] : "amqp://guest:guest@127.0.0.1:5672";
        int[] sizes = args.length > 3
                ? java.util.Arrays.stream(args[3].split(","))
                        .mapToInt(Integer::parseInt)
                        .toArray()
                : SIZES;
        String exchange = "warren-bench.rate." + Long.toHexString(System.nanoTime());
        for (int size : sizes) {
            for (boolean confirms : new boolean[] {false, true}) {
                byte[] body = new byte[size];
                try (Publisher p = client.startsWith("warren")
                        ? warren(uri, exchange, confirms, body, client.equals("warren-direct"))
                        : amqpClient(uri, exchange, confirms, body)) {
                    run(p, seconds); // warm-up (JIT), as long as the measurement
                    long cpu = JvmMeter.cpuNanos();
                    long sys = JvmMeter.systemCpuNanos();
                    long start = System.nanoTime();
                    long n = run(p, seconds);
                    double elapsed = (System.nanoTime() - start) / 1e9;
                    System.out.printf(
                            Locale.ROOT,
                            "%-11s %6d B confirms=%-5s %,10.0f msg/s %,8.2f us CPU/msg (sys %,8.2f)%n",
                            client,
                            size,
                            confirms,
                            n / elapsed,
                            (JvmMeter.cpuNanos() - cpu) / 1e3 / n,
                            (JvmMeter.systemCpuNanos() - sys) / 1e3 / n);
                }
            }
        }
    }

    static long run(Publisher p, int seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        long n = 0;
        while ((n & 63) != 0 || System.nanoTime() < end) {
            p.publish();
            n++;
        }
        return n;
    }

    static Publisher warren(String uri, String exchange, boolean confirms, byte[] body, boolean directBody)
            throws Exception {
        java.nio.ByteBuffer direct = java.nio.ByteBuffer.allocateDirect(body.length);
        AmqpClient client = AmqpClient.create();
        Connection c = client.connect(ConnectionOptions.fromUri(uri)
                        .connectionName("publish rate")
                        .publishOptions(new PublishOptions().maxOutstandingConfirms(IN_FLIGHT)))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        Channel ch = c.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        ch.exchangeDeclare(exchange, "fanout").toCompletableFuture().get(30, TimeUnit.SECONDS);
        if (confirms) {
            ch.confirmSelect().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        return new Publisher() {
            @Override
            public void publish() {
                if (!ch.isWritable()) {
                    ch.whenWritable().toCompletableFuture().join();
                }
                ch.publishNoOutcome(
                        exchange,
                        "",
                        false,
                        null,
                        directBody ? Unpooled.wrappedBuffer(direct.duplicate()) : Unpooled.wrappedBuffer(body));
            }

            @Override
            public void close() throws Exception {
                ch.exchangeDelete(exchange).toCompletableFuture().get(30, TimeUnit.SECONDS);
                c.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
                client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
        };
    }

    static Publisher amqpClient(String uri, String exchange, boolean confirms, byte[] body) throws Exception {
        ConnectionFactory f = AmqpClientDriver.factory(uri); // a refused URI is named without its password
        com.rabbitmq.client.Connection c = f.newConnection("publish rate (amqp-client)");
        com.rabbitmq.client.Channel ch = c.createChannel();
        ch.exchangeDeclare(exchange, "fanout");
        Semaphore window = new Semaphore(IN_FLIGHT);
        if (confirms) {
            ch.confirmSelect();
            ch.addConfirmListener(new ConfirmListener() {
                long last;

                @Override
                public void handleAck(long tag, boolean multiple) {
                    release(tag, multiple);
                }

                @Override
                public void handleNack(long tag, boolean multiple) {
                    release(tag, multiple);
                }

                private synchronized void release(long tag, boolean multiple) {
                    int n = multiple ? (int) (tag - last) : 1;
                    last = Math.max(last, tag);
                    window.release(n);
                }
            });
        }
        return new Publisher() {
            @Override
            public void publish() throws Exception {
                if (confirms) {
                    window.acquire();
                }
                ch.basicPublish(exchange, "", null, body);
            }

            @Override
            public void close() throws Exception {
                if (confirms) {
                    ch.waitForConfirms(30_000);
                }
                ch.exchangeDelete(exchange);
                c.close();
            }
        };
    }
}
