package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole tool, in-process, against the loopback peer: the sink counts and confirms what amqp-client
 * publishes, the source streams what it consumes, and --json writes every field the issue lists. Warren's
 * runs: {@link WarrenDriverTest}.
 */
class PeerRunTest {

    /** The fields the issue asks for in every run object. */
    static final List<String> REQUIRED = List.of(
            "client",
            "producers",
            "consumers",
            "size",
            "duration_s",
            "sent",
            "confirmed",
            "received",
            "sent_rate",
            "received_rate",
            "confirm_latency_p50_us",
            "confirm_latency_p99_us",
            "consumer_latency_p50_us",
            "consumer_latency_p99_us",
            "cpu_ns_per_msg",
            "broker_cpu_ns_per_msg",
            "alloc_bytes_per_msg",
            "peak_heap_bytes");

    @Test
    void sinkCountsAndConfirmsEveryPublishAndJsonHasEveryField(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("sink.json");
        OptionsTest.Captured run = OptionsTest.run(
                "--client",
                "amqp-client",
                "--peer",
                "sink",
                "-C",
                "3000",
                "-c",
                "100",
                "-s",
                "64",
                "--json",
                json.toString());
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("== amqp-client run 1"), run.out());
        assertTrue(run.out().contains("stopped by counts"), run.out());
        assertTrue(run.out().contains("listening on amqp://guest@127.0.0.1:"), run.out());
        assertFalse(run.out().contains("guest:guest"), "no password in the output, the peer's own included");

