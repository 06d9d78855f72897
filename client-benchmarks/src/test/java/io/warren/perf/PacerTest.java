package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The pace on a fake clock: a fixed schedule, no burst after a long stall, nothing when unpaced. */
class PacerTest {

    private static final long SLOT = 100_000_000L; // 10 msg/s

    private final FakeClock clock = new FakeClock();
    private final long start = clock.nanoTime();

    private long slotsSinceStart() {
        return (clock.nanoTime() - start) / SLOT;
    }

    @Test
    void eachCallReturnsAtTheNextSlotOfAFixedSchedule() {
        Pacer pacer = new Pacer(10, clock);
        assertTrue(pacer.paced());
        pacer.await();
        assertEquals(start, clock.nanoTime(), "the first slot is at once");
        pacer.await();
        pacer.await();
        assertEquals(start + 2 * SLOT, clock.nanoTime(), "one slot apart");
    }

    @Test
    void aProducerALittleBehindCatchesUpWithoutWaiting() {
        Pacer pacer = new Pacer(10, clock);
        pacer.await();
        clock.advance(SLOT / 2 + 3 * SLOT); // a slow publish: slots 1, 2 and 3 have passed
        long late = clock.nanoTime();
        pacer.await();
        pacer.await();
        pacer.await();
        assertEquals(late, clock.nanoTime(), "the slots passed are taken at once");
        pacer.await();
        assertEquals(4, slotsSinceStart(), "then the schedule goes on where it was");
    }

    @Test
    void aProducerMoreThanASecondBehindRestartsTheScheduleFromNow() {
        Pacer pacer = new Pacer(10, clock);
        pacer.await();
        clock.advance(5 * 1_000_000_000L);
        long resumed = clock.nanoTime();
        pacer.await();
        assertEquals(resumed, clock.nanoTime());
        pacer.await();
        assertEquals(resumed + SLOT, clock.nanoTime(), "no burst of the 50 slots missed");
    }

    @Test
    void unpacedReturnsAtOnce() {
        Pacer pacer = new Pacer(0, clock);
        assertFalse(pacer.paced());
        for (int i = 0; i < 1000; i++) {
            pacer.await();
        }
        assertEquals(start, clock.nanoTime());
    }
}
