package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The comparison table: medians over each client's runs and ratios to the first client. */
class SummaryTest {

  private static Map<String, Object> run(String client, double sentRate, Double consumerP99) {
    Map<String, Object> m = new HashMap<>();
    m.put("client", client);
    m.put("sent_rate", sentRate);
    m.put("consumer_latency_p99_us", consumerP99);
    return m;
  }

  @Test
  void mediansAndRatios() {
    List<Map<String, Object>> runs = List.of(
        run("amqp-client", 100, 10.0), run("warren", 300, 5.0), run("warren", 500, null),
        run("amqp-client", 120, 30.0), run("amqp-client", 90, 20.0), run("warren", 400, 4.0));
    assertEquals(100.0, Summary.median(runs, "amqp-client", "sent_rate"));
    assertEquals(400.0, Summary.median(runs, "warren", "sent_rate"));
    assertEquals(4.5, Summary.median(runs, "warren", "consumer_latency_p99_us"), "nulls left out, even count averaged");
    assertNull(Summary.median(runs, "warren", "cpu_ns_per_msg"));

    List<String> table = Summary.comparisonTable(runs, List.of("amqp-client", "warren"));
    assertEquals("| figure (median of runs) | amqp-client | warren | warren / amqp-client |", table.get(0));
    assertEquals("|---|---:|---:|---:|", table.get(1));
    assertTrue(table.contains("| sent msg/s | 100 | 400 | 4.00 |"), String.join("\n", table));
    assertTrue(table.contains("| consumer latency p99 (us) | 20 | 5 | 0.23 |"), String.join("\n", table));
    assertEquals(4, table.size(), "figures no run has are left out:\n" + String.join("\n", table));
  }
}
