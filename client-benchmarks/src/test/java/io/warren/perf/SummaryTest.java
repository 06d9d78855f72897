package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The comparison table (medians, spreads, ratios to the first client, rows left out) and the headline. */
class SummaryTest {

    private static Map<String, Object> run(String client, double sentRate, Double consumerP99) {
        Map<String, Object> m = new HashMap<>();
        m.put("client", client);
        m.put("sent_rate", sentRate);
        m.put("consumer_latency_p99_us", consumerP99);
        return m;
    }

    @Test
    void mediansSpreadsAndRatios() {
        List<Map<String, Object>> runs = List.of(
                run("amqp-client", 100, 10.0),
                run("warren", 300, 5.0),
                run("warren", 500, null),
                run("amqp-client", 120, 30.0),
                run("amqp-client", 90, 20.0),
                run("warren", 400, 4.0));
        assertEquals(100.0, Summary.median(runs, "amqp-client", "sent_rate"));
        assertEquals(400.0, Summary.median(runs, "warren", "sent_rate"));
        assertEquals(
                4.5, Summary.median(runs, "warren", "consumer_latency_p99_us"), "nulls left out, even count averaged");
        assertNull(Summary.median(runs, "warren", "cpu_ns_per_msg"));

        List<String> table = Summary.comparisonTable(runs, List.of("amqp-client", "warren"));
        String text = String.join("\n", table);
        assertEquals(
                "| figure (median of runs, min-max) | amqp-client | warren | warren / amqp-client |", table.get(0));
        assertEquals("|---|---:|---:|---:|", table.get(1));
        assertTrue(table.contains("| sent msg/s | 100 (90-120) | 400 (300-500) | 4.00 |"), text);
        assertTrue(table.contains("| consumer latency p99 (us) | 20 (10-30) | 5 (4-5) | 0.23 |"), text);
        assertEquals(4, table.size(), "figures no run has are left out:\n" + text);
    }

    /** A failed or interrupted run measured less than the others: it is not one of the runs a median is of. */
    @Test
    void failedAndInterruptedRunsAreLeftOutOfMediansAndRanges() {
        Map<String, Object> failed = run("warren", 10, 900.0);
        failed.put("failure", "connection lost");
        Map<String, Object> interrupted = run("warren", 20, 800.0);
        interrupted.put("stopped_by", "interrupted");
        Map<String, Object> timed = run("warren", 300, 5.0);
        timed.put("stopped_by", "time");
        List<Map<String, Object>> runs = List.of(run("amqp-client", 100, 10.0), failed, interrupted, timed);
        assertEquals(300.0, Summary.median(runs, "warren", "sent_rate"));
        assertFalse(Summary.counted(failed));
        assertFalse(Summary.counted(interrupted));
        assertTrue(Summary.counted(timed));
        String text = String.join("\n", Summary.comparisonTable(runs, List.of("amqp-client", "warren")));
        assertTrue(text.contains("| sent msg/s | 100 | 300 | 3.00 |"), text);
    }

    @Test
    void rowsOfZerosAndRatiosOverZeroAreLeftOut() {
        Map<String, Object> a = run("amqp-client", 100, 10.0);
        a.put("confirmed_rate", 0.0);
        a.put("peak_direct_bytes", 0.0);
        Map<String, Object> b = run("warren", 100, 10.0);
        b.put("confirmed_rate", 0.0);
        b.put("peak_direct_bytes", 5_000_000.0);
        String text = String.join("\n", Summary.comparisonTable(List.of(a, b), List.of("amqp-client", "warren")));
        assertFalse(text.contains("confirmed msg/s"), "0 against 0 compares nothing:\n" + text);
        assertTrue(text.contains("| peak direct memory (MiB) | 0.0 | 4.8 | - |"), "no ratio over a 0:\n" + text);
    }

