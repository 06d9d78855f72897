package io.warren.impl.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class BackoffTest {

    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    @Test
    void growsByTheMultiplierUpToTheCap() {
        Backoff b = new Backoff(100 * MS, 1_000 * MS, 2.0, 0.0);
        assertEquals(100 * MS, b.delayNanos(1));
        assertEquals(200 * MS, b.delayNanos(2));
        assertEquals(400 * MS, b.delayNanos(3));
        assertEquals(800 * MS, b.delayNanos(4));
        assertEquals(1_000 * MS, b.delayNanos(5));
        assertEquals(1_000 * MS, b.delayNanos(10_000), "no overflow however many attempts");
    }

    @Test
    void jitterTakesUpToItsFractionOff() {
        assertEquals(100 * MS, new Backoff(100 * MS, 1_000 * MS, 2.0, 0.5, () -> 0.0).delayNanos(1));
        assertEquals(50 * MS, new Backoff(100 * MS, 1_000 * MS, 2.0, 0.5, () -> 1.0).delayNanos(1));
        assertEquals(0, new Backoff(100 * MS, 1_000 * MS, 2.0, 1.0, () -> 1.0).delayNanos(1));
    }

    @Test
    void refusesNonsense() {
        assertThrows(IllegalArgumentException.class, () -> new Backoff(-1, 10, 2, 0));
        assertThrows(IllegalArgumentException.class, () -> new Backoff(10, 5, 2, 0));
        assertThrows(IllegalArgumentException.class, () -> new Backoff(1, 5, 0.5, 0));
        assertThrows(IllegalArgumentException.class, () -> new Backoff(1, 5, Double.NaN, 0));
        assertThrows(IllegalArgumentException.class, () -> new Backoff(1, 5, 2, 1.5));
    }

    @Property(tries = 300)
    void delayStaysWithinItsBand(
            @ForAll @IntRange(min = 1, max = 200) int attempt,
            @ForAll @DoubleRange(min = 1.0, max = 10.0) double multiplier,
            @ForAll @DoubleRange(min = 0.0, max = 1.0) double jitter) {
        Backoff b = new Backoff(10 * MS, 30_000 * MS, multiplier, jitter);
        long base = b.baseNanos(attempt);
        long d = b.delayNanos(attempt);
        assertTrue(base <= 30_000 * MS && base >= 10 * MS, "base " + base);
        assertTrue(
                d <= base && d >= (long) (base * (1 - jitter)) - 1,
                d + " outside [" + base * (1 - jitter) + ", " + base + "]");
        assertTrue(b.baseNanos(attempt + 1) >= base, "never shrinks");
    }
}
