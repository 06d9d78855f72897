package io.warren.bench.connections;

import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import io.netty.buffer.Unpooled;
import io.warren.Address;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.QueueSpec;
import io.warren.perf.AmqpClientDriver;
import io.warren.perf.DirectMemory;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Many idle connections from one process, as a service that keeps one per tenant or per pool does: each connection
 * opens one channel and one consumer on a shared queue that stays empty, then everything idles through several
 * heartbeats. Reported per connection: heap retained (after full GCs) and direct memory (the JDK's direct pool plus
 * Netty's own counter) and threads, as the growth from the first half of the connections to all of them, so what
 * a process pays once is left out; the process's totals and RSS; and the CPU spent while idle (heartbeats and
 * timers), read after the connect path's JIT compiles have settled. One client per JVM run; connection {@code i} goes first to address {@code i mod n}, so
 * both clients spread over a cluster the same way. With {@code --burst N} each connection first publishes N 16-byte
 * messages nobody receives (the default exchange, a key no queue has) as fast as it takes them, so what a connection
 * keeps after a burst, once idle, is counted too; both halves are then read after {@code --settle}.
 *
 * <pre>
 * java -Xmx2g -cp client-benchmarks/target/benchmarks.jar io.warren.bench.connections.ManyConnectionsMain \
 *     --client warren|amqp-client --connections 2000 --ports 5673,5674,5675 --heartbeat 10 --idle 30
 * </pre>
 */
@Command(
        name = "many-connections",
        mixinStandardHelpOptions = true,
        description = "Idle connections from one JVM: memory, threads and CPU per connection.")
public final class ManyConnectionsMain implements java.util.concurrent.Callable<Integer> {

    @Option(names = "--client", description = "warren or amqp-client", defaultValue = "warren")
    String client;

    @Option(names = "--connections", defaultValue = "500")
    int connections;

    @Option(names = "--host", defaultValue = "127.0.0.1")
    String host;

    @Option(
            names = "--ports",
            split = ",",
            defaultValue = "5672",
            description = "AMQP ports of the nodes; connections spread over them round-robin")
    List<Integer> ports;

    @Option(names = "--heartbeat", defaultValue = "10", description = "requested heartbeat, seconds")
    int heartbeat;

    @Option(names = "--idle", defaultValue = "30", description = "seconds to idle before the CPU is read")
    int idleSeconds;

    @Option(names = "--settle", defaultValue = "20", description = "seconds between the last connect and the reads")
    int settleSeconds;

    @Option(
            names = "--burst",
            defaultValue = "0",
            description = "messages each connection publishes (16 B, routed nowhere) before it idles")
    int burst;

    @Option(names = "--user", defaultValue = "guest")
    String user;

    @Option(names = "--password", defaultValue = "guest")
    String password;

    /** A routing key no queue has: the default exchange drops what is published with it. */
    private static final String NOWHERE = "warren-bench.many.nowhere";

    private ManyConnectionsMain() {}

