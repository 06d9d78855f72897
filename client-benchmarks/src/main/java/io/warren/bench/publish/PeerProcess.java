package io.warren.bench.publish;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.TimeUnit;

/**
 * H4's {@code LoopbackPeer} in sink mode, in a JVM of its own: it reads and confirms publishes without a
 * broker, and its threads' CPU and allocation stay out of the measuring JVM (JMH's {@code -prof gc} counts every
 * thread of its JVM). Started from the benchmark's own class path.
 */
final class PeerProcess implements AutoCloseable {

    private final Process process;
    private final int port;

    private PeerProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    static PeerProcess startSink() throws IOException, InterruptedException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Process p = new ProcessBuilder(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                "io.warren.perf.LoopbackPeer", "sink", String.valueOf(port))
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

    String uri() {
        return "amqp://guest:guest@127.0.0.1:" + port;
    }

    int port() {
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
