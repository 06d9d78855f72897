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

    /** The start of a RabbitMQ node's /proc/PID/stat: utime 86443, stime 140462 ticks. */
    private static final String BEAM_STAT = "2943 (beam.smp) S 1 2942 2942 0 -1 4194304 284328960 0 1 0 86443 140462"
            + " 0 0 20 0 20 0 5027 2381299712 54259 18446744073709551615";

    @Test
    void theBrokersTicksAreItsUserAndSystemTime() {
        assertEquals(86443 + 140462, RunCosts.cpuTicks(BEAM_STAT, "beam.smp"));
    }

    @Test
    void aProcessOfAnotherNameIsNotTheBroker() {
        assertEquals(-1, RunCosts.cpuTicks(BEAM_STAT.replace("beam.smp", "java"), "beam.smp"));
    }

    @Test
    void aNameWithSpacesAndParenthesesDoesNotShiftTheFields() {
        String odd = BEAM_STAT.replace("(beam.smp)", "(a b) (c)");
        assertEquals(86443 + 140462, RunCosts.cpuTicks(odd, "a b) (c"));
    }

    @Test
    void theScanOfProcFindsThisJvmByItsNameAndNothingForANameNoProcessHas() throws Exception {
        Path comm = Path.of("/proc/self/comm");
        assumeTrue(Files.isReadable(comm), "Linux /proc");
        String self = Files.readString(comm).trim();
        assertTrue(RunCosts.cpuTicksOfAll(self) >= 0, "this JVM is a process named " + self);
        assertEquals(-1, RunCosts.cpuTicksOfAll("no-such-process-name"));
    }

    @Test
    void aWindowInWhichThisThreadWorksAndBlocksCostsCpuAndSwitches() {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "Linux /proc");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isCurrentThreadCpuTimeSupported(), "thread CPU time");
        RunCosts start = RunCosts.now();
        // 50 ms of this thread's own CPU, however long a loaded machine takes to give it
        long sink = 0;
        long until = threads.getCurrentThreadCpuTime() + 50_000_000L;
        while (threads.getCurrentThreadCpuTime() < until) {
            sink += Long.numberOfTrailingZeros(System.nanoTime());
        }
        for (int i = 0; i < 20; i++) {
            LockSupport.parkNanos(200_000);
        }
        String line = RunCosts.now().perMessage(start, 10, "none");
        Matcher m = Pattern.compile("process CPU ([0-9,.]+) us, ([0-9.]+) context switches, broker CPU (\\S+) us")
                .matcher(line);
        assertTrue(m.find(), line);
        // 50 ms over 10 messages is 5,000 us each; the process's clock may lag by a tick of 10 ms
        assertTrue(Double.parseDouble(m.group(1).replace(",", "")) >= 4_000, line + " " + sink);
        assertTrue(Double.parseDouble(m.group(2)) > 0, line);
    }
}