    public static void main(String[] args) {
        System.exit(new CommandLine(new ManyConnectionsMain()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        String queue = "warren-bench.many." + Long.toHexString(System.nanoTime());
        Fleet fleet = client.equals("amqp-client") ? new AmqpClientFleet() : new WarrenFleet();
        int half = connections / 2;
        long connectStart = System.nanoTime();
        fleet.open(queue, 0, half);
        // The first half pays for what a process pays once (classes, allocator arenas, event loops): the second
        // half's growth is what one more connection costs. After bursts, both halves are read as long after them.
        TimeUnit.SECONDS.sleep(burst > 0 ? settleSeconds : 2);
        long heapHalf = settledHeap();
        long directHalf = direct();
        int threadsHalf = threadCount();
        fleet.open(queue, half, connections);
        double connectSeconds = (System.nanoTime() - connectStart) / 1e9;
        TimeUnit.SECONDS.sleep(settleSeconds); // the JIT's compiles of the connect path end before CPU is read
        long heap = settledHeap();
        long direct = direct();
        int threads = threadCount();
        long cpuStart = cpuNanos();
        TimeUnit.SECONDS.sleep(idleSeconds);
        long idleCpu = cpuNanos() - cpuStart;
        long rss = rssBytes();
        int added = connections - half;
        System.out.printf(
                Locale.ROOT,
                "%s: %d connections (1 channel, 1 idle consumer each%s) over ports %s, "
                        + "heartbeat %d s, connected in %.1f s%n",
                client,
                connections,
                burst > 0 ? ", " + burst + " messages published by each first" : "",
                ports,
                heartbeat,
                connectSeconds);
        System.out.printf(
                Locale.ROOT,
                "  per connection (the last %d): heap %.1f KiB, direct %.1f KiB, threads %.2f%n",
                added,
                (heap - heapHalf) / 1024.0 / added,
                (direct - directHalf) / 1024.0 / added,
                (threads - threadsHalf) / (double) added);
        System.out.printf(
                Locale.ROOT,
                "  process: threads %d, heap %.1f MiB, direct %.1f MiB, RSS %.0f MiB%n",
                threads,
                heap / 1048576.0,
                direct / 1048576.0,
                rss / 1048576.0);
        System.out.printf(
                Locale.ROOT,
                "  idle CPU over %d s (after %d s to settle): %.3f s = %.1f us/connection/s%n",
                idleSeconds,
                settleSeconds,
                idleCpu / 1e9,
                idleCpu / 1e3 / connections / idleSeconds);
        fleet.close(queue);
        return 0;
    }

    private Address address(int i) {
        return new Address(host, ports.get(i % ports.size()));
    }

    /** The addresses for connection {@code i}: its own node first, the others after it. */
    private List<Address> addressesFor(int i) {
        List<Address> list = new ArrayList<>();
        for (int k = 0; k < ports.size(); k++) {
            list.add(address(i + k));
        }
        return list;
    }

    private interface Fleet {
        /** Opens connections {@code from} (inclusive) to {@code to} (exclusive); connection 0 declares the queue. */
        void open(String queue, int from, int to) throws Exception;

        void close(String queue) throws Exception;
    }

    private final class WarrenFleet implements Fleet {
        private final AmqpClient amqp = AmqpClient.create(new ClientOptions());
        private final List<Connection> opened = new ArrayList<>();

        @Override
        public void open(String queue, int from, int to) throws Exception {
            ConnectionOptions base = new ConnectionOptions()
                    .username(user)
                    .password(password)
                    .requestedHeartbeat(heartbeat)
                    .shuffleAddresses(false)
                    .connectionTimeout(Duration.ofSeconds(30));
            for (int i = from; i < to; i++) {
                Connection c = amqp.connect(new ConnectionOptions(base)
                                .addresses(addressesFor(i))
                                .connectionName("many-" + i))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                opened.add(c);
                Channel ch = c.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
                if (i == 0) {
                    ch.queueDeclare(QueueSpec.named(queue))
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS);
                }
                ch.consume(queue, new ConsumeOptions().prefetch(10), d -> d.ack())
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                publishBurst(ch);
            }
        }

        /** {@code burst} publishes as fast as the channel takes them; returns once the last is written. */
        private void publishBurst(Channel ch) throws Exception {
            if (burst == 0) {
                return;
            }
            byte[] body = new byte[16];
            for (int m = 1; m < burst; m++) {
                if (!ch.isWritable()) {
                    ch.whenWritable().toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
                ch.publishNoOutcome("", NOWHERE, false, null, Unpooled.wrappedBuffer(body));
            }
            // written in order: when the last is, all are
            ch.publish("", NOWHERE, false, null, Unpooled.wrappedBuffer(body))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
        }

        @Override
        public void close(String queue) throws Exception {
            opened.get(0)
                    .openChannel()
                    .thenCompose(ch -> ch.queueDelete(queue))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            List<CompletableFuture<Void>> closes = new ArrayList<>();
            for (Connection c : opened) {
                closes.add(c.close().toCompletableFuture());
            }
            CompletableFuture.allOf(closes.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            amqp.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    /** amqp-client with its defaults: blocking I/O, a reader thread per connection. */
    private final class AmqpClientFleet implements Fleet {
        private final List<com.rabbitmq.client.Connection> opened = new ArrayList<>();

        @Override
        public void open(String queue, int from, int to) throws Exception {
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUsername(user);
            factory.setPassword(password);
            factory.setRequestedHeartbeat(heartbeat);
            for (int i = from; i < to; i++) {
                List<com.rabbitmq.client.Address> list = new ArrayList<>();
                for (Address a : addressesFor(i)) {
                    list.add(new com.rabbitmq.client.Address(a.host(), a.port()));
                }
                com.rabbitmq.client.Connection c =
                        factory.newConnection(null, AmqpClientDriver.inOrder(list), "many-" + i);
                opened.add(c);
                com.rabbitmq.client.Channel ch = c.createChannel();
                if (i == 0) {
                    ch.queueDeclare(queue, false, false, false, null);
                }
                ch.basicQos(10);
                ch.basicConsume(queue, false, new DefaultConsumer(ch));
                byte[] body = new byte[16];
                for (int m = 0; m < burst; m++) {
                    ch.basicPublish("", NOWHERE, null, body); // written when it returns
                }
            }
        }

        @Override
        public void close(String queue) throws Exception {
            opened.get(0).createChannel().queueDelete(queue);
            for (com.rabbitmq.client.Connection c : opened) {
                c.close();
            }
        }
    }

    private static long settledHeap() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            TimeUnit.MILLISECONDS.sleep(200);
        }
        MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        return heap.getUsed();
    }

    private static int threadCount() {
        return ManagementFactory.getThreadMXBean().getThreadCount();
    }

    /** Counted once: Netty's chunks are in the JDK's pool and in Netty's own count ({@link DirectMemory}). */
    private static long direct() {
        return DirectMemory.used();
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long rssBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }
}
