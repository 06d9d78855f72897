package io.warren.perf;

import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The CPU time of the RabbitMQ nodes running on this machine (Linux's {@code /proc/<pid>/stat}), read when the
 * broker a run talks to is here. On one machine the broker takes most of the CPU a message costs, and a run whose
 * broker worked harder per message has the slower latency, whichever client it measures: this figure tells such
 * runs apart, and shows whether a client's way of using the protocol (batched acks, frames per write) costs the
 * broker more or less.
 *
 * <p>A node is a {@code beam.smp} process whose command line names {@code rabbit}; every such node on the machine
 * is counted (the nodes of a local cluster all work for the run's queues).
 */
final class BrokerCpu {

    private static final Path PROC = Path.of("/proc");

    /**
     * Linux reports a process's times in USER_HZ ticks, which its ABI fixes at 100 per second on the architectures
     * the JDK runs on.
     */
    private static final long NANOS_PER_TICK = 10_000_000L;

    private final Path proc;
    private final List<String> pids;

    private BrokerCpu(Path proc, List<String> pids) {
        this.proc = proc;
        this.pids = List.copyOf(pids);
    }

    /**
     * The local RabbitMQ nodes when every one of {@code uris} names this machine; null when one names another
     * machine (its broker's CPU is not readable here) or no node runs here.
     */
    static BrokerCpu forBrokers(List<String> uris) {
        for (String uri : uris) {
            if (!local(uri)) {
                return null;
            }
        }
        return find(PROC);
    }

    /** The nodes under {@code proc} (a {@code /proc} directory); null when there are none or it is not readable. */
    static BrokerCpu find(Path proc) {
        List<String> pids = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc, "[0-9]*")) {
            for (Path entry : entries) {
                if (isNode(entry)) {
                    pids.add(entry.getFileName().toString());
                }
            }
        } catch (IOException | RuntimeException e) {
            return null; // not Linux, or /proc not readable: the figure is not measured
        }
        pids.sort(null);
        return pids.isEmpty() ? null : new BrokerCpu(proc, pids);
    }

    private static boolean isNode(Path process) {
        try {
            if (!Files.readString(process.resolve("comm"), StandardCharsets.UTF_8)
                    .strip()
                    .equals("beam.smp")) {
                return false;
            }
            // arguments are separated by NUL bytes
            String cmdline = Files.readString(process.resolve("cmdline"), StandardCharsets.UTF_8);
            return cmdline.contains("rabbit");
        } catch (IOException | RuntimeException e) {
            return false; // gone meanwhile, or not ours to read
        }
    }

    /** How many nodes are counted. */
    int nodes() {
        return pids.size();
    }

    /** The nodes' CPU time so far (user + system, every thread), in nanoseconds; -1 when a node has gone. */
    long read() {
        long ticks = 0;
        for (String pid : pids) {
            try {
                long t = ticks(Files.readString(proc.resolve(pid).resolve("stat"), StandardCharsets.US_ASCII));
                if (t < 0) {
                    return -1;
                }
                ticks += t;
            } catch (IOException | RuntimeException e) {
                return -1; // the node stopped (a restart is a new process): the interval has no reading
            }
        }
        return ticks * NANOS_PER_TICK;
    }

    /**
     * utime + stime of a {@code /proc/<pid>/stat} line, in ticks; -1 when the line has too few fields. The command
     * name in parentheses may hold spaces and parentheses, so fields are counted from the last ')'.
     */
    static long ticks(String stat) {
        int close = stat.lastIndexOf(')');
        if (close < 0) {
            return -1;
        }
        // after ')': state, ppid, pgrp, session, tty_nr, tpgid, flags, minflt, cminflt, majflt, cmajflt, utime, stime
        String[] f = stat.substring(close + 1).trim().split("\\s+");
        if (f.length < 13) {
            return -1;
        }
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** Whether {@code uri}'s host is this machine: a loopback address or one of its interfaces'. */
    static boolean local(String uri) {
        String host;
        try {
            host = URI.create(uri).getHost();
        } catch (IllegalArgumentException e) {
            return false;
        }
        if (host == null) {
            return false;
        }
        try {
            for (InetAddress address : InetAddress.getAllByName(host)) {
                if (!address.isLoopbackAddress() && NetworkInterface.getByInetAddress(address) == null) {
                    return false;
                }
            }
            return true;
        } catch (UnknownHostException | SocketException e) {
            return false;
        }
    }
}
