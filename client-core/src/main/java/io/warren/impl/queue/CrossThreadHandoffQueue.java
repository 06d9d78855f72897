package io.warren.impl.queue;

import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import org.jctools.queues.SpscUnboundedArrayQueue;

/**
 * {@link HandoffQueue} for one producer thread and a consumer that drains on other threads: a
 * {@code volatile} counter updated through a field updater and a JCTools
 * {@link SpscUnboundedArrayQueue}. The queue's ring is reused while the consumer keeps up; a new chunk
 * is linked only when the backlog outgrows it, so steady state allocates nothing per message.
 *
 * <p>The JCTools queue is single-consumer in the sense of one consumer <em>at a time</em>: its
 * consumer-side fields are plain, which is safe because successive drains are ordered by the
 * happens-before edges of the counter's updates and of the executor hand-off (see {@link HandoffQueue}).
 */
final class CrossThreadHandoffQueue<M> extends HandoffQueue<M> {

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicLongFieldUpdater<CrossThreadHandoffQueue<?>> WIP =
            (AtomicLongFieldUpdater) AtomicLongFieldUpdater.newUpdater(CrossThreadHandoffQueue.class, "wip");

    /** Smallest and largest ring: small queues stay small, a deep backlog grows in 1024-slot chunks. */
    private static final int MIN_CHUNK = 32;
    private static final int MAX_CHUNK = 1024;

    // any thread (volatile): producer increments, the owning consumer decrements
    private volatile long wip;

    CrossThreadHandoffQueue(int lowWaterMark, int highWaterMark) {
        super(new SpscUnboundedArrayQueue<>(chunkSize(lowWaterMark, highWaterMark)), lowWaterMark, highWaterMark);
    }

    private static int chunkSize(int lowWaterMark, int highWaterMark) {
        checkWaterMarks(lowWaterMark, highWaterMark);
        // The backlog hovers around the high-water mark (plus the tail of a read batch after it).
        if (highWaterMark >= MAX_CHUNK) {
            return MAX_CHUNK;
        }
        return Math.max(MIN_CHUNK, Integer.highestOneBit(highWaterMark - 1) << 1);
    }

    @Override
    long wip() {
        return wip;
    }

    @Override
    long incrementWip() {
        return WIP.incrementAndGet(this);
    }

    @Override
    long addWip(long delta) {
        return WIP.addAndGet(this, delta);
    }

    @Override
    boolean casWip(long expect, long update) {
        return WIP.compareAndSet(this, expect, update);
    }
}
