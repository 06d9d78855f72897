package io.warren.bench.publish;

import io.netty.buffer.ByteBufAllocator;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOptions;
import io.warren.bench.PeerProcess;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * Publish rate of 16-byte messages with Warren's coalesced flushes (one flush per batch the event loop
 * drains) against a flush after every message ({@link PublishOptions#maxMessagesPerFlush(int)} 1, set on the
 * connection), into the loopback peer's sink in its own JVM. Publishers are fire and forget
 * ({@code publishNoOutcome}) and wait on {@code whenWritable()} whenever the channel is not writable; the rate
 * is counted from the first publish to the answer of a queue.declare sent after the last one (the peer has
 * read everything by then). Also reported: the JVM's CPU time per message and the write system calls per 1,000
 * messages (Linux {@code /proc/self/io}): one flush is one {@code write}/{@code writev}, so this counts flushes,
 * whatever the load on the machine.
 *
 * <pre>
 * java -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.FlushCoalescingMain [seconds] [threads,...]
 * </pre>
 */
public final class FlushCoalescingMain {

    private FlushCoalescingMain() {}

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        String[] threadCounts = (args.length > 1 ? args[1] : "1,4").split(",");
        try (PeerProcess peer = PeerProcess.startSink()) {
            AmqpClient client = AmqpClient.create();
            try {
                for (boolean perMessage : new boolean[] {false, true}) { // warm-up: JIT, pools
                    run(client, peer.uri(), 2, 3, perMessage);
                }
                for (String t : threadCounts) {
                    int threads = Integer.parseInt(t.trim());
                    for (boolean perMessage : new boolean[] {false, true, false, true}) {
                        Result r = run(client, peer.uri(), threads, seconds, perMessage);
                        System.out.printf(
                                Locale.ROOT,
                                "threads=%d flush=%-11s %,12.0f msg/s %,8.2f us CPU/msg"
                                        + " %,8.2f write syscalls per 1000 msgs%n",
                                threads,
                                perMessage ? "per-message" : "coalesced",
                                r.rate,
                                r.cpuMicrosPerMessage,
                                r.writeSyscallsPer1000);
                    }
                }
            } finally {
                client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        }
    }

    record Result(double rate, double cpuMicrosPerMessage, double writeSyscallsPer1000) {}

    /** Write system calls made by this process so far ({@code syscw} in /proc/self/io), -1 where there is none. */
    static long writeSyscalls() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/io"))) {
                if (line.startsWith("syscw:")) {
                    return Long.parseLong(line.substring(6).trim());
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux
        }
        return -1;
    }

    static Result run(AmqpClient client, String uri, int threads, int seconds, boolean perMessage) throws Exception {
        PublishOptions publishing = new PublishOptions()
                .maxMessagesPerFlush(perMessage ? 1 : PublishOptions.DEFAULT_MAX_MESSAGES_PER_FLUSH);
        Connection connection = client.connect(ConnectionOptions.fromUri(uri).publishOptions(publishing))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        try {
            Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            LongAdder published = new LongAdder();
            CyclicBarrier start = new CyclicBarrier(threads + 1);
            long[] began = new long[1];
            long deadline = TimeUnit.SECONDS.toNanos(seconds);
            List<Thread> workers = new ArrayList<>();
            ShortString key = ShortString.of("flush.bench");
            for (int i = 0; i < threads; i++) {
                Thread w = new Thread(
                        () -> {
                            try {
                                start.await();
                                long end = System.nanoTime() + deadline;
                                long n = 0;
                                while ((n & 255) != 0 || System.nanoTime() < end) {
                                    if (!ch.isWritable()) {
                                        ch.whenWritable().toCompletableFuture().join();
                                    }
                                    ch.publishNoOutcome(
                                            "",
                                            key,
                                            false,
                                            BasicProperties.EMPTY,
                                            ByteBufAllocator.DEFAULT
                                                    .directBuffer(16, 16)
                                                    .writeZero(16));
                                    n++;
                                }
                                published.add(n);
                            } catch (Exception e) {
                                throw new RuntimeException(e);
                            }
                        },
                        "publisher-" + i);
                w.start();
                workers.add(w);
            }
            start.await();
            began[0] = System.nanoTime();
            long cpu = JvmMeter.cpuNanos();
            long writes = writeSyscalls();
            for (Thread w : workers) {
                w.join();
            }
            // the peer answers after it has read everything written before
            ch.queueDeclare("flush.bench.sync").toCompletableFuture().get(60, TimeUnit.SECONDS);
            long elapsed = System.nanoTime() - began[0];
            long n = published.sum();
            return new Result(
                    n * 1e9 / elapsed, (JvmMeter.cpuNanos() - cpu) / 1e3 / n, (writeSyscalls() - writes) * 1000.0 / n);
        } finally {
            connection.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
