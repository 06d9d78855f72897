package io.warren.perf;

import static io.warren.perf.PeerRunTest.asObject;
import static io.warren.perf.PeerRunTest.number;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warren through the whole tool, in-process: against the loopback peer (publishing with and without confirms,
 * consuming with multiple and single acks and with no-ack), side by side with amqp-client, and against the real
 * broker (AMQP_URI, or guest/guest on 127.0.0.1:5672; a missing broker fails, never skips). Every JVM of this
 * module runs with paranoid leak detection, so a body or delivery the driver forgets to release fails the build.
 */
class WarrenDriverTest {

    @Test
    void warrenIsTheDefaultClientOnceItsDriverIsInTheBuild() {
        assertTrue(Clients.available(Clients.WARREN));
        assertEquals(Clients.WARREN, Clients.defaultClient());
        assertInstanceOf(WarrenDriver.class, Clients.create(Clients.WARREN));
        assertEquals(List.of("warren"), WarrenPerf.plan().clients());
    }

    @Test
    void publishesFireAndForgetToTheSinkWithExactCounts(@TempDir Path dir) throws Exception {
        Map<String, Object> r = runOne(dir, "--peer", "sink", "-C", "20000", "-s", "64");
        assertEquals("warren", r.get("client"));
        assertEquals(20000.0, PeerRunTest.number(r, "sent"));
        assertEquals(0.0, PeerRunTest.number(r, "confirmed"));
        assertEquals("counts", r.get("stopped_by"));
        assertNull(r.get("confirm_latency_p50_us"), "no confirms: not measured");
        // without confirms "published" means written to the socket, as with amqp-client: the run may end before
        // the peer has read the last ones
        double read = number(asObject(r.get("peer")), "publishes");
        assertTrue(read > 0 && read <= 20000, "the peer read " + read);
        assertTrue(number(r, "cpu_ns_per_msg") > 0);
    }

    @Test
    void confirmsEveryPublishWithinTheWindowAndMeasuresTheirLatency(@TempDir Path dir) throws Exception {
        // a window of 10 on a 1-producer run: the producer waits for confirms (back-pressure) all the time
        Map<String, Object> r = runOne(
                dir, "--peer", "sink", "-C", "5000", "-c", "10", "-s", "100", "-f", "persistent", "-f", "mandatory");
        assertEquals(5000.0, PeerRunTest.number(r, "sent"));
        assertEquals(5000.0, PeerRunTest.number(r, "confirmed"));
        assertEquals(0.0, PeerRunTest.number(r, "nacked"));
        assertEquals(0.0, PeerRunTest.number(r, "returned"), "the peer returns nothing");
        assertTrue(number(r, "confirm_latency_p99_us") >= number(r, "confirm_latency_p50_us"));
        Map<String, Object> peer = asObject(r.get("peer"));
        assertEquals(5000.0, PeerRunTest.number(peer, "publishes"));
        assertEquals(5000.0, PeerRunTest.number(peer, "confirms"));
    }

    @Test
    void severalProducersWithConfirmsEachOnItsOwnConnection(@TempDir Path dir) throws Exception {
        Map<String, Object> r = runOne(dir, "--peer", "sink", "-x", "3", "-C", "3000", "-c", "500", "-s", "2000");
        assertEquals(3.0, PeerRunTest.number(r, "producers"));
        assertEquals(9000.0, PeerRunTest.number(r, "sent"), "3 producers x 3000");
        assertEquals(9000.0, PeerRunTest.number(r, "confirmed"));
    }

    @Test
    void bodiesLargerThanAFrameAreSplitAndCounted(@TempDir Path dir) throws Exception {
        // the peer's frame-max is 131072: a 300 kB body goes in three body frames
        Map<String, Object> r = runOne(dir, "--peer", "sink", "-C", "200", "-c", "20", "-s", "300000");
        assertEquals(200.0, PeerRunTest.number(r, "sent"));
        assertEquals(200.0, PeerRunTest.number(r, "confirmed"));
        assertEquals(200.0, number(asObject(r.get("peer")), "publishes"));
    }

    @Test
    void consumesFromTheSourceWithMultipleAcks(@TempDir Path dir) throws Exception {
        Map<String, Object> r = runOne(dir, "--peer", "source", "-y", "2", "-D", "5000", "-q", "100", "-A", "10");
        assertEquals(2.0, PeerRunTest.number(r, "consumers"));
        assertEquals(10000.0, PeerRunTest.number(r, "received"), "2 consumers x 5000");
        assertEquals("counts", r.get("stopped_by"));
        assertNull(r.get("consumer_latency_p50_us"), "the peer's bodies carry no publish time");
        assertTrue(number(asObject(r.get("peer")), "deliveries") >= 10000);
    }

    @Test
    void consumesWithSingleAcksAndWithNoAck(@TempDir Path dir) throws Exception {
        Map<String, Object> acked = runOne(dir, "--peer", "source", "-D", "4000", "-q", "50");
        assertEquals(4000.0, PeerRunTest.number(acked, "received"));
        Map<String, Object> noAck = runOne(dir, "--peer", "source", "-D", "4000", "-a");
        assertEquals(4000.0, PeerRunTest.number(noAck, "received"));
    }

