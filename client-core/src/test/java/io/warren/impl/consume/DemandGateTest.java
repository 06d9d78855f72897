package io.warren.impl.consume;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The application's demand in front of deliveries counted in flight: taken, held for, given back. The race
 * between two releases is played step by step, one of them stopped inside the held queue's poll.
 */
class DemandGateTest {

    @Test
    void aDeliveryWithoutDemandIsHeldUntilAFetchReleasesIt() {
        DemandGate<String> gate = new DemandGate<>(1);
        assertTrue(gate.take());
        assertFalse(gate.take());
        assertFalse(gate.hold("d1"), "no demand: nothing to release");
        assertNull(gate.release());
        gate.add(1);
        assertEquals("d1", gate.release());
        assertNull(gate.release());
        assertEquals(0, gate.held());
    }

    @Test
    void unboundedDemandIsNeverTakenFromAndPauseEndsIt() {
        DemandGate<String> gate = new DemandGate<>(Long.MAX_VALUE);
        assertTrue(gate.take());
        gate.add(5); // saturates
        assertTrue(gate.take());
        gate.pause();
        assertFalse(gate.take());
        assertFalse(gate.hold("d1"));
        assertEquals(1, gate.held());
        assertEquals("d1", gate.poll(), "disposal takes it whatever the demand");
    }

    /**
     * Two fetches of 1 with d1 held: T1 takes a unit, T2 takes the other and releases d1, T1 polls nothing;
     * d2 then finds no demand (T1 still has its unit) and is held without a release. T1 gives its unit back and
     * must look again: if it just returned, d2 would stay held with demand 1 until the next fetch.
     */
    @Test
    void aReleaseThatLostItsDeliveryToAnotherLooksAgainForOneHeldMeanwhile() throws Exception {
        CountDownLatch t1Polling = new CountDownLatch(1);
        CountDownLatch d1Released = new CountDownLatch(1);
        CountDownLatch t1PolledNothing = new CountDownLatch(1);
        CountDownLatch d2Held = new CountDownLatch(1);
        Thread[] t1 = new Thread[1];
        ConcurrentLinkedQueue<String> held = new ConcurrentLinkedQueue<>() {
            private boolean stopped;

            @Override
            public String poll() {
                if (Thread.currentThread() != t1[0] || stopped) {
                    return super.poll();
                }
                stopped = true; // T1's first poll only
                t1Polling.countDown();
                await(d1Released);
                String d = super.poll();
                t1PolledNothing.countDown();
                await(d2Held);
                return d;
            }
        };
        DemandGate<String> gate = new DemandGate<>(0, held);
        gate.hold("d1");
        CompletableFuture<String> t1Released = new CompletableFuture<>();
        t1[0] = new Thread(() -> {
            gate.add(1);
            t1Released.complete(gate.release());
        });
        t1[0].start();
        assertTrue(t1Polling.await(10, TimeUnit.SECONDS));
        gate.add(1);
        assertEquals("d1", gate.release());
        d1Released.countDown();
        assertTrue(t1PolledNothing.await(10, TimeUnit.SECONDS));
        assertFalse(gate.take(), "T1 holds the demand");
        assertFalse(gate.hold("d2"), "no demand in sight: d2's holder leaves the release to T1");
        d2Held.countDown();
        assertEquals("d2", t1Released.get(10, TimeUnit.SECONDS));
        t1[0].join();
        assertEquals(0, gate.held());
        assertFalse(gate.take(), "each fetch's unit went to one delivery");
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the test's other thread did not get there");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
