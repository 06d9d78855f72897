package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Connection;
import io.warren.ConnectionLostException;
import io.warren.RecoveryListener;
import io.warren.it.RabbitCluster.Node;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Connecting to a cluster through an address list: a node that is down is passed over, shuffled addresses spread
 * connections over the nodes, and a reconnect tries the addresses as the first connect did: in order (connections
 * pile onto the next address and stay there), or shuffled again (they spread).
 */
@Tag("cluster")
class ConnectClusterIT {

    private static final Duration T = Duration.ofSeconds(60);

    private final List<Connection> opened = new ArrayList<>();

    @BeforeAll
    static void cluster() {
        RabbitCluster.require();
    }

    @AfterEach
    void closeAndRestart() throws Exception {
        List<CompletableFuture<Void>> closes = new ArrayList<>();
        for (Connection c : opened) {
            closes.add(c.close().toCompletableFuture());
        }
        CompletableFuture.allOf(closes.toArray(CompletableFuture[]::new)).get(T.toSeconds(), TimeUnit.SECONDS);
        RabbitCluster.startAll();
    }

    private List<Connection> open(int count, String name, boolean shuffle) throws Exception {
        List<CompletableFuture<Connection>> all = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            all.add(BrokerExtension.client()
                    .connect(RabbitCluster.options(name + "-" + i, RabbitCluster.NODES)
                            .shuffleAddresses(shuffle))
                    .toCompletableFuture());
        }
        List<Connection> connections = new ArrayList<>();
        for (CompletableFuture<Connection> f : all) {
            Connection c = f.get(T.toSeconds(), TimeUnit.SECONDS);
            opened.add(c);
            connections.add(c);
        }
        return connections;
    }

    /** How many connections each node holds, by node name (every node listed, 0 included). */
    private static Map<String, Integer> split(List<Connection> connections) {
        Map<String, Integer> split = new TreeMap<>();
        RabbitCluster.NODES.forEach(n -> split.put(n.name(), 0));
        for (Connection c : connections) {
            split.merge(RabbitCluster.nodeAt(c.address().port()).name(), 1, Integer::sum);
        }
        return split;
    }

    @Test
    void aListWhoseFirstNodeIsDownConnectsToTheNext() throws Exception {
        Node first = RabbitCluster.NODES.get(0);
        RabbitCluster.stopApp(first);
        Connection c = open(1, "cluster-first-down", false).get(0);
        assertEquals(RabbitCluster.NODES.get(1).port(), c.address().port(), "the second address, in order");
    }

    @Test
    void shuffledAddressesSpreadConnectionsOverTheNodes() throws Exception {
        List<Connection> connections = open(300, "cluster-spread", true);
        Map<String, Integer> split = split(connections);
        System.out.println("[ConnectClusterIT] 300 connections with shuffleAddresses(true): " + split);
        // each node's share is binomial(300, 1/3): mean 100, standard deviation ~8; 40 is over 7 deviations away
        split.forEach((node, n) -> assertTrue(n >= 40, () -> node + " got " + n + " of 300: " + split));
    }

    /** Waits until every connection of {@code connections} has recovered once. */
    private static CountDownLatch recoveries(List<Connection> connections) {
        CountDownLatch latch = new CountDownLatch(connections.size());
        for (Connection c : connections) {
            c.addRecoveryListener(new RecoveryListener() {
                @Override
                public void recoveryStarted(Connection connection, ConnectionLostException cause) {}

                @Override
                public void recoverySucceeded(Connection connection) {
                    latch.countDown();
                }
            });
        }
        return latch;
    }

    @Test
    void inOrderReconnectsPileOntoTheNextAddressAndStayWhenTheNodeComesBack() throws Exception {
        List<Connection> connections = open(30, "cluster-pile", false);
        Node first = RabbitCluster.NODES.get(0);
        assertEquals(Map.of(first.name(), 30), withoutZeros(split(connections)), "all on the first address");
        CountDownLatch recovered = recoveries(connections);
        RabbitCluster.stopApp(first);
        assertTrue(recovered.await(T.toSeconds(), TimeUnit.SECONDS), "all recovered");
        Map<String, Integer> after = split(connections);
        RabbitCluster.startApp(first);
        Map<String, Integer> back = split(connections);
        System.out.println("[ConnectClusterIT] 30 connections in address order: after " + first + " stopped " + after
                + "; once it is back " + back);
        assertEquals(Map.of(RabbitCluster.NODES.get(1).name(), 30), withoutZeros(after), "piled onto the second");
        assertEquals(after, back, "a recovered connection stays where it is when the node comes back");
        // the broker's own view, now that the first node serves again: none of the 30 on it, none lost
        Await.awaitQuery(() -> back.equals(brokerSplit("cluster-pile-")), T, "the broker to list the 30 as " + back);
        assertEquals(back, brokerSplit("cluster-pile-"), "the broker holds the connections where the client says");
    }

    @Test
    void shuffledReconnectsSpreadLikeInitialConnects() throws Exception {
        List<Connection> connections = open(90, "cluster-respread", true);
        Node stopped = RabbitCluster.NODES.get(0);
        List<Connection> moving = connections.stream()
                .filter(c -> c.address().port() == stopped.port())
                .toList();
        assertTrue(moving.size() >= 10, () -> moving.size() + " of 90 on " + stopped);
        CountDownLatch recovered = recoveries(moving);
        RabbitCluster.stopApp(stopped);
        assertTrue(recovered.await(T.toSeconds(), TimeUnit.SECONDS), "all recovered");
        Map<String, Integer> movedTo = split(moving);
        System.out.println("[ConnectClusterIT] the " + moving.size() + " shuffled connections of " + stopped
                + " reconnected to " + movedTo);
        assertEquals(0, movedTo.get(stopped.name()));
        // each of the others gets each moving connection with probability 1/2: all on one is 2^-(n-1) at worst 2^-9
        movedTo.forEach((node, n) ->
                assertTrue(node.equals(stopped.name()) || n > 0, () -> "reconnects not spread: " + movedTo));
    }

    /**
     * How many connections whose name starts with {@code namePrefix} each node holds, as the broker lists them
     * (by the port each was accepted on), by node name, every node listed.
     */
    private static Map<String, Integer> brokerSplit(String namePrefix) throws Exception {
        Map<String, Integer> split = new TreeMap<>();
        RabbitCluster.NODES.forEach(n -> split.put(n.name(), 0));
        String out = RabbitCluster.ctl(
                RabbitCluster.NODES.get(1),
                "-q",
                "list_connections",
                "port",
                "client_properties",
                "--no-table-headers");
        for (String line : out.split("\n")) {
            if (line.contains(namePrefix)) {
                int port = Integer.parseInt(line.split("\t")[0].trim());
                split.merge(RabbitCluster.nodeAt(port).name(), 1, Integer::sum);
            }
        }
        return split;
    }

    private static Map<String, Integer> withoutZeros(Map<String, Integer> split) {
        Map<String, Integer> m = new TreeMap<>(split);
        m.values().removeIf(n -> n == 0);
        return m;
    }
}
