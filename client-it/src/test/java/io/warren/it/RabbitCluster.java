package io.warren.it;

import io.warren.Address;
import io.warren.ConnectionOptions;
import io.warren.RecoveryOptions;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The 3-node RabbitMQ cluster the cluster tests ({@code *ClusterIT}, {@code StreamIT}) run against: the one
 * {@code scripts/rabbitmq-cluster.sh start} starts on loopback (see client-it/README.md). A missing cluster fails
 * the test with that instruction: it is never skipped.
 *
 * <p>Nodes are stopped and started with {@code rabbitmqctl -n NODE stop_app / start_app}; {@link #startAll()}
 * (after each test) starts again whatever a failed test left stopped.
 */
public final class RabbitCluster {

    /** One node: its Erlang name and AMQP port on 127.0.0.1. */
    public record Node(String name, int port) {
        public Address address() {
            return new Address("127.0.0.1", port);
        }

        @Override
        public String toString() {
            return name + " (:" + port + ")";
        }
    }

    public static final List<Node> NODES = List.of(
            new Node("rabbit2@localhost", 5673),
            new Node("rabbit3@localhost", 5674),
            new Node("rabbit4@localhost", 5675));

    private RabbitCluster() {}

    /** Fails (AssertionError) unless every node answers AMQP, naming the script that starts the cluster. */
    public static void require() {
        List<String> down = new ArrayList<>();
        for (Node n : NODES) {
            if (!answers(n.port())) {
                down.add(n.toString());
            }
        }
        if (!down.isEmpty()) {
            throw new AssertionError("No RabbitMQ cluster for the cluster tests: nothing answers AMQP for " + down
                    + ". Start it with `scripts/rabbitmq-cluster.sh start` (3 nodes on 127.0.0.1:5673-5675 beside"
                    + " the single broker; see client-it/README.md).");
        }
    }

    private static boolean answers(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The node listening on {@code port}. */
    public static Node nodeAt(int port) {
        for (Node n : NODES) {
            if (n.port() == port) {
                return n;
            }
        }
        throw new AssertionError("no cluster node on port " + port);
    }

    public static Node byName(String name) {
        for (Node n : NODES) {
            if (n.name().equals(name)) {
                return n;
            }
        }
        throw new AssertionError("no cluster node named " + name);
    }

    /** The addresses of {@code nodes}, in that order. */
    public static List<Address> addresses(List<Node> nodes) {
        return nodes.stream().map(Node::address).toList();
    }

    /**
     * Options for the whole cluster in the order given, guest/guest, with a quick recovery backoff (a test should
     * not wait seconds for the first attempt).
     */
    public static ConnectionOptions options(String name, List<Node> order) {
        return new ConnectionOptions()
                .addresses(addresses(order))
                .connectionName(name)
                .recovery(new RecoveryOptions().backoff(Duration.ofMillis(100), Duration.ofSeconds(1), 2.0, 0.2));
    }

    /** {@code rabbitmqctl -n node args...}. */
    public static String ctl(Node node, String... args) throws IOException, InterruptedException {
        return Rabbitmqctl.run(List.of("-n", node.name()), args);
    }

    /** stop_app: the node's VM stays, its listeners close and its connections drop; its replicas go offline. */
    public static void stopApp(Node node) throws IOException, InterruptedException {
        ctl(node, "stop_app");
    }

    /** start_app then await_startup: the node serves AMQP again when this returns. */
    public static void startApp(Node node) throws IOException, InterruptedException {
        ctl(node, "start_app");
        ctl(node, "await_startup");
    }

    /** Starts the application of every node that has it stopped (after a test, whatever it left). */
    public static void startAll() throws IOException, InterruptedException {
        for (Node n : NODES) {
            if (!answers(n.port())) {
                startApp(n);
            }
        }
    }

    /** The node holding the leader of quorum queue (or stream) {@code queue}, as a live node reports it. */
    public static Node leaderOf(String queue) throws IOException, InterruptedException {
        for (Node asked : NODES) {
            if (!answers(asked.port())) {
                continue;
            }
            String out = ctl(asked, "-q", "list_queues", "name", "leader", "--no-table-headers");
            for (String line : out.split("\n")) {
                String[] cols = line.split("\t");
                if (cols.length == 2 && cols[0].trim().equals(queue)) {
                    return byName(cols[1].trim());
                }
            }
            throw new AssertionError(asked + " does not list queue " + queue + " with a leader: " + out);
        }
        throw new AssertionError("no running node to ask for the leader of " + queue);
    }

    /** Closes, on the broker's side (320 CONNECTION_FORCED), every connection named {@code name} in the cluster. */
    public static void closeConnection(String name, String reason) throws Exception {
        // list_connections on one node lists the whole cluster's: a live node is enough
        Node asked = NODES.stream()
                .filter(n -> answers(n.port()))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no running node to close " + name + " on"));
        Rabbitmqctl.closeConnection(List.of("-n", asked.name()), name, reason);
    }
}
