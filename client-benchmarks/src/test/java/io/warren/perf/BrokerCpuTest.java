package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run's RabbitMQ nodes' CPU time: which processes are the nodes (the beam.smp processes holding the listening
 * sockets of the run's ports), how their stat lines read, which URIs are on this machine. A fake /proc tree.
 */
class BrokerCpuTest {

    private static final String TCP_HEADING =
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

    // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    // priority nice num_threads itrealvalue starttime vsize ...
    private static String stat(String pid, String comm, long utime, long stime, long startTime) {
        return pid + " (" + comm + ") S 1 10 10 0 -1 4194560 9000 0 12 0 " + utime + " " + stime + " 7 3 20 0 40 0 "
                + startTime + " 123456 789\n";
    }

    /** A /proc/net/tcp line: a socket on 127.0.0.1:{@code port} in state {@code st} with {@code inode}. */
    private static String tcp(int slot, int port, String st, long inode) {
        return String.format(
                "%4d: 0100007F:%04X 00000000:0000 %s 00000000:00000000 00:00000000 00000000   107        0 %d 1 0%n",
                slot, port, st, inode);
    }

    @Test
    void onlyListeningSocketsOnTheRunsPortsCount() {
        Set<Long> inodes = new HashSet<>();
        Set<Integer> listened = new HashSet<>();
        BrokerCpu.listening(
                List.of(
                        TCP_HEADING,
                        tcp(0, 5672, "0A", 1001),
                        tcp(1, 5673, "0A", 1002), // another node, not the run's
                        tcp(2, 5672, "01", 1003), // an established connection to the broker
                        "  3: 00000000000000000000000000000000:1628 00000000000000000000000000000000:0000 0A"
                                + " 00000000:00000000 00:00000000 00000000   107        0 1004 1 0"), // tcp6
                Set.of(5672),
                inodes,
                listened);
        assertEquals(Set.of(1001L, 1004L), inodes);
        assertEquals(Set.of(5672), listened);
    }

    @Test
    void theNodesAreTheBeamProcessesHoldingTheListeningSockets(@TempDir Path proc) throws IOException {
        net(proc, tcp(0, 5672, "0A", 1001) + tcp(1, 5673, "0A", 2001), tcp(0, 5673, "0A", 2002));
        process(proc, "200", "beam.smp", 300, 100, 77, "socket:[1001]", "socket:[55]", "/dev/null");
        process(proc, "1300", "beam.smp", 50, 50, 78, "socket:[2001]", "socket:[2002]");
        process(proc, "400", "beam.smp", 9_000, 0, 79, "socket:[999]"); // a CLI tool or another node
        process(proc, "80", "java", 9_000, 0, 80, "socket:[1001]"); // not a node, even sharing the socket
        Files.createDirectories(proc.resolve("self")); // not a process number

        BrokerCpu one = BrokerCpu.find(proc, Set.of(5672));
        assertNotNull(one);
        assertEquals(1, one.nodes());
        assertEquals((300 + 100) * 10_000_000L, one.read(), "USER_HZ ticks of 10 ms");

        BrokerCpu both = BrokerCpu.find(proc, Set.of(5672, 5673));
        assertNotNull(both);
        assertEquals(2, both.nodes());
        assertEquals((300 + 100 + 50 + 50) * 10_000_000L, both.read());

        Files.writeString(proc.resolve("1300").resolve("stat"), stat("1300", "beam.smp", 60, 50, 12_345));
        assertEquals(-1, both.read(), "its number reused by a new process: no reading");
        Files.delete(proc.resolve("1300").resolve("stat"));
        assertEquals(-1, both.read(), "a node that stopped leaves the interval without a reading");
    }

    @Test
    void theNodesThreadsTimeOnACpuIsReadToTheNanosecondWhereTheKernelKeepsIt(@TempDir Path proc) throws IOException {
        net(proc, tcp(0, 5672, "0A", 1001), "");
        process(proc, "200", "beam.smp", 300, 100, 77, "socket:[1001]");
        Path tasks = Files.createDirectories(proc.resolve("200").resolve("task"));
        Files.createDirectories(tasks.resolve("200"));
        Files.writeString(tasks.resolve("200").resolve("schedstat"), "123456789 5000 42\n");
        Files.createDirectories(tasks.resolve("201"));
        Files.writeString(tasks.resolve("201").resolve("schedstat"), "1000 7 1\n");
        Files.createDirectories(tasks.resolve("202")); // a thread that ended between the listing and the read
        BrokerCpu node = BrokerCpu.find(proc, Set.of(5672));
        assertNotNull(node);
        assertEquals(123_456_789L + 1_000L, node.read(), "not the 4 s of stat's ticks");
    }

    @Test
    void noFigureWithoutANodeOnEveryPortOrWhenAPortIsHeldByAnotherProgram(@TempDir Path proc) throws IOException {
        net(proc, tcp(0, 5672, "0A", 1001) + tcp(1, 5673, "0A", 2001), "");
        process(proc, "200", "beam.smp", 1, 1, 7, "socket:[1001]");
        process(proc, "300", "docker-proxy", 1, 1, 8, "socket:[2001]");
        assertNull(BrokerCpu.find(proc, Set.of(5672, 5674)), "nothing listens on 5674");
        net(proc, tcp(0, 5672, "0A", 1001), tcp(0, 5672, "0A", 3001));
        process(proc, "310", "docker-proxy", 1, 1, 9, "socket:[3001]");
        assertNull(
                BrokerCpu.find(proc, Set.of(5672)), "its IPv6 side held by another program: part of it is elsewhere");
        assertNull(BrokerCpu.find(proc, Set.of(5673)), "a forwarder, not a node: the broker is elsewhere");
        assertNull(BrokerCpu.find(proc.resolve("missing"), Set.of(5672)), "no /proc: not Linux");
        assertNull(BrokerCpu.find(null), "no local ports: a broker elsewhere");
    }

    @Test
    void anotherBeamWhoseDescriptorsCannotBeReadDoesNotHideTheNode(@TempDir Path proc) throws IOException {
        net(proc, tcp(0, 5672, "0A", 1001), "");
        process(proc, "200", "beam.smp", 4, 6, 7, "socket:[1001]");
        Files.createDirectories(proc.resolve("300")); // a CLI's beam.smp that ended: its comm and fd are gone
        Files.writeString(proc.resolve("300").resolve("comm"), "beam.smp\n");
        BrokerCpu nodes = BrokerCpu.find(proc, Set.of(5672));
        assertNotNull(nodes);
        assertEquals(10 * 10_000_000L, nodes.read());

        Files.delete(proc.resolve("200").resolve("fd").resolve("3"));
        Files.delete(proc.resolve("200").resolve("fd"));
        assertNull(BrokerCpu.find(proc, Set.of(5672)), "the node's own descriptors unreadable: no figure");
    }

    @Test
    void theRunsPortsWhenEveryBrokerIsOnThisMachine() {
        assertEquals(Set.of(5672), BrokerCpu.localPorts(List.of("amqp://guest:guest@localhost")));
        assertEquals(Set.of(5671), BrokerCpu.localPorts(List.of("amqps://127.0.0.1")));
        assertEquals(
                Set.of(5672, 5673), BrokerCpu.localPorts(List.of("amqp://127.0.0.1:5672/%2f", "amqp://[::1]:5673")));
        assertNull(
                BrokerCpu.localPorts(List.of("amqp://127.0.0.1:5672", "amqp://192.0.2.7:5672")),
                "a broker elsewhere (TEST-NET-1, never this machine's): its CPU is not readable here");
        assertNull(BrokerCpu.localPorts(List.of("not a uri")));
        assertTrue(BrokerCpu.local("localhost"));
        assertFalse(BrokerCpu.local(null));
    }

    private static void net(Path proc, String tcp, String tcp6) throws IOException {
        Path net = Files.createDirectories(proc.resolve("net"));
        Files.writeString(net.resolve("tcp"), TCP_HEADING + tcp);
        Files.writeString(net.resolve("tcp6"), TCP_HEADING + tcp6);
    }

    private static void process(
            Path proc, String pid, String comm, long utime, long stime, long startTime, String... fds)
            throws IOException {
        Path dir = Files.createDirectories(proc.resolve(pid));
        Files.writeString(dir.resolve("comm"), comm + "\n");
        Files.writeString(dir.resolve("stat"), stat(pid, comm, utime, stime, startTime));
        Path fd = Files.createDirectories(dir.resolve("fd"));
        for (int i = 0; i < fds.length; i++) {
            Files.createSymbolicLink(fd.resolve(String.valueOf(i + 3)), Path.of(fds[i]));
        }
    }
}
