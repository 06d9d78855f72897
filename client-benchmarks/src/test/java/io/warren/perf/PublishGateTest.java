package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The waits before a publish, on a fake clock: a producer that waits for room in its confirm window keeps its slot
 * of the pace, so a full window delays its publishes but loses none of its schedule (as Warren's loop never did).
 */
class PublishGateTest {

    private static final long SLOT = 100_000_000L; // 10 msg/s

    private final FakeClock clock = new FakeClock();
    private final long start = clock.nanoTime();
    private final Metrics metrics = new Metrics();

    private long slotsSinceStart() {
        return (clock.nanoTime() - start) / SLOT;
    }

    @Test
    void aPublishThatWaitsForRoomInTheWindowKeepsItsSlot() throws InterruptedException {
        ConfirmTracker window = new ConfirmTracker(1, metrics);
        // a slice of 0: each look for room answers at once, so the test decides when the confirm comes
        PublishGate gate = new PublishGate(new Pacer(10, clock), window, 0);
        assertTrue(gate.await(), "slot 0, the window empty");
        window.sent(1, clock.nanoTime());

        // the window is full: three looks find no room (the producer looks at its stop flag in between), then the
        // confirm of publish 1 comes
        int looks = 0;
        while (!gate.await()) {
            looks++;
            if (looks == 3) {
                window.ack(1, false);
            }
        }
        assertEquals(3, looks, "looks without room");
        assertEquals(1, slotsSinceStart(), "publish 2 goes in slot 1, where it waited for the window");
        window.sent(2, clock.nanoTime());
        window.ack(2, false);

        assertTrue(gate.await());
        assertEquals(2, slotsSinceStart(), "publish 3 in slot 2: no slot was lost while the window was full");
    }

    @Test
    void withoutConfirmsEachPublishTakesOneSlot() throws InterruptedException {
        PublishGate gate = new PublishGate(new Pacer(10, clock), null, 0);
        for (int i = 0; i < 5; i++) {
            assertTrue(gate.await());
        }
        assertEquals(4, slotsSinceStart());
    }

    @Test
    void aWindowWithRoomTakesOnePermitPerPublish() throws InterruptedException {
        ConfirmTracker window = new ConfirmTracker(3, metrics);
        PublishGate gate = new PublishGate(new Pacer(0, clock), window, 0);
        for (long s = 1; s <= 3; s++) {
            assertTrue(gate.await(), "room for " + s);
            window.sent(s, clock.nanoTime());
        }
        assertFalse(gate.await(), "the window is full");
        window.ack(3, true);
        assertTrue(gate.await());
        assertEquals(start, clock.nanoTime(), "unpaced: no wait but the window's");
    }
}
