package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The matrix table, from result files as warren-perf writes them (objects and arrays). */
class BenchmarksTableTest {

    private static Map<String, Object> run(String id, String client, double sentRate, Double allocPerMsg) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("client", client);
        m.put("sent_rate", sentRate);
        m.put("alloc_bytes_per_msg", allocPerMsg);
        return m;
    }

    @Test
    void mediansPerScenarioAndClientWithTheWarrenRatio(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("a.json"), Json.pretty(run("pubsub 16 B", "amqp-client", 100, 1000.0)));
        Files.writeString(
                dir.resolve("b.json"),
                Json.pretty(List.of(
                        run("pubsub 16 B", "amqp-client", 300, 3000.0), run("pubsub 16 B", "warren", 500, 10.0),
                        run("pubsub 16 B", "warren", 700, 30.0), run("peer publish 16 B", "raw", 2_000_000, 0.0))));
        Files.writeString(dir.resolve("notes.txt"), "not a result");

        List<Map<String, Object>> runs = BenchmarksTable.read(dir);
        assertEquals(5, runs.size());
        Map<String, List<String>> scenarios = new LinkedHashMap<>();
        scenarios.put("pubsub 16 B", List.of("sent_rate", "alloc_bytes_per_msg", "cpu_ns_per_msg"));
        scenarios.put("peer publish 16 B", List.of("sent_rate"));
        List<String> table = BenchmarksTable.table(runs, scenarios);
        String text = String.join("\n", table);
        assertEquals("| scenario | figure | amqp-client | warren | raw | warren / amqp-client |", table.get(0), text);
        assertTrue(table.contains("| pubsub 16 B | sent msg/s | 200 | 600 | - | 3.00 |"), text);
        assertTrue(table.contains("| pubsub 16 B | allocated B/msg | 2,000 | 20 | - | 0.01 |"), text);
        assertTrue(table.contains("| peer publish 16 B | sent msg/s | - | - | 2,000,000 | - |"), text);
        assertTrue(!text.contains("client CPU"), "a figure no run has is left out:\n" + text);
        assertTrue(
                text.endsWith("Medians of 1 to 2 runs per client and scenario (and target, where it has several)."),
                text);
    }

    /**
     * A scenario's runs that went to different targets (no broker answered: producers against the sink, consumers
     * against the source) get rows of their own per target, never one median over both.
     */
    @Test
    void aScenarioWhoseRunsWentToDifferentTargetsGetsRowsPerTarget() {
        Map<String, Object> sinkA = run("pubsub 16 B", "amqp-client", 100_000, 800.0);
        sinkA.put("target", "peer:sink");
        Map<String, Object> sinkW = run("pubsub 16 B", "warren", 900_000, 50.0);
        sinkW.put("target", "peer:sink");
        Map<String, Object> sourceW = run("pubsub 16 B", "warren", 0, 40.0);
        sourceW.put("target", "peer:source");
        List<String> table = BenchmarksTable.table(List.of(sinkA, sinkW, sourceW), Map.of());
        String text = String.join("\n", table);
        assertTrue(table.contains("| pubsub 16 B [peer:sink] | sent msg/s | 100,000 | 900,000 | 9.00 |"), text);
        assertTrue(table.contains("| pubsub 16 B [peer:source] | sent msg/s | - | 0 | - |"), text);
    }

    /** A base that shows as zero in its column gets no ratio, as in warren-perf's comparison table. */
    @Test
    void aBaseShownAsZeroGetsNoRatio() {
        Map<String, Object> a = run("pubsub 16 B", "amqp-client", 100, 0.3);
        Map<String, Object> w = run("pubsub 16 B", "warren", 100, 5.0);
        List<String> table =
                BenchmarksTable.table(List.of(a, w), Map.of("pubsub 16 B", List.of("alloc_bytes_per_msg")));
        String text = String.join("\n", table);
        assertTrue(table.contains("| pubsub 16 B | allocated B/msg | 0 | 5 | - |"), text);

        a.put("gc_pause_ms_per_s", 0.004); // a figure warren-perf does not label: shown with two decimals
        w.put("gc_pause_ms_per_s", 2.0);
        List<String> other = BenchmarksTable.table(List.of(a, w), Map.of("pubsub 16 B", List.of("gc_pause_ms_per_s")));
        assertTrue(other.contains("| pubsub 16 B | gc_pause_ms_per_s | 0.00 | 2.00 | - |"), String.join("\n", other));
    }
}