        Map<String, Object> r = asObject(Json.parse(Files.readString(json)));
        assertHasEveryField(r);
        assertEquals("amqp-client", r.get("client"));
        assertEquals("peer:sink", r.get("target"));
        assertEquals(1.0, PeerRunTest.number(r, "producers"));
        assertEquals(0.0, PeerRunTest.number(r, "consumers"));
        assertEquals(64.0, PeerRunTest.number(r, "size"));
        assertEquals(3000.0, PeerRunTest.number(r, "sent"));
        assertEquals(3000.0, PeerRunTest.number(r, "confirmed"));
        assertEquals(0.0, PeerRunTest.number(r, "received"));
        assertTrue(number(r, "sent_rate") > 0);
        assertTrue(number(r, "confirm_latency_p99_us") >= number(r, "confirm_latency_p50_us"));
        assertNull(r.get("consumer_latency_p50_us"), "no consumer: not measured");
        assertTrue(number(r, "cpu_ns_per_msg") > 0);
        assertNull(r.get("broker_cpu_ns_per_msg"), "the peer is in this process: no broker to measure");
        assertTrue(number(r, "alloc_bytes_per_msg") > 0);
        assertTrue(number(r, "peak_heap_bytes") > 0);
        Map<String, Object> peer = asObject(r.get("peer"));
        assertEquals(3000.0, PeerRunTest.number(peer, "publishes"), "the peer read every publish");
        assertEquals(3000.0, PeerRunTest.number(peer, "confirms"), "and confirmed each");
        assertInstanceOf(List.class, r.get("timeline"));
    }

    @Test
    void sourceStreamsToEveryConsumerAndSeveralRunsWriteAnArray(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("source.json");
        OptionsTest.Captured run = OptionsTest.run(
                "--client",
                "amqp-client",
                "--peer",
                "source",
                "-y",
                "2",
                "-D",
                "2000",
                "-q",
                "100",
                "-A",
                "10",
                "--runs",
                "2",
                "--json",
                json.toString());
        assertEquals(0, run.exit(), run.out() + run.err());

        List<?> runs = assertInstanceOf(List.class, Json.parse(Files.readString(json)));
        assertEquals(2, runs.size());
        for (int i = 0; i < 2; i++) {
            Map<String, Object> r = asObject(runs.get(i));
            assertHasEveryField(r);
            assertEquals(i + 1.0, number(r, "run"));
            assertEquals("peer:source", r.get("target"));
            assertEquals(0.0, PeerRunTest.number(r, "sent"));
            assertEquals(4000.0, PeerRunTest.number(r, "received"), "2 consumers x 2000");
            assertEquals("counts", r.get("stopped_by"));
            assertTrue(number(r, "received_rate") > 0);
            assertNull(r.get("consumer_latency_p50_us"), "the peer's bodies carry no publish time");
            assertTrue(number(asObject(r.get("peer")), "deliveries") >= 4000);
        }
    }

    @Test
    void theRawReferenceClientPublishesAndConsumesExactCounts(@TempDir Path dir) throws Exception {
        Path sinkJson = dir.resolve("raw-sink.json");
        OptionsTest.Captured sink = OptionsTest.run(
                "--peer", "sink", "--client", "raw", "-C", "50000", "-c", "1000", "--json", sinkJson.toString());
        assertEquals(0, sink.exit(), sink.out() + sink.err());
        Map<String, Object> s = asObject(Json.parse(Files.readString(sinkJson)));
        assertEquals("raw", s.get("client"));
        assertEquals(50000.0, PeerRunTest.number(s, "sent"));
        assertEquals(50000.0, PeerRunTest.number(s, "confirmed"));
        assertEquals(50000.0, number(asObject(s.get("peer")), "publishes"));

        Path sourceJson = dir.resolve("raw-source.json");
        OptionsTest.Captured source = OptionsTest.run(
                "--peer",
                "source",
                "--client",
                "raw",
                "-D",
                "20000",
                "-q",
                "500",
                "--warmup",
                "1",
                "--json",
                sourceJson.toString());
        assertEquals(0, source.exit(), source.out() + source.err());
        assertTrue(source.out().contains("raw warmup"), source.out());
        Map<String, Object> r = asObject(Json.parse(Files.readString(sourceJson)));
        assertEquals(1.0, PeerRunTest.number(r, "warmup_s"));
        assertEquals("counts", r.get("stopped_by"));
        assertTrue(number(r, "received") <= 20000, "what the warmup received is not counted: " + r.get("received"));
    }

    @Test
    void aPacedSinkRunMeasuresFromThePublishCallToThePeersReceipt(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("paced.json");
        OptionsTest.Captured run = OptionsTest.run(
                "--peer", "sink", "--client", "amqp-client", "-r", "2000", "-C", "1000", "--json", json.toString());
        assertEquals(0, run.exit(), run.out() + run.err());
        Map<String, Object> r = asObject(Json.parse(Files.readString(json)));
        double p50 = number(r, "peer_receipt_latency_p50_us");
        assertTrue(p50 > 0 && p50 <= number(r, "peer_receipt_latency_p99_us"), "p50 " + p50 + " then p99: " + r);
        assertTrue(run.out().contains("peer receipt"), run.out());

        Path unpaced = dir.resolve("unpaced.json");
        assertEquals(
                0,
                OptionsTest.run("--peer", "sink", "--client", "amqp-client", "-C", "1000", "--json", unpaced.toString())
                        .exit());
        assertNull(
                asObject(Json.parse(Files.readString(unpaced))).get("peer_receipt_latency_p50_us"),
                "unpaced, the figure would be the socket buffer's queue: not recorded");
    }

    static void assertHasEveryField(Map<String, Object> run) {
        for (String field : REQUIRED) {
            assertTrue(run.containsKey(field), "missing " + field + " in " + run.keySet());
            Object v = run.get(field);
            if (!field.equals("client")) {
                assertTrue(v == null || v instanceof Number, field + " should be a number or null: " + v);
            }
        }
    }

    static double number(Map<String, Object> run, String field) {
        return assertInstanceOf(Number.class, run.get(field), field).doubleValue();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> asObject(Object value) {
        return (Map<String, Object>) assertInstanceOf(Map.class, value);
    }
}
