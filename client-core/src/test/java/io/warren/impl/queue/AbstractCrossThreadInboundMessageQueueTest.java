package io.warren.impl.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * The cases only a cross-thread flavour has: a signal that travels between the consumer's and the producer's
 * threads can be overtaken by what happens meanwhile. (On the same thread a resume is handled at once.)
 */
abstract class AbstractCrossThreadInboundMessageQueueTest extends AbstractInboundMessageQueueTest {

    @Test
    void theProducerStaysPausedWhenTheQueueRefillsBeforeTheResumeArrives() throws Exception {
        TestQueue q = newQueue(4, 8);
        q.pause();
        CountDownLatch resumeSignalQueued = new CountDownLatch(1);
        CountDownLatch producerBlocked = new CountDownLatch(1);
        producer.execute(() -> {
            for (int i = 0; i < 8; i++) {
                q.writeCounting(i);
            }
            producerBlocked.countDown();
            await(resumeSignalQueued);
            // The writable-again task waits behind this one; the queue fills up again meanwhile.
            for (int i = 8; i < 18; i++) {
                q.writeCounting(i);
            }
        });
        await(producerBlocked);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        q.fetch(5); // 3 pending: below 4, a writable-again signal goes to the blocked producer loop
        awaitTrue(() -> q.received.size() == 5 && q.isSuspended(), "5 deliveries");
        resumeSignalQueued.countDown();

        awaitTrue(() -> pending(q) == 13, "13 pending");
        onProducer(() -> {});
        assertEquals(1, q.pauses.get());
        assertEquals(0, q.resumes.get(), "13 pending, over the high-water mark: the producer stays paused");

        q.resume();
        awaitTrue(() -> q.received.size() == 18, "18 deliveries");
        awaitTrue(() -> q.resumes.get() == 1, "the resume");
        assertEquals(ints(0, 18), q.receivedCopy());
        assertEquals(1, q.pauses.get());
    }

    @Test
    void aMessageThatBecomesUnwantedWhileTheDrainAsksAboutItIsDroppedOnTheRecheck() throws Exception {
        TestQueue q = newQueue(4, 8);
        q.pause();
        java.util.concurrent.CountDownLatch asking = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean first = new java.util.concurrent.atomic.AtomicBoolean(true);
        java.util.concurrent.atomic.AtomicBoolean stale = new java.util.concurrent.atomic.AtomicBoolean();
        q.unwanted = v -> {
            if (v == 0 && first.compareAndSet(true, false)) {
                asking.countDown();
                try {
                    answer.await(); // still wanted as asked; the recheck comes before the drain stops
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return false;
            }
            return stale.get() && v < 3;
        };
        writeInts(q, 0, 5);
        assertTrue(asking.await(10, java.util.concurrent.TimeUnit.SECONDS));
        stale.set(true);
        q.recheckUnwanted(); // no drain at rest to wake: the one asking must look again before it stops
        answer.countDown();
        awaitTrue(() -> q.dropped.size() == 3 && q.isSuspended(), "0, 1 and 2 dropped, then a stop");
        assertEquals(java.util.List.of(0, 1, 2), copy(q.dropped));
        assertEquals(2, pending(q));
    }
}
