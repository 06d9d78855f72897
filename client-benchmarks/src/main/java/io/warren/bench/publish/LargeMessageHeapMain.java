package io.warren.bench.publish;

import java.util.Locale;

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
 * {@code warren} publishes the {@code byte[]} (wrapped: the JDK copies it at each socket write into the event
 * loop's temporary direct buffer, off the heap); {@code warren-direct} a direct {@code ByteBuffer} (no copy at all).
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
        String exchange = "warren-bench.large." + Long.toHexString(System.nanoTime());
        OneConnectionPublishers runner = client.startsWith("warren")
                ? OneConnectionPublishers.warren(
                        uri,
                        "large-message heap",
                        exchange,
                        THREADS,
                        true,
                        body,
                        client.equals("warren-direct")
                                ? OneConnectionPublishers.Body.DIRECT
                                : OneConnectionPublishers.Body.ARRAY)
                : OneConnectionPublishers.amqpClient(
                        uri, "large-message heap (amqp-client)", exchange, THREADS, true, body);
        try {
            runner.run(MESSAGES); // warm-up round: JIT, buffer pools
            long baseline = JvmMeter.settledHeap();
            long gcs = JvmMeter.gcCount();
            long gcMillis = JvmMeter.gcMillis();
            long allocated = JvmMeter.allocatedBytes();
            long start = System.nanoTime();
            long peak;
            try (JvmMeter.PeakHeap heap = new JvmMeter.PeakHeap()) {
                runner.run(MESSAGES);
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
}