    @Test
    void publishesAndConsumesThroughThePeerWithAWarmup(@TempDir Path dir) throws Exception {
        Map<String, Object> r = runOne(
                dir,
                "--peer",
                "source",
                "-x",
                "1",
                "-y",
                "1",
                "-z",
                "2",
                "--warmup",
                "1",
                "-c",
                "100",
                "-q",
                "200",
                "-A",
                "50");
        assertEquals("time", r.get("stopped_by"));
        assertEquals(1.0, PeerRunTest.number(r, "warmup_s"));
        assertTrue(number(r, "sent") > 0 && number(r, "confirmed") > 0 && number(r, "received") > 0, r.toString());
    }

    @Test
    void compareRunsBothClientsAndWritesBothToTheJson(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("compare.json");
        OptionsTest.Captured run = OptionsTest.run(
                "--compare",
                "--runs",
                "1",
                "--peer",
                "sink",
                "-C",
                "3000",
                "-c",
                "100",
                "-s",
                "32",
                "--json",
                json.toString());
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("== amqp-client run 1"), run.out());
        assertTrue(run.out().contains("== warren run 1"), run.out());
        assertTrue(run.out().contains("| warren / amqp-client |"), run.out());

        List<?> runs = assertInstanceOf(List.class, Json.parse(Files.readString(json)));
        assertEquals(2, runs.size());
        Set<Object> clients = runs.stream().map(o -> asObject(o).get("client")).collect(Collectors.toSet());
        assertEquals(Set.of("amqp-client", "warren"), clients);
        for (Object o : runs) {
            Map<String, Object> r = asObject(o);
            PeerRunTest.assertHasEveryField(r);
            assertEquals(3000.0, PeerRunTest.number(r, "sent"), r.get("client") + " sent");
            assertEquals(3000.0, PeerRunTest.number(r, "confirmed"), r.get("client") + " confirmed");
            assertEquals(
                    r.get("client").equals("warren") ? "nio" : "socket", r.get("transport"), "the transport it ran on");
        }
    }

    @Test
    void publishesConfirmsAndConsumesThroughRabbitMq(@TempDir Path dir) throws Exception {
        String uri = BrokerRunTest.requireBroker();
        Map<String, Object> r = runOne(
                dir, "-h", uri, "-x", "1", "-y", "2", "-C", "2000", "-c", "100", "-q", "200", "-A", "20", "-s", "256");
        PeerRunTest.assertHasEveryField(r);
        assertEquals("warren", r.get("client"));
        assertEquals(2000.0, PeerRunTest.number(r, "sent"));
        assertEquals(2000.0, PeerRunTest.number(r, "confirmed"));
        assertEquals(4000.0, PeerRunTest.number(r, "received"), "each consumer's server-named queue gets a copy");
        assertEquals("counts", r.get("stopped_by"));
        assertTrue(number(r, "consumer_latency_p99_us") >= number(r, "consumer_latency_p50_us"));
        assertTrue(number(r, "confirm_latency_p50_us") > 0);
        assertNull(r.get("peer"));
    }

    @Test
    void countsTheBrokersReturnsOfUnroutableMandatoryPublishes(@TempDir Path dir) throws Exception {
        String uri = BrokerRunTest.requireBroker();
        // no consumer, so no queue is bound to the exchange: every mandatory publish comes back, then is acked
        Map<String, Object> r =
                runOne(dir, "-h", uri, "-x", "1", "-y", "0", "-C", "500", "-c", "50", "-f", "mandatory");
        assertEquals(500.0, PeerRunTest.number(r, "sent"));
        assertEquals(500.0, PeerRunTest.number(r, "confirmed"), "a returned publish is still confirmed");
        assertEquals(500.0, PeerRunTest.number(r, "returned"));
    }

    @Test
    void consumesFromASharedNamedQueueWithSingleAcksThroughRabbitMq(@TempDir Path dir) throws Exception {
        String uri = BrokerRunTest.requireBroker();
        String queue = "warren-perf-test-" + System.nanoTime();
        Map<String, Object> r = runOne(
                dir,
                "-h",
                uri,
                "-x",
                "1",
                "-y",
                "2",
                "-u",
                queue,
                "-ad",
                "true",
                "-C",
                "3000",
                "-q",
                "100",
                "-f",
                "persistent");
        assertEquals(3000.0, PeerRunTest.number(r, "sent"));
        assertEquals(3000.0, PeerRunTest.number(r, "received"), "the two consumers share one queue");
    }

    /** One Warren run through the tool; the JSON object it wrote. */
    private static Map<String, Object> runOne(Path dir, String... args) throws Exception {
        Path json = Files.createTempFile(dir, "run", ".json");
        String[] all = new String[args.length + 4];
        all[0] = "--client";
        all[1] = "warren";
        System.arraycopy(args, 0, all, 2, args.length);
        all[args.length + 2] = "--json";
        all[args.length + 3] = json.toString();
        OptionsTest.Captured run = OptionsTest.run(all);
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("== warren run 1"), run.out());
        Map<String, Object> r = asObject(Json.parse(Files.readString(json)));
        assertEquals(null, r.get("failure"), run.out());
        return r;
    }
}
