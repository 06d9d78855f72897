package io.warren.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code rabbitmqctl} for tests that act on the broker's side: closing connections, stopping the broker's
 * application, raising a memory alarm. Every call is bounded in time; a failure names the command and its output.
 */
public final class Rabbitmqctl {

    private Rabbitmqctl() {}

    /** Runs {@code rabbitmqctl args...} and returns its output; fails when it exits non-zero. */
    public static String run(String... args) throws IOException, InterruptedException {
        return run(List.of(), args);
    }

    /** Runs {@code rabbitmqctl first... args...} ({@code first}: {@code -n NODE}, or none). */
    static String run(List<String> first, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add("rabbitmqctl");
        command.addAll(first);
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new AssertionError(String.join(" ", command) + " failed: " + out);
        }
        return out;
    }

    /** The broker's pids of the open connections whose client properties mention {@code connectionName}. */
    public static List<String> connectionPids(String connectionName) throws IOException, InterruptedException {
        return connectionPids(List.of(), connectionName);
    }

    /** {@link #connectionPids(String)} asked with {@code nodeArgs} first ({@code -n NODE}, or none). */
    static List<String> connectionPids(List<String> nodeArgs, String connectionName)
            throws IOException, InterruptedException {
        List<String> pids = new ArrayList<>();
        String out = run(nodeArgs, "-q", "list_connections", "pid", "client_properties", "--no-table-headers");
        for (String line : out.split("\n")) {
            if (line.contains(connectionName)) {
                pids.add(line.split("\t")[0].trim());
            }
        }
        return pids;
    }

    /**
     * Closes, on the broker's side (320 CONNECTION_FORCED), the connection named {@code connectionName}: waits up
     * to 30 s for the broker to list it (it does once it is fully open).
     */
    public static void closeConnection(String connectionName, String reason) throws Exception {
        closeConnection(List.of(), connectionName, reason);
    }

    /**
     * {@link #closeConnection(String, String)} with {@code nodeArgs} first in each command ({@code -n NODE}, or
     * none): a cluster node lists and closes the connections of the whole cluster.
     */
    static void closeConnection(List<String> nodeArgs, String connectionName, String reason) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            List<String> pids = connectionPids(nodeArgs, connectionName);
            if (!pids.isEmpty()) {
                for (String pid : pids) {
                    run(nodeArgs, "close_connection", pid, reason);
                }
                return;
            }
            Thread.sleep(250);
        }
        throw new AssertionError(
                "rabbitmqctl " + String.join(" ", nodeArgs) + " does not list a connection named " + connectionName);
    }

    /**
     * {@code list_queues name messages_ready messages_unacknowledged} for {@code queue} (in the default virtual
     * host): {ready, unacknowledged}, as the broker counts them now. Needs no management plugin.
     */
    public static long[] queueCounts(String queue) throws IOException, InterruptedException {
        String out = run("-q", "list_queues", "name", "messages_ready", "messages_unacknowledged");
        for (String line : out.split("\n")) {
            String[] columns = line.trim().split("\t");
            if (columns.length == 3 && columns[0].equals(queue)) {
                return new long[] {Long.parseLong(columns[1].trim()), Long.parseLong(columns[2].trim())};
            }
        }
        throw new AssertionError("rabbitmqctl list_queues does not list " + queue + ": " + out);
    }

    /** {@code rabbitmqctl eval expression}: its printed result. */
    public static String eval(String expression) throws IOException, InterruptedException {
        return run("eval", expression).trim();
    }

    /** stop_app: the node stays up, AMQP listeners close, every connection is dropped. */
    public static void stopApp() throws IOException, InterruptedException {
        run("stop_app");
    }

    /** start_app then await_startup: the broker accepts connections again when this returns. */
    public static void startApp() throws IOException, InterruptedException {
        run("start_app");
        run("await_startup");
    }

    /** Sets the memory high watermark (a fraction of RAM): 0.00001 raises the memory alarm at once. */
    public static void setVmMemoryHighWatermark(String fraction) throws IOException, InterruptedException {
        run("set_vm_memory_high_watermark", fraction);
    }
}
