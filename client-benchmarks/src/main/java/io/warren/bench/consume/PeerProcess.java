package io.warren.bench.consume;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.TimeUnit;

/**
 * H4's {@code LoopbackPeer} in source mode, in a JVM of its own: it streams pre-encoded deliveries to every
 * consumer, and its CPU and allocation stay out of the measuring JVM. Started from this JVM's class path.
 */
final class PeerProcess implements AutoCloseable {

    private final Process process;
    private final int port;

    private PeerProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** A peer whose deliveries carry bodies of {@code bodySize} bytes. */
    static PeerProcess startSource(int bodySize) throws IOException, InterruptedException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Process p = new ProcessBuilder(java, "-Xmx512m", "-Dio.netty.leakDetection.level=disabled", "-cp",
                System.getProperty("java.class.path"), "io.warren.perf.LoopbackPeer", "source", String.valueOf(port),
                String.valueOf(bodySize))
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

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
