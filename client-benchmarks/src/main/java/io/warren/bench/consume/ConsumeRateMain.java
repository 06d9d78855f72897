package io.warren.bench.consume;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.QueueSpec;
import io.warren.bench.PeerProcess;
import io.warren.perf.AmqpClientDriver;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * Consume throughput, side by side, Warren against amqp-client 5, in one run: bodies of 16 B and 1 KiB, noAck and
 * manual acknowledgement (prefetch 1,000, an ack with {@code multiple=true} every 100 deliveries), one consumer,
 * then 1 against 32 consumers on one connection. Each client gets one connection with one channel per consumer;
 * Warren's handler runs on the connection's event loop (its default context), amqp-client's on its consumer work
 * pool (its default). Handlers only count (and ack).
 *
 * <ul>
 *   <li>{@code peer}: client-only. H4's {@code LoopbackPeer} in source mode, in a JVM of its own, streams
 *       pre-encoded deliveries to every consumer as fast as the socket takes them (up to the prefetch with manual
 *       acks), so what is measured is the client. Each run: a warm-up, then three windows, the best reported
 *       (the machine may be shared: the best window has the least interference).</li>
 *   <li>{@code broker}: the real broker. The queue is filled before each run (not measured), then the consumers
 *       drain it; the rate is the broker's as much as the client's.</li>
 * </ul>
 *
 * Reported per run: deliveries per second; CPU per delivery (this JVM's process CPU over the window: the client's
 * threads, GC and JIT); against the peer, the peer process's CPU per delivery too (client and peer share the
 * machine: when the two add up to its cores, the rate is what the pair can do, not the client alone); heap bytes
 * allocated per delivery by all of this JVM's threads; and, for Warren, by its event-loop threads alone
 * ({@code warren-io-*}, where the handler runs).
 *
 * <pre>
 * java -Xmx1g -cp client-benchmarks/target/benchmarks.jar io.warren.bench.consume.ConsumeRateMain peer [seconds] [runs]
 * java -Xmx1g -cp client-benchmarks/target/benchmarks.jar io.warren.bench.consume.ConsumeRateMain broker [messages] [uri] [consumers]
 * </pre>
 * {@code consumers} (broker): comma-separated counts of consumers sharing the one queue, e.g. {@code 1,32}.
 * {@code runs} picks peer runs instead of the full table, each {@code size/noAck|ack/consumers}, comma-separated,
 * e.g. {@code 16/ack/1,16/ack/32}: both clients, in the order given.
 */
public final class ConsumeRateMain {

    static final int PREFETCH = 1000;
    static final int ACK_EVERY = 100;

    private ConsumeRateMain() {}

    /** One consuming client under test. */
    interface Client extends AutoCloseable {
        String name();

        /** Opens one connection with a channel per consumer. */
        void open(String uri, int consumers) throws Exception;

        /** Starts a consumer of {@code queue} on each channel. */
        void consume(String queue, boolean noAck) throws Exception;

        default void start(String uri, String queue, int consumers, boolean noAck) throws Exception {
            open(uri, consumers);
            consume(queue, noAck);
        }

        long received();

        @Override
        void close() throws Exception;
    }

    /** What one run measured. */
    record Result(
            String client,
            String source,
            int size,
            boolean noAck,
            int consumers,
            long messages,
            double seconds,
            long cpuNanos,
            long allocated,
            long loopAllocated,
            long peerCpuNanos) {

        double rate() {
            return messages / seconds;
        }

        String line() {
            return String.format(
                    Locale.ROOT,
                    "%-11s %-6s %5d B  %-8s %2d consumer%s  %,11.0f msg/s  CPU %6.2f us/msg"
                            + "%s  alloc %7.1f B/msg%s",
                    client,
                    source,
                    size,
                    noAck ? "noAck" : "ack/100",
                    consumers,
                    consumers == 1 ? " " : "s",
                    rate(),
                    cpuNanos / 1e3 / messages,
                    peerCpuNanos < 0 ? "" : String.format(Locale.ROOT, " (peer %5.2f)", peerCpuNanos / 1e3 / messages),
                    (double) allocated / messages,
                    loopAllocated < 0
                            ? ""
                            : String.format(
                                    Locale.ROOT, " (event loop %.1f B/msg)", (double) loopAllocated / messages));
        }
    }

