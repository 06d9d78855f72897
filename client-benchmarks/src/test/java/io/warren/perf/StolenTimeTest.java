package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The hypervisor's share of the machine's CPU time, read from /proc/stat's cpu line. */
class StolenTimeTest {

    @Test
    void theStealColumnAgainstTheSumOfTheEightThatSplitTheTime() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        long[] r = StolenTime.parse("cpu  4705 356 584 3699 23 23 0 137 50 0");
        assertArrayEquals(new long[] {137, 4705 + 356 + 584 + 3699 + 23 + 23 + 137}, r, "guest is in user already");
    }

    @Test
    void aKernelWithoutAStealColumnHasNoFigure() {
        assertNull(StolenTime.parse("cpu  4705 356 584 3699 23 23 0"));
    }

    @Test
    void thePercentageIsOfTheTimeBetweenTwoReadings() {
        assertEquals(5.0, StolenTime.percent(new long[] {100, 10_000}, new long[] {600, 20_000}));
        assertEquals(0.0, StolenTime.percent(new long[] {100, 10_000}, new long[] {100, 20_000}));
        assertNull(StolenTime.percent(null, new long[] {600, 20_000}));
        assertNull(StolenTime.percent(new long[] {100, 10_000}, null));
        assertNull(StolenTime.percent(new long[] {100, 10_000}, new long[] {100, 10_000}), "no time passed");
        assertNull(
                StolenTime.percent(new long[] {0, 10_000}, new long[] {2, 10_100}),
                "100 ticks: 2 % is two ticks' noise");
        assertEquals(0.4, StolenTime.percent(new long[] {0, 10_000}, new long[] {2, 10_500}), 1e-9);
    }

    @Test
    void theMachinesLineIsReadNotAProcessorsOne(@TempDir Path dir) throws IOException {
        Path stat = dir.resolve("stat");
        Files.writeString(
                stat, "cpu0 10 0 10 80 0 0 0 0 0 0\ncpu  20 0 20 150 0 0 0 10 0 0\ncpu1 10 0 10 70 0 0 0 10 0 0\n");
        assertArrayEquals(new long[] {10, 200}, StolenTime.read(stat));
        assertNull(StolenTime.read(dir.resolve("missing")));
    }
}
