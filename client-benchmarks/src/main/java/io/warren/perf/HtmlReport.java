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
 * table per run. A
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
        List<String> clients = new ArrayList<>(new LinkedHashSet<>(
                runs.stream().map(r -> String.valueOf(r.get("client"))).toList()));
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("generated", ZonedDateTime.now().format(DateTimeFormatter.RFC_1123_DATE_TIME));
        data.put("clients", clients);
        data.put("comparison", clients.size() > 1 ? Summary.comparison(runs, clients) : null);
        data.put("headline", Summary.headline(runs, clients));
        data.put("runs", runs);
        // JSON has "<" only inside strings, where its escape means the same: no "</script>" in the data ends the
        // element
        return PAGE.replace("@DATA@", Json.compact(data).replace("<", "\\u003c"));
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
