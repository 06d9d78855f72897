package io.warren.impl.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
