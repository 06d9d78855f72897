package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The JIT and GC threads' CPU, read from Linux's per-thread stat lines. */
class VmThreadCpuTest {

    @Test
    void aSchedstatLineGivesTheTimeOnACpuInNanos() {
        assertEquals(3_712_345_678L, VmThreadCpu.runNanos("3712345678 120034 4411\n"));
    }

    @Test
    void compilerAndCollectorThreadsAreToldApartFromTheRest() {
        assertEquals(VmThreadCpu.JIT, VmThreadCpu.kind("C1 CompilerThre"));
        assertEquals(VmThreadCpu.JIT, VmThreadCpu.kind("C2 CompilerThre"));
        assertEquals(VmThreadCpu.GC, VmThreadCpu.kind("GC Thread#3"));
        assertEquals(VmThreadCpu.GC, VmThreadCpu.kind("G1 Conc#0"));
        assertEquals(-1, VmThreadCpu.kind("warren-io-1-1"));
        assertEquals(-1, VmThreadCpu.kind("VM Thread"));
    }

    @Test
    void thisJvmsCompilerThreadsAreFoundAndTheirTimeOnlyGrows() {
        Map<String, long[]> start = VmThreadCpu.read();
        assertNotNull(start, "Linux has /proc");
        assertTrue(
                start.values().stream().anyMatch(v -> v[0] == VmThreadCpu.JIT),
                "a JVM that compiles has a compiler thread: " + start.keySet());
        VmThreadCpu.Split split = VmThreadCpu.since(start, VmThreadCpu.read());
        assertTrue(split.jitNanos() >= 0 && split.gcNanos() >= 0);
        assertNull(VmThreadCpu.since(null, start));
    }

    @Test
    void aThreadNewSinceTheStartCountsFromZero() {
        Map<String, long[]> start = Map.of("1", new long[] {VmThreadCpu.JIT, 50});
        Map<String, long[]> end =
                Map.of("1", new long[] {VmThreadCpu.JIT, 80}, "2", new long[] {VmThreadCpu.JIT, 5}, "3", new long[] {
                    VmThreadCpu.GC, 7
                });
        assertEquals(new VmThreadCpu.Split(35, 7), VmThreadCpu.since(start, end));
    }
}
