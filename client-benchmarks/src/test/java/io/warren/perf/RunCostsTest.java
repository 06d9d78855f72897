package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A run's costs per message: the process's CPU and switches, and the broker's CPU read from /proc. */
class RunCostsTest {

    @Test
    void theBrokersCpuIsItsNodesTicksBetweenTheTwoReadings(@TempDir Path proc) throws Exception {
        Path net = Files.createDirectories(proc.resolve("net"));
        Files.writeString(
                net.resolve("tcp"),
                "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
                        + "   0: 0100007F:1628 00000000:0000 0A 00000000:00000000 00:00000000 00000000   107        0"
                        + " 4242 1 0\n");
        Path node = Files.createDirectories(proc.resolve("200"));
        Files.writeString(node.resolve("comm"), "beam.smp\n");
        Files.createDirectories(node.resolve("fd"));
        Files.createSymbolicLink(node.resolve("fd").resolve("9"), Path.of("socket:[4242]"));
        Files.writeString(node.resolve("stat"), stat(1_000, 500));

        RunCosts start = RunCosts.start(BrokerCpu.find(proc, Set.of(5672)));
        Files.writeString(node.resolve("stat"), stat(1_300, 700)); // 500 ticks later: 5 s
        String line = start.now().perMessage(start, 1_000, "none");
        assertTrue(line.endsWith("broker CPU 5,000.0 us per message"), line);

        Files.writeString(node.resolve("stat"), stat(900, 500));
        assertTrue(start.now().perMessage(start, 1_000, "none").endsWith("broker CPU - us per message"), "went back");
    }

    private static String stat(long utime, long stime) {
        return "200 (beam.smp) S 1 200 200 0 -1 4194304 9000 0 1 0 " + utime + " " + stime + " 0 0 20 0 40 0 77 9 9\n";
    }

    @Test
    void aWindowInWhichThisThreadWorksAndBlocksCostsCpuAndSwitches() {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "Linux /proc");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isCurrentThreadCpuTimeSupported(), "thread CPU time");
        RunCosts start = RunCosts.start("amqp://192.0.2.7:5672"); // a broker elsewhere: no broker figure
        // 50 ms of this thread's own CPU, however long a loaded machine takes to give it
        long sink = 0;
        long until = threads.getCurrentThreadCpuTime() + 50_000_000L;
        while (threads.getCurrentThreadCpuTime() < until) {
            sink += Long.numberOfTrailingZeros(System.nanoTime());
        }
        for (int i = 0; i < 20; i++) {
            LockSupport.parkNanos(200_000);
        }
        String line = start.now().perMessage(start, 10, "none");
        Matcher m = Pattern.compile("process CPU ([0-9,.]+) us, ([0-9.]+) context switches, broker CPU (\\S+) us")
                .matcher(line);
        assertTrue(m.find(), line);
        // 50 ms over 10 messages is 5,000 us each; the process's clock may lag by a tick of 10 ms
        assertTrue(Double.parseDouble(m.group(1).replace(",", "")) >= 4_000, line + " " + sink);
        assertTrue(Double.parseDouble(m.group(2)) > 0, line);
        assertEquals("-", m.group(3), "a broker elsewhere has no figure: " + line);
    }
}
