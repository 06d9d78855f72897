package io.warren.impl.queue;

import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import org.jctools.queues.SpscUnboundedArrayQueue;

/**
 * {@link HandoffQueue} for one producer thread and a consumer that drains on other threads: a
 * {@code volatile} counter updated through a field updater and a JCTools
 * {@link SpscUnboundedArrayQueue}.
 *
 * <p>The JCTools queue reuses its ring for as long as the backlog fits in it, and links a freshly
 * allocated chunk whenever the backlog outgrows it; chunks are not recycled. The ring is therefore sized
 * for the backlog a producer that honours {@link HandoffQueue#UNWRITABLE} leaves: the high-water mark
 * plus the tail of the read batch that crossed it, hence twice the mark. Steady state then allocates
 * nothing per message; a backlog beyond that (no back-pressure, or a producer that keeps writing) costs
 * one chunk per ring's worth of overflow.
 *
 * <p>The JCTools queue is single-consumer in the sense of one consumer <em>at a time</em>: its
 * consumer-side fields are plain, which is safe because successive drains are ordered by the
 * happens-before edges of the counter's updates and of the executor hand-off (see {@link HandoffQueue}).
 *
 * <p>Not final: a test overrides {@link #addWip} to hand the ownership to another thread between an owner's last
 * decrement and the end of its drain.
 */
non-sealed class CrossThreadHandoffQueue<M> extends HandoffQueue<M> {

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicLongFieldUpdater<CrossThreadHandoffQueue<?>> WIP =
            (AtomicLongFieldUpdater) AtomicLongFieldUpdater.newUpdater(CrossThreadHandoffQueue.class, "wip");

    /** Smallest and largest ring: a mark of 2048 or more (or none) gets 4096 slots, 16 KiB of references. */
    private static final int MIN_RING = 32;

    private static final int MAX_RING = 4096;

    // any thread (volatile): producer increments, the owning consumer decrements
    private volatile long wip;

    CrossThreadHandoffQueue(int lowWaterMark, int highWaterMark) {
        super(new SpscUnboundedArrayQueue<>(ringSize(lowWaterMark, highWaterMark)), lowWaterMark, highWaterMark);
    }

    static int ringSize(int lowWaterMark, int highWaterMark) {
        checkWaterMarks(lowWaterMark, highWaterMark);
        if (highWaterMark >= MAX_RING / 2) {
            return MAX_RING;
        }
        // Twice the next power of two: the high-water mark plus as much again for a read batch's tail.
        return Math.max(MIN_RING, Integer.highestOneBit(highWaterMark - 1) << 2);
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
