package io.warren.impl.queue;

import static io.warren.impl.queue.HandoffQueue.DRAIN_REQUIRED;
import static io.warren.impl.queue.HandoffQueue.UNWRITABLE;
import static io.warren.impl.queue.HandoffQueue.WRITABLE_AGAIN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The engine's bits, driven from one thread (the engine calls no executor, so both of its sides can be
 * played by the test): ownership, parking, writability transitions and their alternation.
 */
class HandoffQueueTest {

    enum Flavour {
        SAME_THREAD(HandoffQueue::sameThread),
        CROSS_THREAD(HandoffQueue::crossThread);

        private final BiFunction<Integer, Integer, HandoffQueue<Integer>> factory;

        Flavour(BiFunction<Integer, Integer, HandoffQueue<Integer>> factory) {
            this.factory = factory;
        }

        HandoffQueue<Integer> create(int low, int high) {
            return factory.apply(low, high);
        }
    }

    /** Accepts up to {@code budget} messages, recording them, then refuses. */
    private static final class Budget implements Predicate<Integer> {
        final List<Integer> accepted = new ArrayList<>();
        long budget;

        Budget(long budget) {
            this.budget = budget;
        }

        @Override
        public boolean test(Integer message) {
            if (budget == 0) {
                return false;
            }
            budget--;
            accepted.add(message);
            return true;
        }
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void onlyTheAddThatLeavesIdleRequiresADrain(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(4, 8);
        assertEquals(DRAIN_REQUIRED, queue.add(0));
        assertEquals(0, queue.add(1));
        assertEquals(0, queue.add(2));
        assertEquals(3, queue.pending());

        Budget all = new Budget(Long.MAX_VALUE);
        assertEquals(0, queue.drain(all));
        assertEquals(List.of(0, 1, 2), all.accepted);
        assertEquals(0, queue.pending());

        assertEquals(DRAIN_REQUIRED, queue.add(3), "idle again: the next add takes the ownership");
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void aRefusedMessageIsParkedAndOfferedFirst(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(4, 8);
        for (int i = 0; i < 5; i++) {
            queue.add(i);
        }
        Budget two = new Budget(2);
        assertEquals(DRAIN_REQUIRED, queue.drain(two), "refused: the consumer keeps the ownership");
        assertEquals(List.of(0, 1), two.accepted);
        assertEquals(3, queue.pending(), "the parked message is still pending");

        Budget none = new Budget(0);
        assertEquals(DRAIN_REQUIRED, queue.drain(none));
        assertEquals(0, queue.add(5), "not idle: no second owner");

        Budget rest = new Budget(Long.MAX_VALUE);
        assertEquals(0, queue.drain(rest));
        assertEquals(List.of(2, 3, 4, 5), rest.accepted, "the parked message comes first, order is kept");
        assertEquals(0, queue.pending());
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void unwritableOnceWhenPendingReachesTheHighWaterMark(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(2, 4);
        List<Integer> unwritableAt = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            if (HandoffQueue.unwritable(queue.add(i))) {
                unwritableAt.add(i);
            }
        }
        assertEquals(List.of(3), unwritableAt, "the fourth message reaches the high-water mark");
        assertEquals(HandoffQueue.STATE_UNWRITABLE, queue.writabilityState());
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void writableAgainOnceWhenPendingFallsBelowTheLowWaterMark(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(3, 6);
        for (int i = 0; i < 10; i++) {
            queue.add(i);
        }
        assertEquals(DRAIN_REQUIRED, queue.drain(new Budget(7)), "3 pending: not below 3 yet");
        assertEquals(DRAIN_REQUIRED | WRITABLE_AGAIN, queue.drain(new Budget(1)), "2 pending: below 3");
        assertEquals(HandoffQueue.STATE_RESUMING, queue.writabilityState());
        assertEquals(0, queue.drain(new Budget(Long.MAX_VALUE)), "signalled once only");
        assertTrue(queue.acknowledgeWritable());
        assertEquals(HandoffQueue.STATE_WRITABLE, queue.writabilityState());
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void noUnwritableSignalWhileWritableAgainTravels(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(2, 4);
        int bits = 0;
        for (int i = 0; i < 4; i++) {
            bits |= queue.add(i);
        }
        assertTrue(HandoffQueue.unwritable(bits));
        assertEquals(WRITABLE_AGAIN, queue.drain(new Budget(Long.MAX_VALUE)));

        // The producer has not acknowledged yet and fills the queue past the high-water mark again.
        bits = 0;
        for (int i = 4; i < 10; i++) {
            bits |= queue.add(i);
        }
        assertFalse(HandoffQueue.unwritable(bits), "the producer is still paused: no second pause");
        assertFalse(queue.acknowledgeWritable(), "6 pending, high-water mark 4: stay paused");
        assertEquals(HandoffQueue.STATE_UNWRITABLE, queue.writabilityState());

        assertEquals(WRITABLE_AGAIN, queue.drain(new Budget(Long.MAX_VALUE)), "the next resume comes on drain");
        assertTrue(queue.acknowledgeWritable());
        bits = 0;
        for (int i = 10; i < 14; i++) {
            bits |= queue.add(i);
        }
        assertTrue(HandoffQueue.unwritable(bits), "writable again: the next high-water crossing pauses");
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void highWaterMarkOfOnePausesOnTheFirstMessage(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(1, 1);
        assertEquals(DRAIN_REQUIRED | UNWRITABLE, queue.add(0));
        assertEquals(WRITABLE_AGAIN, queue.drain(new Budget(Long.MAX_VALUE)));
        assertTrue(queue.acknowledgeWritable());
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void clearDisposesTheParkedMessageAndTheRest(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(2, 4);
        for (int i = 0; i < 6; i++) {
            queue.add(i);
        }
        assertEquals(DRAIN_REQUIRED, queue.drain(new Budget(1)));
        List<Integer> disposed = new ArrayList<>();
        assertEquals(WRITABLE_AGAIN, queue.clear(disposed::add));
        assertEquals(List.of(1, 2, 3, 4, 5), disposed);
        assertEquals(0, queue.pending());
        assertEquals(DRAIN_REQUIRED, queue.add(6), "cleared means idle");
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void acknowledgeWithoutSignalIsAnError(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(2, 4);
        assertThrows(IllegalStateException.class, queue::acknowledgeWritable);
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void nullIsRefusedAndNothingIsCounted(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(2, 4);
        assertThrows(NullPointerException.class, () -> queue.add(null));
        assertEquals(0, queue.pending());
        assertEquals(DRAIN_REQUIRED, queue.add(1));
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void drainsManyRoundsAcrossChunks(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(8, 16);
        Budget all = new Budget(Long.MAX_VALUE);
        int next = 0;
        for (int round = 0; round < 50; round++) {
            for (int i = 0; i < 700; i++) {
                queue.add(next++);
            }
            queue.drain(new Budget(650));
            queue.drain(all);
        }
        assertEquals(0, queue.pending());
        assertEquals(50 * 700 - 50 * 650, all.accepted.size());
    }

    @ParameterizedTest
    @EnumSource(Flavour.class)
    void waitingLeavesOutTheMessageInHand(Flavour flavour) {
        HandoffQueue<Integer> queue = flavour.create(4, 8);
        for (int i = 0; i < 5; i++) {
            queue.add(i);
        }
        List<Long> waiting = new ArrayList<>();
        queue.drain(message -> waiting.add(queue.waiting()));
        assertEquals(List.of(4L, 3L, 2L, 1L, 0L), waiting);
        assertEquals(0, queue.waiting());
    }

    /**
     * An owner that brought the count to 0 has given up the ownership before it resets its 'taken' count; the next
     * owner, on another thread, may by then have taken as many messages as it had. The reset must leave the next
     * owner's count alone, or waiting() counts the messages in its hands as waiting.
     */
    @Test
    void theEndOfARoundLeavesTheNextOwnersTakenCountAlone() throws Exception {
        ExecutorService nextOwnerThread = Executors.newSingleThreadExecutor();
        CountDownLatch holdingTheThird = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        List<Future<Integer>> nextOwner = new ArrayList<>();
        List<Integer> nextAccepted = new ArrayList<>();
        HandoffQueue<Integer> queue = new CrossThreadHandoffQueue<>(4, 8) {
            boolean handedOver;

            @Override
            long addWip(long delta) {
                long word = super.addWip(delta);
                if ((word & COUNT_MASK) == 0 && !handedOver) {
                    // The first owner has just given up the ownership: the producer takes it at once and hands
                    // it to a drain on another thread, which takes 3 messages, as many as the first round did,
                    // and holds the third. Only then does the first owner go on.
                    handedOver = true;
                    for (int i = 3; i < 8; i++) {
                        assertEquals(i == 3 ? DRAIN_REQUIRED : 0, add(i));
                    }
                    nextOwner.add(nextOwnerThread.submit(() -> drain(message -> {
                        nextAccepted.add(message);
                        if (nextAccepted.size() == 3) {
                            holdingTheThird.countDown();
                            await(letGo);
                        }
                        return true;
                    })));
                    await(holdingTheThird);
                }
                return word;
            }
        };
        try {
            for (int i = 0; i < 3; i++) {
                queue.add(i);
            }
            Budget first = new Budget(Long.MAX_VALUE);
            assertEquals(0, queue.drain(first));
            assertEquals(List.of(0, 1, 2), first.accepted);

            assertEquals(5, queue.pending());
            assertEquals(2, queue.waiting(), "5 pending, 3 of them in the next owner's hands");

            letGo.countDown();
            assertEquals(0, nextOwner.get(0).get(10, TimeUnit.SECONDS));
            assertEquals(List.of(3, 4, 5, 6, 7), nextAccepted);
            assertEquals(0, queue.pending());
            assertEquals(0, queue.waiting());
        } finally {
            letGo.countDown();
            nextOwnerThread.shutdownNow();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS), "latch timed out");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void waterMarksAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> HandoffQueue.sameThread(0, 4));
        assertThrows(IllegalArgumentException.class, () -> HandoffQueue.crossThread(0, 4));
        assertThrows(IllegalArgumentException.class, () -> HandoffQueue.sameThread(5, 4));
        assertThrows(IllegalArgumentException.class, () -> HandoffQueue.crossThread(5, 4));
        HandoffQueue.crossThread(1, Integer.MAX_VALUE);
    }

    @Test
    void crossThreadRingHoldsTwiceTheHighWaterMark() {
        assertEquals(32, CrossThreadHandoffQueue.ringSize(1, 1));
        assertEquals(32, CrossThreadHandoffQueue.ringSize(8, 16));
        assertEquals(512, CrossThreadHandoffQueue.ringSize(128, 256));
        assertEquals(1024, CrossThreadHandoffQueue.ringSize(128, 300));
        assertEquals(4096, CrossThreadHandoffQueue.ringSize(1, 2047));
        assertEquals(4096, CrossThreadHandoffQueue.ringSize(1, 2048));
        assertEquals(4096, CrossThreadHandoffQueue.ringSize(1, Integer.MAX_VALUE));
    }

    @Test
    void bitHelpersReadDistinctBits() {
        assertEquals(3, Integer.bitCount(DRAIN_REQUIRED | UNWRITABLE | WRITABLE_AGAIN));
        assertTrue(HandoffQueue.drainRequired(DRAIN_REQUIRED));
        assertFalse(HandoffQueue.drainRequired(UNWRITABLE | WRITABLE_AGAIN));
        assertTrue(HandoffQueue.unwritable(UNWRITABLE));
        assertFalse(HandoffQueue.unwritable(DRAIN_REQUIRED | WRITABLE_AGAIN));
        assertTrue(HandoffQueue.writableAgain(WRITABLE_AGAIN));
        assertFalse(HandoffQueue.writableAgain(DRAIN_REQUIRED | UNWRITABLE));
    }
}
