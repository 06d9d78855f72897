package io.warren.impl.consume;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The application's demand in front of deliveries counted in flight: taken, held for, given back (not over a
 * pause). The race between two releases is played step by step, one of them stopped inside the held queue's poll.
 */
class DemandGateTest {

    /** A delivery as the gate sees it. */
    private static final class Held implements DemandGate.Taker {
        private final String name;
        private int demandEpoch = -1;

        Held(String name) {
            this.name = name;
        }

        @Override
        public void demandEpoch(int epoch) {
            this.demandEpoch = epoch;
        }

        @Override
        public int demandEpoch() {
            return demandEpoch;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    @Test
    void aDeliveryWithoutDemandIsHeldUntilAFetchReleasesIt() {
        DemandGate<Held> gate = new DemandGate<>(1);
        Held d1 = new Held("d1");
        assertTrue(gate.take(new Held("d0")));
        assertFalse(gate.take(d1));
        assertFalse(gate.hold(d1), "no demand: nothing to release");
        assertNull(gate.release());
        gate.add(1);
        assertSame(d1, gate.release());
        assertNull(gate.release());
        assertEquals(0, gate.held());
    }

    @Test
    void unboundedDemandIsNeverTakenFromAndPauseEndsIt() {
        DemandGate<Held> gate = new DemandGate<>(Long.MAX_VALUE);
        assertTrue(gate.take(new Held("d0")));
        gate.add(5); // saturates
        assertTrue(gate.take(new Held("d1")));
        gate.pause();
        Held d2 = new Held("d2");
        assertFalse(gate.take(d2));
        assertFalse(gate.hold(d2));
        assertEquals(1, gate.held());
        assertSame(d2, gate.poll(), "disposal takes it whatever the demand");
    }

    @Test
    void aFetchSaturatesAtUnbounded() {
        DemandGate<Held> gate = new DemandGate<>(2);
        gate.add(Long.MAX_VALUE - 1);
        for (int i = 0; i < 3; i++) {
            assertTrue(gate.take(new Held("d" + i)));
        }
        gate.pause();
        gate.add(1);
        assertTrue(gate.take(new Held("d3")));
        assertFalse(gate.take(new Held("d4")), "bounded again after the pause");
    }

    @Test
    void aUnitGivenBackWithoutAPauseStartsTheNextDelivery() {
        DemandGate<Held> gate = new DemandGate<>(1);
        Held lost = new Held("lost");
        assertTrue(gate.take(lost));
        Held copy = new Held("copy");
        assertFalse(gate.take(copy));
        assertFalse(gate.hold(copy));
        gate.giveBack(lost);
        assertSame(copy, gate.release(), "the lost delivery's unit goes to its copy");
        assertFalse(gate.take(new Held("d2")));
    }

    /**
     * The unit a delivery took is not given back over a pause made since: pause() stops every delivery after it
     * returns until a fetch, and the unit would start one (a delivery lost with its channel on the executor, whose
     * redelivered copy is held).
     */
    @Test
    void aUnitTakenBeforeAPauseIsNotGivenBackAfterIt() {
        DemandGate<Held> gate = new DemandGate<>(1);
        Held lost = new Held("lost");
        assertTrue(gate.take(lost));
        gate.pause();
        gate.giveBack(lost);
        Held copy = new Held("copy");
        assertFalse(gate.take(copy), "paused: no demand");
        assertFalse(gate.hold(copy));
        assertNull(gate.release());

        gate.add(1);
        gate.giveBack(lost); // however late
        assertSame(copy, gate.release(), "the fetch's unit");
        assertFalse(gate.take(new Held("d2")), "and only it");
    }

    @Test
    void aPauseAfterAFetchStillDropsTheUnitTakenBeforeBoth() {
        DemandGate<Held> gate = new DemandGate<>(Long.MAX_VALUE);
        Held lost = new Held("lost");
        assertTrue(gate.take(lost));
        gate.pause();
        gate.add(1);
        gate.giveBack(lost);
        assertTrue(gate.take(new Held("d1")), "the fetch's unit");
        assertFalse(gate.take(new Held("d2")), "the unbounded demand's give-back went with the pause");
    }

    /**
     * Two fetches of 1 with d1 held: T1 takes a unit, T2 takes the other and releases d1, T1 polls nothing;
     * d2 then finds no demand (T1 still has its unit) and is held without a release. T1 gives its unit back and
     * must look again: if it just returned, d2 would stay held with demand 1 until the next fetch.
     */
    @Test
    void aReleaseThatLostItsDeliveryToAnotherLooksAgainForOneHeldMeanwhile() throws Exception {
        Held d1 = new Held("d1");
        Held d2 = new Held("d2");
        CompletableFuture<Held> t1Released = new CompletableFuture<>();
        DemandGate<Held> gate = stoppedRelease(d1, d2, t1Released, g -> {});
        assertSame(d2, t1Released.get(10, TimeUnit.SECONDS));
        assertEquals(0, gate.held());
        assertFalse(gate.take(new Held("d3")), "each fetch's unit went to one delivery");
    }

    /** As above, with a pause before T1 gives its unit back: the unit goes with the pause, d2 stays held. */
    @Test
    void aReleaseThatLostItsDeliveryGivesNoUnitBackOverAPause() throws Exception {
        Held d1 = new Held("d1");
        Held d2 = new Held("d2");
        CompletableFuture<Held> t1Released = new CompletableFuture<>();
        DemandGate<Held> gate = stoppedRelease(d1, d2, t1Released, DemandGate::pause);
        assertNull(t1Released.get(10, TimeUnit.SECONDS));
        assertEquals(1, gate.held());
        assertFalse(gate.take(new Held("d3")), "paused");
        gate.add(1);
        assertSame(d2, gate.release());
    }

    /**
     * Plays the race of the two releases above: T1 is stopped in its poll until T2 has released {@code d1} and
     * {@code d2} is held, then {@code beforeT1Returns} runs on the test thread with the gate and T1 goes on, completing
     * {@code t1Released} with what its release returned.
     */
    private static DemandGate<Held> stoppedRelease(
            Held d1, Held d2, CompletableFuture<Held> t1Released, Consumer<DemandGate<Held>> beforeT1Returns)
            throws Exception {
        CountDownLatch t1Polling = new CountDownLatch(1);
        CountDownLatch d1Released = new CountDownLatch(1);
        CountDownLatch t1PolledNothing = new CountDownLatch(1);
        CountDownLatch d2Held = new CountDownLatch(1);
        Thread[] t1 = new Thread[1];
        ConcurrentLinkedQueue<Held> held = new ConcurrentLinkedQueue<>() {
            private boolean stopped;

            @Override
            public Held poll() {
                if (Thread.currentThread() != t1[0] || stopped) {
                    return super.poll();
                }
                stopped = true; // T1's first poll only
                t1Polling.countDown();
                await(d1Released);
                Held d = super.poll();
                t1PolledNothing.countDown();
                await(d2Held);
                return d;
            }
        };
        DemandGate<Held> gate = new DemandGate<>(0, held);
        gate.hold(d1);
        t1[0] = new Thread(() -> {
            gate.add(1);
            t1Released.complete(gate.release());
        });
        t1[0].start();
        assertTrue(t1Polling.await(10, TimeUnit.SECONDS));
        gate.add(1);
        assertSame(d1, gate.release());
        d1Released.countDown();
        assertTrue(t1PolledNothing.await(10, TimeUnit.SECONDS));
        assertFalse(gate.take(new Held("d0")), "T1 holds the demand");
        assertFalse(gate.hold(d2), "no demand in sight: d2's holder leaves the release to T1");
        beforeT1Returns.accept(gate);
        d2Held.countDown();
        t1[0].join(10_000);
        assertFalse(t1[0].isAlive(), "T1 returned");
        return gate;
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
