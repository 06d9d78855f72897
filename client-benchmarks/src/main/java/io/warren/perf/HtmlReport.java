package io.warren.perf;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * The {@code --report} page: one self-contained HTML file that needs no network to be viewed. Its
 * template is {@code report.html} on the class path, with {@code report.css} and {@code report.js} inlined
 * into it (the Content-Security-Policy below allows no other source). The runs'
 * JSON (the same objects {@code --json} writes) sits in a {@code <script type="application/json">}
 * element and an inline script draws SVG charts from it: the settings and, with several clients, the headline
 * ({@link Summary#headline}) and the comparison table at the top; throughput, backlog, latency, process CPU and
 * heap over time; latency percentile distributions (latency axes on a log scale in one unit each); a summary
 * table per run. Runs against different targets (the broker; the loopback peer's sink, then its source, when no
 * broker answered) measure different things: each target gets its own headline, comparison, table and charts. A
 * Content-Security-Policy forbids every load from anywhere, so a page that renders proves it is
 * self-contained.
 *
 * <p>When the script has drawn everything it sets {@code data-rendered="ok"} on {@code <body>}
 * ({@code "error"} and a {@code <pre id="render-error">} otherwise); each chart is an {@code <svg
 * data-chart="...">} whose {@code <polyline>}s carry {@code data-run}, {@code data-points} and
 * {@code data-max}, and each summary cell carries {@code data-key} and {@code data-value}: the test that
 * opens the page in headless Chromium checks those against the run's numbers.
 */
final class HtmlReport {

    private HtmlReport() {}

    /** The page for {@code runs} (each one {@link RunResult#toJson()}). */
    static String render(List<Map<String, Object>> runs) {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("generated", ZonedDateTime.now().format(DateTimeFormatter.RFC_1123_DATE_TIME));
        data.put("clients", clients(runs));
        data.put("targets", byTarget(runs));
        data.put("runs", runs);
        // JSON has "<" only inside strings, where its escape means the same: no "</script>" in the data ends the
        // element
        return PAGE.replace("@DATA@", Json.compact(data).replace("<", "\\u003c"));
    }

    /**
     * The runs grouped by target, in the order the targets first appear: per target its clients, their comparison
     * (with several), the headline, and the indexes of its runs in {@code runs}.
     */
    static List<Map<String, Object>> byTarget(List<Map<String, Object>> runs) {
        Map<String, List<Integer>> indexes = new LinkedHashMap<>();
        for (int i = 0; i < runs.size(); i++) {
            indexes.computeIfAbsent(String.valueOf(runs.get(i).get("target")), t -> new ArrayList<>())
                    .add(i);
        }
        List<Map<String, Object>> groups = new ArrayList<>();
        indexes.forEach((target, at) -> {
            List<Map<String, Object>> targetRuns = at.stream().map(runs::get).toList();
            List<String> clients = clients(targetRuns);
            Map<String, Object> group = new LinkedHashMap<>();
            group.put("target", target);
            group.put("clients", clients);
            group.put("comparison", clients.size() > 1 ? Summary.comparison(targetRuns, clients) : null);
            group.put("headline", Summary.headline(targetRuns, clients));
            group.put("runs", at);
            groups.add(group);
        });
        return groups;
    }

    /** The clients of {@code runs}, in the order they first ran. */
    private static List<String> clients(List<Map<String, Object>> runs) {
        return new ArrayList<>(new LinkedHashSet<>(
                runs.stream().map(r -> String.valueOf(r.get("client"))).toList()));
    }

    /** {@code report.html} with {@code report.css} and {@code report.js} put in, {@code @DATA@} still to fill. */
    private static final String PAGE = resource("report.html")
            .replace("@STYLE@", resource("report.css"))
            .replace("@SCRIPT@", resource("report.js"));

    /** A text resource next to this class (in the jar: io/warren/perf/NAME). */
    private static String resource(String name) {
        try (InputStream in = HtmlReport.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("the report template " + name + " is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the report template " + name, e);
        }
    }
}
