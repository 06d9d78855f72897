package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A program that closes its client can exit at once: once {@link AmqpClient#close()} has completed, no thread that
 * keeps a JVM alive (not a daemon) is left but the program's own. Netty's {@code MultiThreadIoEventLoopGroup}
 * started its global executor's thread (not a daemon, a one-second quiet period) to tell of its loops' termination,
 * and a program closing its client exited a second late.
 *
 * <p>In a JVM of its own: this one's other tests use Netty's groups, whose global executor thread comes and goes.
 */
class AmqpClientExitTest {

    /** The program: a client with its own loops tries a port where nothing listens, closes, lists the threads. */
    public static final class Program {
        public static void main(String[] args) throws Exception {
            AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(2));
            try {
                client.connect("amqp://guest:guest@127.0.0.1:" + args[0] + "/%2F")
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                throw new AssertionError("connected to a port where nothing listens");
            } catch (ExecutionException expected) {
                // ConnectionFailedException: the loop ran a channel all the same
            }
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            List<String> keepingAlive = new ArrayList<>();
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t != Thread.currentThread() && t.isAlive() && !t.isDaemon()) {
                    keepingAlive.add(t.getName());
                }
            }
            System.out.println("non-daemon threads after close: " + keepingAlive);
        }
    }

    @Test
    void afterCloseNoThreadKeepsTheJvmAlive() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // closed again: nothing listens here
        }
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Process p = new ProcessBuilder(
                        java, "-cp", System.getProperty("java.class.path"), Program.class.getName(), "" + port)
                .redirectErrorStream(true)
                .start();
        String out;
        try {
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the program did not end");
        } finally {
            p.destroyForcibly();
        }
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("non-daemon threads after close: []"), out);
    }
}
