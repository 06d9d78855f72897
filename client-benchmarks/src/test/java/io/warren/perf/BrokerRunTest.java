package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A short end-to-end run of amqp-client against the real broker (Warren's: {@link WarrenDriverTest}) (AMQP_URI, or guest/guest on
 * 127.0.0.1:5672), and what the tool does when no broker answers: it measures the client against its loopback
 * peer and says so. A missing broker fails the broker test, with the tool's own message: it is never skipped.
 */
public class BrokerRunTest {

    static String brokerUri() {
        String env = System.getenv("AMQP_URI");
        return env != null && !env.isBlank() ? env : "amqp://guest:guest@127.0.0.1:5672";
    }

    /** The broker's URI once something answers there; fails (never skips) when nothing does. */
    public static String requireBroker() {
        String uri = brokerUri();
        URI parsed = URI.create(uri);
        try (Socket probe = new Socket()) {
            probe.connect(
                    new InetSocketAddress(parsed.getHost(), parsed.getPort() < 0 ? 5672 : parsed.getPort()), 3_000);
        } catch (java.io.IOException e) {
            throw new AssertionError(
                    "no RabbitMQ answers at " + RunResult.redact(uri) + " (" + e
                            + "): start one (.ci/run does) or set AMQP_URI",
                    e);
        }
        return uri;
    }

    @Test
    void amqpClientPublishesConfirmsAndConsumesThroughRabbitMq(@TempDir Path dir) throws Exception {
        String uri = requireBroker();
        Path json = dir.resolve("broker.json");
        OptionsTest.Captured run = OptionsTest.run(
                "--client",
                "amqp-client",
                "-h",
                uri,
                "-x",
                "1",
                "-y",
                "2",
                "-C",
                "2000",
                "-c",
                "100",
                "-q",
                "200",
                "-A",
                "20",
                "-s",
                "256",
                "--json",
                json.toString());
        assertEquals(0, run.exit(), run.out() + run.err());

        Map<String, Object> r = PeerRunTest.asObject(Json.parse(Files.readString(json)));
        PeerRunTest.assertHasEveryField(r);
        assertEquals("amqp-client", r.get("client"));
        assertEquals(2000.0, PeerRunTest.number(r, "sent"));
        assertEquals(2000.0, PeerRunTest.number(r, "confirmed"));
        assertEquals(4000.0, PeerRunTest.number(r, "received"), "each consumer's server-named queue gets a copy");
        assertEquals("counts", r.get("stopped_by"));
        assertTrue(
                PeerRunTest.number(r, "consumer_latency_p99_us") >= PeerRunTest.number(r, "consumer_latency_p50_us"));
        assertTrue(PeerRunTest.number(r, "confirm_latency_p50_us") > 0);
        assertEquals(null, r.get("peer"));
        assertTrue(
                !String.valueOf(r.get("target")).contains(":guest@"), "no password in the results: " + r.get("target"));
        // .ci/run starts the broker on this machine, as root: there its node is found and read
        BrokerCpu node = BrokerCpu.find(BrokerCpu.localPorts(List.of(uri)));
        if (System.getenv("CI") != null && System.getenv("AMQP_URI") == null) {
            assertNotNull(node, "CI's broker runs here and root reads its /proc entries");
        }
        if (node != null) {
            assertTrue(PeerRunTest.number(r, "broker_cpu_ns_per_msg") > 0, "the broker's CPU: " + r);
            assertEquals(1.0, PeerRunTest.number(r, "broker_nodes"), "the node on the run's port, no other");
            assertTrue(run.out().contains("RabbitMQ node(s) serving the run, on this machine"), run.out());
        } else {
            assertNull(r.get("broker_cpu_ns_per_msg"), "a broker elsewhere, or not readable: no figure");
        }
    }

