package io.warren.bench.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.bench.publish.SharedLoopLargeBodyMain.Args;
import org.junit.jupiter.api.Test;

/** SharedLoopLargeBodyMain's command line: the counts in their order, then RUNS and a URI, or why not. */
class SharedLoopLargeBodyMainArgsTest {

    @Test
    void theCountsInTheirOrderThenRunsAndAUri() {
        assertEquals(
                new Args(2, 8, 100, 1048576, 1, RunsAndUri.LOCAL_BROKER),
                Args.parse(new String[] {"2", "8", "100", "1048576"}));
        assertEquals(
                new Args(2, 8, 100, 1048576, 3, "amqp://h"),
                Args.parse(new String[] {"2", "8", "100", "1048576", "3", "amqp://h"}));
    }

    @Test
    void noConnectionsOrAMissingCountIsRefusedWithTheUsage() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Args.parse(new String[] {"0", "8", "100", "1"}));
        assertTrue(e.getMessage().startsWith("CONNECTIONS must be at least 1"), e.getMessage());
        assertTrue(e.getMessage().contains(Args.USAGE), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Args.parse(new String[] {"2", "8", "100"}));
    }
}
