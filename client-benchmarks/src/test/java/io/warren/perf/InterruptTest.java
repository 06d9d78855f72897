package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Ctrl-C (SIGINT or SIGTERM: the JVM runs its shutdown hooks for both) prints the summary so far. */
class InterruptTest {

    @Test
    void aSignalStopsTheRunAndPrintsItsSummaryAndResults(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("interrupted.json");
        Path log = dir.resolve("out.txt");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        // output to a file, not a pipe: a pipe read concurrently with the process's exit can report "Stream closed"
        Process process = new ProcessBuilder(
                        java.toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        "io.warren.perf.WarrenPerf",
                        "--peer",
                        "sink",
                        "-c",
                        "100",
                        "-z",
                        "0",
                        "--json",
                        json.toString())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        process.getOutputStream().close();
        try {
            for (int i = 0;
                    i < 600 && !(Files.exists(log) && Files.readString(log).contains("| sent "));
                    i++) {
                Thread.sleep(100);
            }
            assertTrue(
                    Files.readString(log).contains("| sent "),
                    "a progress line within a minute:\n" + Files.readString(log));
            process.destroy(); // SIGTERM
            assertTrue(
                    process.waitFor(60, TimeUnit.SECONDS),
                    "the tool exits after the signal:\n" + Files.readString(log));
        } finally {
            process.destroyForcibly();
        }
        String out = Files.readString(log);
        assertTrue(
                out.contains("== " + Clients.defaultClient() + " run 1"), out); // Warren's driver stops on a signal too
        assertTrue(out.contains("stopped by interrupted"), out);
        assertTrue(out.contains("results written to"), out);
        Map<String, Object> r = PeerRunTest.asObject(Json.parse(Files.readString(json)));
        assertEquals("interrupted", r.get("stopped_by"));
        assertTrue(PeerRunTest.number(r, "sent") > 0, "what was sent so far: " + r.get("sent"));
        assertTrue(!((List<?>) r.get("timeline")).isEmpty());
    }
}