    @Test
    void stolenTimeIsShownPerClientWithoutARatio() {
        Map<String, Object> a = run("amqp-client", 100, 10.0);
        a.put("steal_percent", 2.0);
        Map<String, Object> b = run("warren", 100, 10.0);
        b.put("steal_percent", 12.5);
        String text = String.join("\n", Summary.comparisonTable(List.of(a, b), List.of("amqp-client", "warren")));
        assertTrue(
                text.contains("| CPU time stolen by the hypervisor (%, the machine's) | 2.0 | 12.5 | - |"),
                "the host's share is a condition of the runs, not a client's figure:\n" + text);
    }

    @Test
    void headlineNamesTheWinnerTheFactorAndWhetherTheRunsSeparateTheClients() {
        List<Map<String, Object>> runs = new java.util.ArrayList<>();
        double[][] p99 = {{400, 450, 500}, {200, 250, 300}};
        String[] clients = {"amqp-client", "warren"};
        for (int c = 0; c < 2; c++) {
            for (double v : p99[c]) {
                Map<String, Object> r = run(clients[c], 10_000, v);
                r.put("rate", 10_000.0);
                r.put("cpu_ns_per_msg", c == 0 ? v : v + 200); // warren 400-500 vs amqp-client 400-500: overlapping
                runs.add(r);
            }
        }
        List<String> headline = Summary.headline(runs, List.of(clients));
        String text = String.join("\n", headline);
        assertTrue(
                headline.contains("consumer latency p99 (us): warren 250 (200-300) vs amqp-client 450 (400-500): "
                        + "warren lower by 1.80x (the runs' ranges do not overlap)"),
                text);
        assertTrue(
                headline.contains("client CPU ns/msg: warren 450 (400-500) vs amqp-client 450 (400-500): the same "
                        + "(the runs' ranges overlap: not a clear difference)"),
                text);
        assertFalse(text.contains("sent msg/s"), "paced runs send at the same rate: nothing to name\n" + text);

        runs.forEach(r -> r.put("rate", null));
        assertTrue(
                String.join("\n", Summary.headline(runs, List.of(clients))).contains("sent msg/s"),
                "unthrottled, throughput is a result");
        assertTrue(Summary.headline(runs, List.of("warren")).isEmpty(), "one client: nothing to compare");
    }

    /** A paced run without producers paces nothing: what it received is a result, named like any other. */
    @Test
    void aPacedRunWithoutProducersKeepsItsReceivedRate() {
        List<Map<String, Object>> runs = new java.util.ArrayList<>();
        for (String client : List.of("amqp-client", "warren")) {
            for (double received : client.equals("warren") ? new double[] {300, 310} : new double[] {100, 110}) {
                Map<String, Object> r = run(client, 0, 10.0);
                r.put("rate", 10_000.0);
                r.put("producers", 0);
                r.put("received_rate", received);
                runs.add(r);
            }
        }
        String text = String.join("\n", Summary.headline(runs, List.of("amqp-client", "warren")));
        assertTrue(
                text.contains("received msg/s: warren 305 (300-310) vs amqp-client 105 (100-110): warren higher by"),
                text);

        runs.forEach(r -> r.put("producers", 1));
        text = String.join("\n", Summary.headline(runs, List.of("amqp-client", "warren")));
        assertFalse(text.contains("received msg/s"), "paced producers: both receive what was sent\n" + text);
    }

    /** One run of a client has no range: the headline says nothing of ranges overlapping or not. */
    @Test
    void withOneRunOfAClientTheHeadlineSaysNothingOfRanges() {
        List<Map<String, Object>> runs = List.of(run("amqp-client", 100, 20.0), run("warren", 300, 10.0));
        List<String> headline = Summary.headline(runs, List.of("amqp-client", "warren"));
        String text = String.join("\n", headline);
        assertTrue(
                headline.contains("sent msg/s: warren 300 vs amqp-client 100: warren higher by 3.00x"
                        + " (one run of a client: no ranges to compare)"),
                text);
        assertFalse(text.contains("overlap"), text);
    }
}