    public static void main(String[] args) throws Exception {
        String source = args.length > 0 ? args[0] : "peer";
        List<Result> results = new ArrayList<>();
        if (source.equals("peer")) {
            int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
            List<PeerCase> cases = args.length > 2 ? PeerCase.parse(args[2]) : PeerCase.table();
            for (int size : cases.stream().mapToInt(PeerCase::size).distinct().toArray()) {
                try (PeerProcess peer = PeerProcess.startSource(size)) {
                    // JIT, in this JVM and in the new peer's: both clients' paths and the peer's pump compiled
                    // before anything is measured (else the first run after a peer starts pays for it)
                    System.out.println("warm-up (not reported):");
                    for (String client : new String[] {"warren", "amqp-client"}) {
                        for (boolean noAck : new boolean[] {true, false}) {
                            peerRun(client, peer, size, noAck, 1, 1);
                        }
                    }
                    System.out.println("measured:");
                    for (PeerCase c : cases) {
                        if (c.size() == size) {
                            for (String client : new String[] {"warren", "amqp-client"}) {
                                results.add(peerRun(client, peer, size, c.noAck(), c.consumers(), seconds));
                            }
                        }
                    }
                }
            }
        } else {
            int messages = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
            String uri = args.length > 2 ? args[2] : "amqp://guest:guest@127.0.0.1:5672";
            int[] consumerCounts = args.length > 3
                    ? java.util.Arrays.stream(args[3].split(","))
                            .mapToInt(Integer::parseInt)
                            .toArray()
                    : new int[] {1};
            for (int size : new int[] {16, 1024}) {
                int n = size >= 1024 ? messages / 2 : messages;
                for (boolean noAck : new boolean[] {true, false}) {
                    for (int consumers : consumerCounts) {
                        for (String client : new String[] {"warren", "amqp-client"}) {
                            results.add(brokerRun(client, uri, size, noAck, consumers, n));
                        }
                    }
                }
            }
        }
        System.out.println();
        System.out.println("=== consume, " + source + " (" + Runtime.version() + ", "
                + Runtime.getRuntime().availableProcessors() + " CPUs) ===");
        for (Result r : results) {
            System.out.println(r.line());
        }
    }

    /** One peer run: body size, noAck or manual acks, consumers on the connection. */
    record PeerCase(int size, boolean noAck, int consumers) {

        /** The table BENCHMARKS.md records. */
        static List<PeerCase> table() {
            List<PeerCase> all = new ArrayList<>();
            for (int size : new int[] {16, 1024}) {
                for (boolean noAck : new boolean[] {true, false}) {
                    all.add(new PeerCase(size, noAck, 1));
                }
                if (size == 16) {
                    for (boolean noAck : new boolean[] {true, false}) {
                        all.add(new PeerCase(size, noAck, 32));
                    }
                }
            }
            return all;
        }

        /** {@code size/noAck|ack/consumers,...} */
        static List<PeerCase> parse(String spec) {
            List<PeerCase> all = new ArrayList<>();
            for (String one : spec.split(",")) {
                String[] f = one.trim().split("/");
                if (f.length != 3 || !(f[1].equals("noAck") || f[1].equals("ack"))) {
                    throw new IllegalArgumentException("a run is size/noAck|ack/consumers, not '" + one + "'");
                }
                all.add(new PeerCase(Integer.parseInt(f[0]), f[1].equals("noAck"), Integer.parseInt(f[2])));
            }
            return all;
        }
    }

    static Client newClient(String name) {
        return name.equals("warren") ? new WarrenClient() : new AmqpJavaClient();
    }

    /**
     * Warm-up (2 s, or the window if shorter), then three measured windows on the same connection; the best
     * window is reported. The machine is shared: the best of three is the client's rate with the least
     * interference from other processes (each window's CPU and allocation are its own).
     */
    static Result peerRun(String clientName, PeerProcess peer, int size, boolean noAck, int consumers, int seconds)
            throws Exception {
        try (Client client = newClient(clientName)) {
            client.start(peer.uri(), "peer-queue", consumers, noAck);
            Thread.sleep(TimeUnit.SECONDS.toMillis(Math.min(2, seconds)));
            Result best = null;
            StringBuilder windows = new StringBuilder();
            for (int window = 0; window < 3; window++) {
                long count = client.received();
                long cpu = JvmMeter.cpuNanos();
                long allocated = JvmMeter.allocatedBytes();
                long loop = JvmMeter.allocatedBytes("warren-io");
                long peerCpu = peer.cpuNanos();
                long start = System.nanoTime();
                Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
                Result r = new Result(
                        clientName,
                        "peer",
                        size,
                        noAck,
                        consumers,
                        client.received() - count,
                        (System.nanoTime() - start) / 1e9,
                        JvmMeter.cpuNanos() - cpu,
                        JvmMeter.allocatedBytes() - allocated,
                        clientName.equals("warren") ? JvmMeter.allocatedBytes("warren-io") - loop : -1,
                        peerCpu < 0 ? -1 : peer.cpuNanos() - peerCpu);
                windows.append(windows.length() == 0 ? "" : " / ")
                        .append(String.format(Locale.ROOT, "%,.0f", r.rate()));
                if (best == null || r.rate() > best.rate()) {
                    best = r;
                }
            }
            System.out.println(best.line() + "  [windows " + windows + "]");
            return best;
        }
    }

