package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The local RabbitMQ nodes' CPU time: which processes are nodes, how their stat lines read, which URIs are here. */
class BrokerCpuTest {

    // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime ...
    private static String stat(String pid, String comm, long utime, long stime) {
        return pid + " (" + comm + ") S 1 10 10 0 -1 4194560 9000 0 12 0 " + utime + " " + stime + " 7 3 20 0 40 0\n";
    }

    @Test
    void userAndSystemTicksAreCountedFromTheLastParenthesis() {
        assertEquals(130 + 22, BrokerCpu.ticks(stat("42", "beam.smp", 130, 22)));
        assertEquals(5 + 6, BrokerCpu.ticks(stat("42", "a) b (c", 5, 6)), "a command name with spaces and ')'");
        assertEquals(-1, BrokerCpu.ticks("42 (beam.smp) S 1 10"));
        assertEquals(-1, BrokerCpu.ticks("no parenthesis"));
    }

    @Test
    void onlyBeamProcessesRunningRabbitAreNodesAndTheirTicksAreAdded(@TempDir Path proc) throws IOException {
        process(proc, "200", "beam.smp", "beam.smp\0-W\0w\0--\0-s\0rabbit\0boot\0", 300, 100);
        process(proc, "1300", "beam.smp", "beam.smp\0--\0-s\0rabbit\0boot\0", 50, 50);
        process(proc, "77", "beam.smp", "beam.smp\0--\0-s\0couch\0", 9_000, 0); // another Erlang program
        process(proc, "80", "java", "java\0-jar\0rabbit-tool.jar\0", 9_000, 0);
        Files.createDirectories(proc.resolve("self")); // not a process number

        BrokerCpu nodes = BrokerCpu.find(proc);
        assertNotNull(nodes);
        assertEquals(2, nodes.nodes());
        assertEquals((300 + 100 + 50 + 50) * 10_000_000L, nodes.read(), "USER_HZ ticks of 10 ms, both nodes");

        Files.delete(proc.resolve("1300").resolve("stat"));
        assertEquals(-1, nodes.read(), "a node that stopped leaves the interval without a reading");
    }

    @Test
    void noNodeNoFigure(@TempDir Path proc) throws IOException {
        process(proc, "80", "java", "java\0", 1, 1);
        assertNull(BrokerCpu.find(proc));
        assertNull(BrokerCpu.find(proc.resolve("missing")), "no /proc: not Linux");
    }

    @Test
    void aBrokerIsHereWhenItsHostIsLoopbackOrThisMachinesAndTheFigureNeedsEveryBrokerHere() {
        assertTrue(BrokerCpu.local("amqp://guest:guest@localhost:5672"));
        assertTrue(BrokerCpu.local("amqp://127.0.0.1:5672/%2f"));
        assertTrue(BrokerCpu.local("amqp://[::1]:5672"));
        assertFalse(BrokerCpu.local("amqp://192.0.2.7:5672"), "TEST-NET-1: never this machine's");
        assertFalse(BrokerCpu.local("not a uri"));
        assertNull(
                BrokerCpu.forBrokers(List.of("amqp://127.0.0.1:5672", "amqp://192.0.2.7:5672")),
                "a broker elsewhere: its CPU is not readable here");
    }

    private static void process(Path proc, String pid, String comm, String cmdline, long utime, long stime)
            throws IOException {
        Path dir = Files.createDirectories(proc.resolve(pid));
        Files.writeString(dir.resolve("comm"), comm + "\n");
        Files.writeString(dir.resolve("cmdline"), cmdline);
        Files.writeString(dir.resolve("stat"), stat(pid, comm, utime, stime));
    }
}
