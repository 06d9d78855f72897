package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** A run's costs per message: the process's CPU and switches, and the broker's CPU read from /proc. */
class RunCostsTest {

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
