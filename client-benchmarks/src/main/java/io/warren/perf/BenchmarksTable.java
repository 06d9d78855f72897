package io.warren.perf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Turns the JSON files of a benchmark matrix (src/main/scripts/benchmarks-table.sh) into one Markdown
 * table: for each scenario (the runs' {@code --id}) and each figure asked for, the median over each
 * client's runs and the ratio Warren / amqp-client.
 *
 * <pre>
 * java -cp warren-perf.jar io.warren.perf.BenchmarksTable RESULTS_DIR|FILE... ["SCENARIO=figure,figure" ...]
 * </pre>
 *
 * A figure is a field of the run objects ({@code sent_rate}, {@code consumer_latency_p99_us},
 * {@code alloc_bytes_per_msg}, ...; the ones {@link Summary#COMPARED} lists get their label and
 * format). Without scenario arguments every scenario found is shown with the throughput, latency, CPU
 * and allocation figures it has.
 */
public final class BenchmarksTable {

    private static final List<String> DEFAULT_FIGURES = List.of(
            "sent_rate",
            "confirmed_rate",
            "received_rate",
            "confirm_latency_p99_us",
            "consumer_latency_p50_us",
            "consumer_latency_p99_us",
            "cpu_ns_per_msg",
            "alloc_bytes_per_msg");
    private static final List<String> CLIENT_ORDER = List.of(Clients.AMQP_CLIENT, Clients.WARREN, Clients.RAW);

    private BenchmarksTable() {}

    public static void main(String[] args) throws IOException {
        List<Map<String, Object>> runs = new ArrayList<>();
        Map<String, List<String>> scenarios = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq > 0) {
                scenarios.put(
                        arg.substring(0, eq), List.of(arg.substring(eq + 1).split(",")));
            } else {
                runs.addAll(read(Path.of(arg)));
            }
        }
        if (runs.isEmpty()) {
            System.err.println(
                    "usage: BenchmarksTable RESULTS_DIR|FILE... [\"SCENARIO=figure,figure\" ...]: no results found");
            System.exit(2);
        }
        table(runs, scenarios).forEach(System.out::println);
    }

    /** Every run object in {@code path}: a JSON file (an object or an array) or a directory of them. */
    static List<Map<String, Object>> read(Path path) throws IOException {
        List<Map<String, Object>> runs = new ArrayList<>();
        if (Files.isDirectory(path)) {
            try (Stream<Path> files = Files.list(path)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".json"))
                        .sorted()
                        .toList()) {
                    runs.addAll(read(file));
                }
            }
            return runs;
        }
        Object value = Json.parse(Files.readString(path, StandardCharsets.UTF_8));
        for (Object run : value instanceof List<?> list ? list : List.of(value)) {
            @SuppressWarnings("unchecked")
            Map<String, Object> map = (Map<String, Object>) run;
            runs.add(map);
        }
        return runs;
    }

    /** The table's lines; {@code scenarios} maps an id to its figures, empty for every id with the default ones. */
    static List<String> table(List<Map<String, Object>> runs, Map<String, List<String>> scenarios) {
        Set<String> present = new LinkedHashSet<>();
        runs.forEach(r -> present.add(String.valueOf(r.get("client"))));
        List<String> clients = new ArrayList<>(present);
        clients.sort(
                Comparator.comparingInt(c -> CLIENT_ORDER.contains(c) ? CLIENT_ORDER.indexOf(c) : CLIENT_ORDER.size()));
        boolean ratio = present.contains(Clients.WARREN) && present.contains(Clients.AMQP_CLIENT);

        Map<String, List<String>> wanted = new LinkedHashMap<>(scenarios);
        if (wanted.isEmpty()) {
            runs.forEach(r -> wanted.putIfAbsent(String.valueOf(r.get("id")), DEFAULT_FIGURES));
        }

        List<String> lines = new ArrayList<>();
        StringBuilder head = new StringBuilder("| scenario | figure |");
        StringBuilder rule = new StringBuilder("|---|---|");
        for (String c : clients) {
            head.append(' ').append(c).append(" |");
            rule.append("---:|");
        }
        if (ratio) {
            head.append(" warren / amqp-client |");
            rule.append("---:|");
        }
        lines.add(head.toString());
        lines.add(rule.toString());
        int fewestRuns = Integer.MAX_VALUE;
        int mostRuns = 0;
        for (Map.Entry<String, List<String>> scenario : wanted.entrySet()) {
            List<Map<String, Object>> ofScenario = runs.stream()
                    .filter(r -> scenario.getKey().equals(String.valueOf(r.get("id"))))
                    .toList();
            if (ofScenario.isEmpty()) {
                lines.add("| " + scenario.getKey() + " | (no runs) |" + " |".repeat(clients.size() + (ratio ? 1 : 0)));
                continue;
            }
            // warren-perf measures against its loopback peer when no broker answers (producers against the sink,
            // consumers against the source): runs of one id that went to different targets are not one scenario, and
            // a median over them would be a figure of none; each target gets rows of its own
            Map<Object, List<Map<String, Object>>> byTarget = new LinkedHashMap<>();
            ofScenario.forEach(r -> byTarget.computeIfAbsent(r.get("target"), t -> new ArrayList<>())
                    .add(r));
            for (Map.Entry<Object, List<Map<String, Object>>> target : byTarget.entrySet()) {
                String name =
                        byTarget.size() == 1 ? scenario.getKey() : scenario.getKey() + " [" + target.getKey() + "]";
                List<Map<String, Object>> ofTarget = target.getValue();
                for (String c : clients) {
                    long n = ofTarget.stream()
                            .filter(r -> c.equals(r.get("client")))
                            .count();
                    if (n > 0) {
                        fewestRuns = (int) Math.min(fewestRuns, n);
                        mostRuns = (int) Math.max(mostRuns, n);
                    }
                }
                for (String figure : scenario.getValue()) {
                    List<Double> medians = new ArrayList<>();
                    for (String c : clients) {
                        medians.add(Summary.median(ofTarget, c, figure));
                    }
                    if (medians.stream().allMatch(m -> m == null)) {
                        continue;
                    }
                    StringBuilder line = new StringBuilder("| ")
                            .append(name)
                            .append(" | ")
                            .append(label(figure))
                            .append(" |");
                    for (Double m : medians) {
                        line.append(' ').append(format(figure, m)).append(" |");
                    }
                    if (ratio) {
                        Double base = medians.get(clients.indexOf(Clients.AMQP_CLIENT));
                        Double warren = medians.get(clients.indexOf(Clients.WARREN));
                        line.append(' ')
                                .append(
                                        base == null || warren == null || shownAsZero(figure, base)
                                                ? "-"
                                                : String.format(Locale.ROOT, "%.2f", warren / base))
                                .append(" |");
                    }
                    lines.add(line.toString());
                }
            }
        }
        lines.add("");
        lines.add(
                fewestRuns == mostRuns
                        ? "Medians of " + mostRuns
                                + " run(s) per client and scenario (and target, where it has several)."
                        : "Medians of " + fewestRuns + " to " + mostRuns
                                + " runs per client and scenario (and target, where it has several).");
        return lines;
    }

    /**
     * Whether {@code value} shows as zero in {@code figure}'s column: a ratio over it would compare a figure with a
     * rounding ("0" against "5" as 16.7x), so it gets none, as in the comparison table ({@link Summary.Row#isZero}).
     */
    private static boolean shownAsZero(String figure, double value) {
        for (Summary.Row row : Summary.COMPARED) {
            if (row.key().equals(figure)) {
                return row.isZero(value);
            }
        }
        return Math.abs(value) < 0.005; // format's: two decimals below 10, so 0.004 shows as "0.00"
    }

    private static String label(String figure) {
        for (Summary.Row row : Summary.COMPARED) {
            if (row.key().equals(figure)) {
                return row.label();
            }
        }
        return figure;
    }

    private static String format(String figure, Double value) {
        for (Summary.Row row : Summary.COMPARED) {
            if (row.key().equals(figure)) {
                return row.format(value);
            }
        }
        return Format.number(value, value != null && Math.abs(value) < 10 ? 2 : 0);
    }
}
