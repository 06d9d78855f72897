package io.warren.perf;

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * What a run cost the machine, read at its start and at its end: this process's CPU time (the client's threads, the
 * JIT's and the GC's) and its threads' context switches (but those of threads named in {@code excluded}, a tool's
 * own samplers), and the CPU time of every RabbitMQ node on this machine ({@code beam.smp} processes in
 * {@code /proc}). With the broker on the same cores, this tells which side a message's cost is on. Linux only for
 * the switches and the broker; those figures read "-" elsewhere.
 */
public final class RunCosts {

    /** The unit of {@code /proc/<pid>/stat}'s times: USER_HZ, 100 on every Linux the JVM runs on. */
    private static final long NANOS_PER_TICK = 10_000_000L;

    /** A RabbitMQ node's process name. */
    private static final String BROKER = "beam.smp";

    private final long cpuNanos;
    private final Map<String, long[]> switches;
    private final long brokerTicks;

    private RunCosts(long cpuNanos, Map<String, long[]> switches, long brokerTicks) {
        this.cpuNanos = cpuNanos;
        this.switches = switches;
        this.brokerTicks = brokerTicks;
    }

    /** A reading now. */
    public static RunCosts now() {
        long cpu = ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os
                ? os.getProcessCpuTime()
                : -1;
        return new RunCosts(cpu, ContextSwitches.perThread(), cpuTicksOfAll(BROKER));
    }

    /**
     * The costs from {@code start} to this reading per message, as "process CPU 123.4 us, 2.20 context switches,
     * broker CPU 456.7 us per message"; the switches leave out threads whose (native, 15-character) name is
     * {@code excluded}.
     */
    public String perMessage(RunCosts start, long messages, String excluded) {
        Long voluntary = ContextSwitches.since(start.switches, switches, excluded::equals, 0);
        Long involuntary = ContextSwitches.since(start.switches, switches, excluded::equals, 1);
        Double cpu = cpuNanos < 0 || start.cpuNanos < 0 ? null : (cpuNanos - start.cpuNanos) / 1e3 / messages;
        Double cs = voluntary == null ? null : (voluntary + involuntary) / (double) messages;
        Double broker = brokerTicks < 0 || start.brokerTicks < 0
                ? null
                : (brokerTicks - start.brokerTicks) * (double) NANOS_PER_TICK / 1e3 / messages;
        return "process CPU " + Format.number(cpu, 1) + " us, " + Format.number(cs, 2)
                + " context switches, broker CPU " + Format.number(broker, 1) + " us per message";
    }

    /** User + system ticks of every process named {@code name} alive now; -1 without /proc or without one. */
    static long cpuTicksOfAll(String name) {
        Path proc = Path.of("/proc");
        if (!Files.isDirectory(proc)) {
            return -1;
        }
        long total = 0;
        boolean found = false;
        try (DirectoryStream<Path> pids = Files.newDirectoryStream(proc, "[0-9]*")) {
            for (Path pid : pids) {
                try {
                    long ticks = cpuTicks(Files.readString(pid.resolve("stat"), StandardCharsets.US_ASCII), name);
                    if (ticks >= 0) {
                        total += ticks;
                        found = true;
                    }
                } catch (IOException | RuntimeException gone) {
                    // the process ended, or is not ours to read: it is not in this reading
                }
            }
        } catch (IOException e) {
            return -1;
        }
        return found ? total : -1;
    }

    /**
     * User + system ticks from a {@code /proc/<pid>/stat} line when its process is named {@code name}, else -1. The
     * name, between parentheses, may hold spaces and parentheses itself, so fields count from the last ')'.
     */
    static long cpuTicks(String stat, String name) {
        int open = stat.indexOf('(');
        int close = stat.lastIndexOf(')');
        if (open < 0 || close < open || !stat.substring(open + 1, close).equals(name)) {
            return -1;
        }
        String[] fields = stat.substring(close + 2).split(" ");
        // fields[0] is the state, field 3 of the line: utime and stime are fields 14 and 15
        return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    }
}
