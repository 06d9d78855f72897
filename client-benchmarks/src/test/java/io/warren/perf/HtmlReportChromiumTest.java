package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The --report page, opened in a real headless Chromium with every network request refused: its script
 * ran, the charts are drawn with the run's numbers, the summary table holds them, and a screenshot is
 * taken. Chromium (Debian's {@code chromium} package, which ./mvnw installs as root) must be installed:
 * without it this test fails, it does not skip.
 */
class HtmlReportChromiumTest {

    private static final Pattern ATTRIBUTE = Pattern.compile("([a-zA-Z][a-zA-Z0-9-]*)=\"([^\"]*)\"");

    @Test
    void theReportRendersTheRunsChartsAndNumbersInHeadlessChromiumWithoutNetwork(@TempDir Path dir) throws Exception {
        Path chromium = findChromium();
        Path json = dir.resolve("runs.json");
        Path report = dir.resolve("report.html");
        // counts, not time: the producer's 300 publishes are all confirmed within the run, so every
        // confirm figure and chart has data however slow the machine is
        OptionsTest.Captured run = OptionsTest.run(
                "--peer",
                "source",
                "-x",
                "1",
                "-c",
                "20",
                "-C",
                "300",
                "-D",
                "3000",
                "--runs",
                "2",
                "--json",
                json.toString(),
                "--report",
                report.toString());
        assertEquals(0, run.exit(), run.out() + run.err());
        List<?> runs = (List<?>) Json.parse(Files.readString(json));
        assertEquals(2, runs.size());

        String dom = chromium(chromium, dir, "--dump-dom", report);
        assertTrue(dom.contains("data-rendered=\"ok\""), "the report's script ran to its end:\n" + dom);
        assertFalse(dom.contains("<pre id=\"render-error\">"), dom);

        Map<String, String> charts = charts(dom);
        for (String id : List.of(
                "sent-rate",
                "confirmed-rate",
                "received-rate",
                "confirm-latency-p50",
                "confirm-latency-p99",
                "confirm-latency-percentiles",
                "cpu",
                "heap")) {
            assertTrue(charts.containsKey(id), "chart " + id + " drawn; charts: " + charts.keySet() + "\n" + run.out());
        }
        Map<String, Object> first = PeerRunTest.asObject(runs.get(0));
        assertTrue(
                dom.contains("<p id=\"settings\">Settings: " + Math.round(PeerRunTest.number(first, "producers"))
                        + " producer(s), " + Math.round(PeerRunTest.number(first, "consumers"))
                        + " consumer(s), 12 B messages; "
                        + "unthrottled producers; confirms, 20 outstanding; to peer:source; 2 run(s) of "),
                "the settings on top:\n" + dom);
        assertTrue(dom.contains("; transport nio"), "each run says what its client ran on:\n" + dom);
        // a latency axis: log scale, decades with 2 and 5 between, every tick in the one unit its label names
        String percentiles = charts.get("confirm-latency-percentiles");
        Matcher unit = Pattern.compile("latency \\((us|ms|s), log scale\\)").matcher(percentiles);
        assertTrue(unit.find(), percentiles);
        Matcher tick = Pattern.compile("data-tick=\"y\"[^>]*>([^<]*)<").matcher(percentiles);
        List<String> ticks = new ArrayList<>();
        while (tick.find()) {
            ticks.add(tick.group(1));
        }
        assertTrue(ticks.size() >= 3, "more than two ticks on a latency axis: " + ticks);
        ticks.forEach(t -> assertTrue(t.matches("[0-9.,]+"), "a plain number in the axis's unit: " + ticks));
        // the peer's deliveries carry no publish time: the consumer latency charts say so instead
        assertTrue(dom.contains("data-chart-empty=\"consumer-latency-percentiles\""), dom);

        for (int i = 0; i < runs.size(); i++) {
            Map<String, Object> r = PeerRunTest.asObject(runs.get(i));
            List<?> timeline = (List<?>) r.get("timeline");
            assertLine(charts.get("sent-rate"), i, timeline, 1);
            assertLine(charts.get("received-rate"), i, timeline, 3);
            for (String key : List.of(
                    "sent",
                    "received",
                    "sent_rate",
                    "received_rate",
                    "confirm_latency_p99_us",
                    "cpu_ns_per_msg",
                    "alloc_bytes_per_msg")) {
                String cell = cell(dom, i, key);
                double shown = Double.parseDouble(attribute(cell, "data-value"));
                assertEquals(PeerRunTest.number(r, key), shown, 1e-9, key + " of run " + i);
                String text = cell.substring(cell.indexOf('>') + 1).replace(",", "");
                assertEquals(Math.round(shown), Math.round(Double.parseDouble(text)), 1, key + " shown as " + text);
            }
        }

        Path screenshot = dir.resolve("report.png");
        chromium(chromium, dir, "--screenshot=" + screenshot, report);
        byte[] png = Files.readAllBytes(screenshot);
        assertTrue(png.length > 20_000, "a screenshot with charts on it: " + png.length + " bytes");
        assertEquals((byte) 0x89, png[0]);
        assertEquals('P', png[1]);
    }

    /** Checks run {@code run}'s polyline in a chart: one point per second, its peak the timeline's. */
    private static void assertLine(String svg, int run, List<?> timeline, int field) {
        Matcher polyline =
                Pattern.compile("<polyline[^>]*data-run=\"" + run + "\"[^>]*>").matcher(svg);
        assertTrue(polyline.find(), "run " + run + " drawn in\n" + svg);
        String element = polyline.group();
        double max = 0;
        int points = 0;
        for (Object point : timeline) {
            Object v = ((List<?>) point).get(field);
            if (v instanceof Number n) {
                max = Math.max(max, n.doubleValue());
                points++;
            }
        }
        assertEquals(points, Integer.parseInt(attribute(element, "data-points")), element);
        assertEquals(Math.round(max), Long.parseLong(attribute(element, "data-max")), element);
        assertEquals(points, attribute(element, "points").trim().split(" ").length, element);
    }

    private static Map<String, String> charts(String dom) {
        Map<String, String> charts = new LinkedHashMap<>();
        Matcher svg = Pattern.compile("<svg[^>]*data-chart=\"([^\"]+)\"[^>]*>.*?</svg>", Pattern.DOTALL)
                .matcher(dom);
        while (svg.find()) {
            charts.put(svg.group(1), svg.group());
        }
        return charts;
    }

    private static String cell(String dom, int run, String key) {
        Matcher td = Pattern.compile("<td data-run=\"" + run + "\" data-key=\"" + key + "\"[^>]*>[^<]*")
                .matcher(dom);
        assertTrue(td.find(), "summary cell " + key + " of run " + run);
        return td.group();
    }

    private static String attribute(String element, String name) {
        Matcher m = ATTRIBUTE.matcher(element);
        while (m.find()) {
            if (m.group(1).equals(name)) {
                return m.group(2);
            }
        }
        throw new AssertionError("no " + name + " in " + element);
    }

    /**
     * Runs headless Chromium on {@code page} with a fresh profile and every network access refused (a
     * proxy that does not exist, host resolution switched off); returns what it printed on stdout.
     */
    private static String chromium(Path chromium, Path dir, String action, Path page) throws Exception {
        Path profile = Files.createTempDirectory(dir, "profile");
        List<String> command = new ArrayList<>(List.of(
                chromium.toString(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
                "--user-data-dir=" + profile,
                "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--hide-scrollbars",
                "--window-size=1280,2000",
                action,
                page.toUri().toString()));
        Path stderr = dir.resolve("chromium-" + System.nanoTime() + ".err");
        Process process =
                new ProcessBuilder(command).redirectError(stderr.toFile()).start();
        process.getOutputStream().close();
        byte[] out = process.getInputStream().readAllBytes();
        if (!process.waitFor(120, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            fail("chromium did not finish within 120 s: " + command);
        }
        assertEquals(0, process.exitValue(), "chromium " + action + " failed:\n" + Files.readString(stderr));
        return new String(out, StandardCharsets.UTF_8);
    }

    /** $CHROMIUM, or chromium / chromium-browser / google-chrome on the PATH; fails the test when none is there. */
    static Path findChromium() throws IOException {
        String configured = System.getenv("CHROMIUM");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
        }
        for (String name : List.of("chromium", "chromium-browser", "google-chrome")) {
            for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
                Path candidate = Path.of(dir, name);
                if (Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
        }
        fail("Chromium is not installed, and this test must open the HTML report in a real headless browser: "
                + "install Debian's chromium package (apt-get install -y chromium; ./mvnw does it when run as root) "
                + "or point CHROMIUM at a Chromium binary");
        throw new AssertionError("unreachable");
    }
}
