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
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The CPU time of the run's RabbitMQ nodes when they run on this machine: the {@code beam.smp} processes that listen
 * on the run's broker ports, found through Linux's {@code /proc/net/tcp}, {@code tcp6} and {@code /proc/<pid>/fd},
 * and read from {@code /proc/<pid>/stat}. On one machine the broker takes most of the CPU a message costs; this
 * figure shows whether a client's way of using the protocol (batched acks, frames per write) costs the broker more
 * or less, and tells apart runs whose broker worked harder per message, which may explain their latency.
 *
 * <p>Only the nodes the run connects to are counted: in a cluster on one machine, a queue's leader or replicas on
 * another node are not. No figure where a broker is elsewhere, where its port is held by another program (a proxy,
 * a container's port forwarder), or where this user may not read the node's {@code /proc/<pid>/fd} (root, or the
 * broker's own user, may). The time is the nodes' threads' time on a CPU, to the nanosecond.
 */
final class BrokerCpu {

    private static final Path PROC = Path.of("/proc");

    /** The state column of a listening socket in {@code /proc/net/tcp}. */
    private static final String LISTEN = "0A";

    private final Path proc;
    private final List<String> pids;
    private final List<Long> startTimes;

    private BrokerCpu(Path proc, List<String> pids, List<Long> startTimes) {
        this.proc = proc;
        this.pids = List.copyOf(pids);
        this.startTimes = List.copyOf(startTimes);
    }

    /**
     * The ports of {@code uris} when every one names this machine; null when one names another machine (its
     * broker's CPU is not readable here) or names none. Resolves host names: once per series of runs, not per run.
     */
    static Set<Integer> localPorts(List<String> uris) {
        Set<Integer> ports = new TreeSet<>();
        for (String uri : uris) {
            URI parsed;
            try {
                parsed = URI.create(uri);
            } catch (IllegalArgumentException e) {
                return null;
            }
            if (!local(parsed.getHost())) {
                return null;
            }
            ports.add(parsed.getPort() >= 0 ? parsed.getPort() : "amqps".equals(parsed.getScheme()) ? 5671 : 5672);
        }
        return ports.isEmpty() ? null : ports;
    }

    /** Whether {@code host} is this machine: a loopback address or one of its interfaces'. */
    static boolean local(String host) {
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

    /** The nodes listening on {@code ports} now; null when {@code ports} is, or see {@link #find(Path, Set)}. */
    static BrokerCpu find(Set<Integer> ports) {
        return ports == null ? null : find(PROC, ports);
    }

    /**
     * The {@code beam.smp} processes under {@code proc} (a {@code /proc} directory) that listen on {@code ports}; null
     * when a port has no listener, or a listener that is not such a process or whose descriptors this user may not
     * read.
     */
    static BrokerCpu find(Path proc, Set<Integer> ports) {
        try {
            Set<Long> inodes = new HashSet<>();
            Set<Integer> listened = new HashSet<>();
            for (String table : List.of("tcp", "tcp6")) {
                Path file = proc.resolve("net").resolve(table);
                if (Files.isReadable(file)) {
                    listening(Files.readAllLines(file, StandardCharsets.US_ASCII), ports, inodes, listened);
                }
            }
            if (!listened.containsAll(ports)) {
                return null;
            }
            Set<Long> found = new HashSet<>();
            List<String> pids = new ArrayList<>();
            List<Long> startTimes = new ArrayList<>();
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc, "[0-9]*")) {
                for (Path process : entries) {
                    if (isBeam(process) && holdsAny(process, inodes, found)) {
                        String stat = Files.readString(process.resolve("stat"), StandardCharsets.US_ASCII);
                        pids.add(process.getFileName().toString());
                        startTimes.add(ProcStat.startTime(stat));
                    }
                }
            }
            // every listening socket held by a node we can read: else a share of the broker would go uncounted
            return found.containsAll(inodes) && !pids.isEmpty() ? new BrokerCpu(proc, pids, startTimes) : null;
        } catch (IOException | RuntimeException e) {
            return null; // not Linux, or /proc not readable: the figure is not measured
        }
    }

    /**
     * Adds the inodes of {@code table}'s (a {@code /proc/net/tcp} or {@code tcp6} file's lines) listening sockets on
     * {@code ports} to {@code inodes}, and their ports to {@code listened}.
     */
    static void listening(List<String> table, Set<Integer> ports, Set<Long> inodes, Set<Integer> listened) {
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
        for (String line : table) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 10 || !LISTEN.equals(f[3])) {
                continue; // the heading, or not a listening socket
            }
            int colon = f[1].lastIndexOf(':');
            if (colon < 0) {
                continue;
            }
            int port = Integer.parseInt(f[1].substring(colon + 1), 16);
            if (ports.contains(port)) {
                inodes.add(Long.parseLong(f[9]));
                listened.add(port);
            }
        }
    }

    private static boolean isBeam(Path process) {
        try {
            return Files.readString(process.resolve("comm"), StandardCharsets.US_ASCII)
                    .strip()
                    .equals("beam.smp");
        } catch (IOException | RuntimeException e) {
            return false; // gone meanwhile
        }
    }

    /**
     * Whether {@code process} holds one of {@code inodes}' sockets; adds those it holds to {@code found}. False when
     * its descriptors cannot be read (another user's process, or one that ended): if it was the node, a socket stays
     * unfound and the caller gives no figure.
     */
    private static boolean holdsAny(Path process, Set<Long> inodes, Set<Long> found) {
        boolean holds = false;
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(process.resolve("fd"))) {
            for (Path fd : fds) {
                String link;
                try {
                    link = Files.readSymbolicLink(fd).toString();
                } catch (IOException e) {
                    continue; // closed meanwhile
                }
                if (link.startsWith("socket:[") && link.endsWith("]")) {
                    long inode = Long.parseLong(link.substring(8, link.length() - 1));
                    if (inodes.contains(inode)) {
                        found.add(inode);
                        holds = true;
                    }
                }
            }
        } catch (IOException e) {
            return false;
        }
        return holds;
    }

    /** How many nodes are counted. */
    int nodes() {
        return pids.size();
    }

    /**
     * The nodes' CPU time so far, in nanoseconds: the sum of their threads' time on a CPU ({@code
     * /proc/<pid>/task/<tid>/schedstat}, exact to the nanosecond, where {@code stat}'s ticks are 10 ms), or the
     * ticks where the kernel keeps no schedstat. -1 when a node has gone, or its process number now names another
     * process. A node's threads live as long as it does; one that ended meanwhile would make the sum go back, which
     * the meter reads as no figure.
     */
    long read() {
        long nanos = 0;
        for (int i = 0; i < pids.size(); i++) {
            try {
                Path node = proc.resolve(pids.get(i));
                String stat = Files.readString(node.resolve("stat"), StandardCharsets.US_ASCII);
                long ticks = ProcStat.cpuTicks(stat);
                if (ticks < 0 || ProcStat.startTime(stat) != startTimes.get(i)) {
                    return -1;
                }
                long onCpu = onCpuNanos(node.resolve("task"));
                nanos += onCpu >= 0 ? onCpu : ticks * ProcStat.NANOS_PER_TICK;
            } catch (IOException | RuntimeException e) {
                return -1; // the node stopped (a restart is a new process): the interval has no reading
            }
        }
        return nanos;
    }

    /** The sum of the first schedstat field of every thread under {@code tasks}; -1 where there is none. */
    private static long onCpuNanos(Path tasks) {
        long sum = 0;
        boolean any = false;
        try (DirectoryStream<Path> threads = Files.newDirectoryStream(tasks)) {
            for (Path thread : threads) {
                String line;
                try {
                    line = Files.readString(thread.resolve("schedstat"), StandardCharsets.US_ASCII);
                } catch (IOException e) {
                    continue; // the thread ended between the listing and the read
                }
                int space = line.indexOf(' ');
                sum += Long.parseLong(space < 0 ? line.strip() : line.substring(0, space));
                any = true;
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return any ? sum : -1;
    }
}
