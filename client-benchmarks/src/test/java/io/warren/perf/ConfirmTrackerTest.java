package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The confirm window: span semantics, multiple and out-of-order acks, nacks, latency samples. */
class ConfirmTrackerTest {

    private final Metrics metrics = new Metrics();

    private void publish(ConfirmTracker tracker, long sequence) throws InterruptedException {
        assertTrue(tracker.acquire(0), "room for " + sequence);
        tracker.sent(sequence, System.nanoTime());
    }

    @Test
    void theWindowHoldsAtMostItsSizeUnconfirmed() throws InterruptedException {
        ConfirmTracker tracker = new ConfirmTracker(3, metrics);
        publish(tracker, 1);
        publish(tracker, 2);
        publish(tracker, 3);
        assertFalse(tracker.acquire(0), "window full");
        assertEquals(1, tracker.ack(1, false));
        publish(tracker, 4);
        assertFalse(tracker.acquire(0));
        assertEquals(3, tracker.ack(4, true));
        assertTrue(tracker.drained());
        assertEquals(4, metrics.counters().confirmed());
        assertEquals(4, metrics.intervalConfirmLatency(null).getTotalCount(), "one latency sample per confirm");
    }

    @Test
    void anOutOfOrderAckHoldsTheWindowUntilTheOldestIsConfirmed() throws InterruptedException {
        ConfirmTracker tracker = new ConfirmTracker(2, metrics);
        publish(tracker, 1);
        publish(tracker, 2);
        assertEquals(1, tracker.ack(2, false));
        assertFalse(tracker.acquire(0), "sequence 1 still out: 3 would share its slot");
        assertEquals(1, tracker.ack(1, false));
        publish(tracker, 3);
        publish(tracker, 4);
        assertEquals(2, tracker.ack(4, true));
        assertTrue(tracker.drained());
        assertEquals(4, metrics.counters().confirmed());
    }

    @Test
    void aMultipleAckSkipsWhatWasConfirmedOneByOne() throws InterruptedException {
        ConfirmTracker tracker = new ConfirmTracker(8, metrics);
        for (long s = 1; s <= 5; s++) {
            publish(tracker, s);
        }
        assertEquals(1, tracker.ack(3, false));
        assertEquals(4, tracker.ack(5, true));
        assertEquals(0, tracker.ack(5, true), "a repeated ack confirms nothing");
        assertEquals(0, tracker.ack(2, false), "nor does an older one");
        assertTrue(tracker.drained());
        assertEquals(5, metrics.counters().confirmed());
    }

    @Test
    void nacksSettleWithoutALatencySample() throws InterruptedException {
        ConfirmTracker tracker = new ConfirmTracker(4, metrics);
        publish(tracker, 1);
        publish(tracker, 2);
        assertEquals(2, tracker.nack(2, true));
        assertTrue(tracker.awaitDrained(0));
        assertEquals(2, metrics.counters().nacked());
        assertEquals(0, metrics.counters().confirmed());
        assertEquals(0, metrics.intervalConfirmLatency(null).getTotalCount());
    }

    @Test
    void aWindowOfOneAlternates() throws InterruptedException {
        ConfirmTracker tracker = new ConfirmTracker(1, metrics);
        for (long s = 1; s <= 100; s++) {
            publish(tracker, s);
            assertFalse(tracker.acquire(0));
            assertEquals(1, tracker.ack(s, s % 2 == 0));
        }
        assertEquals(100, metrics.counters().confirmed());
    }
}
