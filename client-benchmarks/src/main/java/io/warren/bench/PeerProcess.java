package io.warren.bench;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * H4's {@code LoopbackPeer} in a JVM of its own, started from this JVM's class path: its threads' CPU and
 * allocation stay out of the measuring JVM (JMH's {@code -prof gc} counts every thread of its JVM). In sink mode it
 * reads and confirms publishes without a broker; in source mode it streams pre-encoded deliveries to every
 * consumer.
 */
public final class PeerProcess implements AutoCloseable {

    private final Process process;
    private final int port;

    private PeerProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** A peer that reads and confirms publishes. */
    public static PeerProcess startSink() throws IOException, InterruptedException {
        return start(List.of(), "sink");
    }

    /**
     * A hostile peer that ignores basic.qos: each consumer gets {@code deliveries} deliveries of {@code bodySize}
     * bytes as fast as the socket takes them, whatever its prefetch.
     */
    public static PeerProcess startFlood(int bodySize, long deliveries) throws IOException, InterruptedException {
        return start(
                List.of("-Dio.netty.leakDetection.level=disabled"),
                "flood",
                String.valueOf(bodySize),
                String.valueOf(deliveries));
    }

    /** A peer whose deliveries carry bodies of {@code bodySize} bytes (its own leak detection off). */
    public static PeerProcess startSource(int bodySize) throws IOException, InterruptedException {
        return start(List.of("-Dio.netty.leakDetection.level=disabled"), "source", String.valueOf(bodySize));
    }

    private static PeerProcess start(List<String> jvmFlags, String mode, String... args)
            throws IOException, InterruptedException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.add("-Xmx512m");
        command.addAll(jvmFlags);
        // e.g. -Dwarren.peer.jvmArgs=-XX:StartFlightRecording=filename=peer.jfr to profile the peer
        String extra = System.getProperty("warren.peer.jvmArgs", "").trim();
        if (!extra.isEmpty()) {
            command.addAll(List.of(extra.split("\\s+")));
        }
        command.addAll(List.of(
                "-cp",
                System.getProperty("java.class.path"),
                "io.warren.perf.LoopbackPeer",
                mode,
                String.valueOf(port)));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try (Socket probe = new Socket()) {
                probe.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return new PeerProcess(p, port);
            } catch (IOException notYet) {
                if (!p.isAlive() || System.nanoTime() > deadline) {
                    p.destroyForcibly();
                    throw new IOException("the loopback peer did not start on port " + port, notYet);
                }
                Thread.sleep(50);
            }
        }
    }

    /** The peer's AMQP URI. */
    public String uri() {
        return "amqp://guest:guest@127.0.0.1:" + port;
    }

    /** CPU time the peer's process has used so far (all its threads; the OS counts it in clock ticks), or -1. */
    public long cpuNanos() {
        return process.info()
                .totalCpuDuration()
                .map(java.time.Duration::toNanos)
                .orElse(-1L);
    }

    /** The port the peer listens on. */
    public int port() {
        return port;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