    /** Fills a queue with {@code messages} (not measured), then times the client draining it. */
    static Result brokerRun(String clientName, String uri, int size, boolean noAck, int consumers, int messages)
            throws Exception {
        String queue = "warren-bench-consume-" + System.nanoTime();
        BrokerQueue.fill(uri, queue, messages / 5, size);
        try (Client warmUp = newClient(clientName)) {
            warmUp.start(uri, queue, 1, noAck);
            waitFor(warmUp, messages / 5);
        }
        BrokerQueue.fill(uri, queue, messages, size);
        try (Client client = newClient(clientName)) {
            client.open(uri, consumers);
            long cpu = JvmMeter.cpuNanos();
            long allocated = JvmMeter.allocatedBytes();
            long loop = JvmMeter.allocatedBytes("warren-io");
            long start = System.nanoTime();
            client.consume(queue, noAck);
            waitFor(client, messages);
            Result r = new Result(
                    clientName,
                    "broker",
                    size,
                    noAck,
                    consumers,
                    messages,
                    (System.nanoTime() - start) / 1e9,
                    JvmMeter.cpuNanos() - cpu,
                    JvmMeter.allocatedBytes() - allocated,
                    clientName.equals("warren") ? JvmMeter.allocatedBytes("warren-io") - loop : -1,
                    -1);
            System.out.println(r.line());
            return r;
        } finally {
            BrokerQueue.delete(uri, queue);
        }
    }

    private static void waitFor(Client client, long messages) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (client.received() < messages) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(client.name() + " received " + client.received() + " of " + messages);
            }
            Thread.sleep(1);
        }
    }

    // ---- Warren ------------------------------------------------------------------------------------------------

    /** One Warren connection, a channel per consumer, handlers on the event loop. */
    static final class WarrenClient implements Client {
        private final AmqpClient amqp = AmqpClient.create();
        private final List<LongAdder> counts = new ArrayList<>();
        private final List<ConsumerHandle> handles = new ArrayList<>();
        private final List<Channel> channels = new ArrayList<>();
        private Connection connection;

        @Override
        public String name() {
            return "warren";
        }

        @Override
        public void open(String uri, int consumers) throws Exception {
            connection = amqp.connect(uri).toCompletableFuture().get(30, TimeUnit.SECONDS);
            for (int i = 0; i < consumers; i++) {
                channels.add(connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS));
            }
        }

        @Override
        public void consume(String queue, boolean noAck) throws Exception {
            ConsumeOptions options = noAck ? new ConsumeOptions().noAck(true) : new ConsumeOptions().prefetch(PREFETCH);
            for (Channel ch : channels) {
                ch.queueDeclare(QueueSpec.named(queue)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                LongAdder count = new LongAdder();
                counts.add(count);
                long[] n = new long[1]; // the handler runs on one event loop: a plain counter for the ack cadence
                handles.add(ch.consume(queue, options, d -> {
                            count.increment();
                            if (!noAck && ++n[0] % ACK_EVERY == 0) {
                                d.ack(true);
                            }
                        })
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS));
            }
        }

        @Override
        public long received() {
            long sum = 0;
            for (LongAdder c : counts) {
                sum += c.sum();
            }
            return sum;
        }

        @Override
        public void close() throws Exception {
            if (connection != null) {
                connection.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
            amqp.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    // ---- amqp-client -------------------------------------------------------------------------------------------

    /** One amqp-client connection (its defaults: blocking I/O, the consumer work pool), a channel per consumer. */
    static final class AmqpJavaClient implements Client {
        private final List<LongAdder> counts = new ArrayList<>();
        private final List<com.rabbitmq.client.Channel> channels = new ArrayList<>();
        private com.rabbitmq.client.Connection connection;

        @Override
        public String name() {
            return "amqp-client";
        }

        @Override
        public void open(String uri, int consumers) throws Exception {
            ConnectionFactory f = AmqpClientDriver.factory(uri); // a refused URI is named without its password
            connection = f.newConnection("consume-bench");
            for (int i = 0; i < consumers; i++) {
                channels.add(connection.createChannel());
            }
        }

        @Override
        public void consume(String queue, boolean noAck) throws Exception {
            for (com.rabbitmq.client.Channel ch : channels) {
                ch.queueDeclare(queue, false, false, false, null);
                if (!noAck) {
                    ch.basicQos(PREFETCH);
                }
                LongAdder count = new LongAdder();
                counts.add(count);
                ch.basicConsume(queue, noAck, new DefaultConsumer(ch) {
                    private long n; // amqp-client calls one channel's consumer from one thread at a time

                    @Override
                    public void handleDelivery(
                            String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
                            throws java.io.IOException {
                        count.increment();
                        if (!noAck && ++n % ACK_EVERY == 0) {
                            getChannel().basicAck(envelope.getDeliveryTag(), true);
                        }
                    }
                });
            }
        }

        @Override
        public long received() {
            long sum = 0;
            for (LongAdder c : counts) {
                sum += c.sum();
            }
            return sum;
        }

        @Override
        public void close() throws Exception {
            if (connection != null) {
                connection.abort(10_000);
            }
        }
    }
}
