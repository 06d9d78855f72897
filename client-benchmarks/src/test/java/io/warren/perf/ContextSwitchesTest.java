package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** Context switches per thread from /proc, and which threads are the client's. */
class ContextSwitchesTest {

    @Test
    void theToolsThreadsAreToldFromTheClientsByTheirFifteenCharacterNativeNames() {
        assertTrue(ResourceMeter.excludedNative("warren-progress"));
        assertTrue(ResourceMeter.excludedNative("warren-peer-3-1"));
        // Linux cuts warren-perf-producer-1 to these 15 characters: a producer is the client's work
        assertFalse(ResourceMeter.excludedNative("warren-perf-pro"));
        assertFalse(ResourceMeter.excludedNative("warren-perf-con"));
    }

    @Test
    void aThreadThatBlocksIsCountedAndAnExcludedOneIsNot() {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "Linux /proc");
        Map<String, long[]> start = ContextSwitches.perThread();
        for (int i = 0; i < 20; i++) {
            LockSupport.parkNanos(200_000); // this thread blocks: a voluntary switch each time it is descheduled
        }
        Map<String, long[]> end = ContextSwitches.perThread();
        assertNotNull(start);
        Long counted = ContextSwitches.since(start, end, name -> false, 0);
        assertTrue(counted != null && counted >= 1, "the test thread parked: " + counted);
        assertEquals(0L, ContextSwitches.since(start, end, name -> true, 0), "every thread excluded");
    }
}