    /**
     * A named queue that is not auto-deleted may hold what an earlier run left: its consumers would take those first,
     * stamped by that run. Each client's run says so before it starts, with the count its declare-ok gave.
     */
    @ParameterizedTest
    @ValueSource(strings = {"amqp-client", "warren"})
    void aNamedQueueThatHeldMessagesBeforeTheRunIsWarnedAbout(String client) throws Exception {
        String uri = requireBroker();
        String queue = "warren-perf-queued-before-" + client + "-" + System.nanoTime();
        com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
        factory.setUri(uri);
        try (com.rabbitmq.client.Connection connection = factory.newConnection();
                com.rabbitmq.client.Channel channel = connection.createChannel()) {
            channel.queueDeclare(queue, true, false, false, null);
            channel.confirmSelect();
            for (int i = 0; i < 3; i++) {
                channel.basicPublish("", queue, null, new byte[16]);
            }
            channel.waitForConfirmsOrDie(10_000);
            try {
                OptionsTest.Captured run = OptionsTest.run(
                        "--client",
                        client,
                        "-h",
                        uri,
                        "-x",
                        "1",
                        "-y",
                        "1",
                        "-u",
                        queue,
                        "-ad",
                        "false",
                        "-C",
                        "100",
                        "-s",
                        "16");
                assertEquals(0, run.exit(), run.out() + run.err());
                assertTrue(
                        run.out().contains("WARNING: queue '" + queue + "' held 3 message(s) before this run"),
                        run.out());
            } finally {
                channel.queueDelete(queue);
            }
        }
    }

    @Test
    void withNoBrokerTheDefaultRunMeasuresTheClientAgainstTheLoopbackPeerAndSaysSo(@TempDir Path dir) throws Exception {
        int closedPort = closedPort();
        Path json = dir.resolve("runs.json");
        OptionsTest.Captured run = OptionsTest.run(
                "-h", "amqp://guest:s3cret@127.0.0.1:" + closedPort, "-z", "1", "--json", json.toString());
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("no AMQP broker answers at amqp://guest@127.0.0.1:" + closedPort), run.out());
        assertTrue(run.out().contains("measures the client alone against the built-in loopback peer"), run.out());
        assertTrue(!run.out().contains("s3cret") && !run.err().contains("s3cret"), "no password printed");

        List<?> runs = (List<?>) Json.parse(Files.readString(json));
        assertEquals(List.of("peer:sink", "peer:source"), targets(runs), "the producer, then the consumer");
        Map<String, Object> sink = PeerRunTest.asObject(runs.get(0));
        Map<String, Object> source = PeerRunTest.asObject(runs.get(1));
        assertTrue(PeerRunTest.number(sink, "sent") > 0, "published against the sink: " + sink);
        assertTrue(PeerRunTest.number(source, "received") > 0, "consumed from the source: " + source);
    }

    @Test
    void withNoBrokerCompareRunsBothClientsOnEachSideOfThePeer(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("runs.json");
        OptionsTest.Captured run = OptionsTest.run(
                "-h",
                "amqp://127.0.0.1:" + closedPort(),
                "--compare",
                "--runs",
                "1",
                "-z",
                "1",
                "--json",
                json.toString());
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("built-in loopback peer"), run.out());
        assertTrue(
                run.out().contains("== comparison, peer:sink ==")
                        && run.out().contains("== comparison, peer:source =="),
                run.out());

        List<?> runs = (List<?>) Json.parse(Files.readString(json));
        assertEquals(List.of("peer:sink", "peer:sink", "peer:source", "peer:source"), targets(runs));
        List<Object> clients = new ArrayList<>();
        for (Object r : runs) {
            clients.add(PeerRunTest.asObject(r).get("client"));
        }
        assertEquals(2, clients.subList(0, 2).stream().distinct().count(), "both clients against the sink: " + clients);
        assertEquals(
                2, clients.subList(2, 4).stream().distinct().count(), "both clients against the source: " + clients);
    }

    private static List<Object> targets(List<?> runs) {
        List<Object> targets = new ArrayList<>();
        for (Object r : runs) {
            targets.add(PeerRunTest.asObject(r).get("target"));
        }
        return targets;
    }

    /** A port nothing listens on: bound and closed again. */
    private static int closedPort() throws java.io.IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
