package io.warren.perf;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The publisher-confirm window of one channel ({@code --confirm N}) and its confirm latencies, without
 * an allocation per message.
 *
 * <p>Publish sequence numbers start at 1 and grow by one per publish, as AMQP numbers them on a
 * channel in confirm mode. The publish time of sequence {@code s} sits in slot {@code s & mask} of a ring
 * at least as large as the window. The window is a span, not a count: the producer may publish
 * {@code s} only when every sequence below {@code s - window + 1} is confirmed. Acks that come out of order
 * (possible with several queues) therefore hold the window until the oldest one is in, and no two
 * unconfirmed sequences ever share a slot.
 *
 * <p>Threads: one producer thread calls {@link #acquire} and {@link #sent}; one thread at a time (the
 * client's I/O or confirm thread) calls {@link #ack}/{@link #nack}.
 */
public final class ConfirmTracker {

    private static final long EMPTY = Long.MIN_VALUE;

    private final Metrics metrics;
    private final int window;
    private final int mask;
    // slot written by the producer before publishing, cleared by the ack side
    private final AtomicLongArray sentNanos;
    // permits = how far the producer may run ahead of the oldest unconfirmed sequence
    private final Semaphore permits;

    // producer thread writes, ack side reads (volatile): highest sequence registered so far
    private volatile long highestSent;
    // guarded by this (settle): every sequence below it is confirmed
    private long lowestUnconfirmed = 1;

    public ConfirmTracker(int window, Metrics metrics) {
        if (window < 1) {
            throw new IllegalArgumentException("window must be at least 1");
        }
        this.window = window;
        this.metrics = metrics;
        int capacity = Integer.highestOneBit(window - 1) << 1;
        capacity = Math.max(capacity, 1);
        this.mask = capacity - 1;
        this.sentNanos = new AtomicLongArray(capacity);
        for (int i = 0; i < capacity; i++) {
            sentNanos.set(i, EMPTY);
        }
        this.permits = new Semaphore(window);
    }

    /**
     * Waits up to {@code timeoutMillis} for room in the window; returns false when there was none (so a
     * producer can look at its stop flag and try again). Interrupts propagate.
     */
    public boolean acquire(long timeoutMillis) throws InterruptedException {
        return permits.tryAcquire(timeoutMillis, TimeUnit.MILLISECONDS);
    }

    /** Registers publish {@code sequence} (the next one, after a successful {@link #acquire}) sent at {@code nanos}. */
    public void sent(long sequence, long nanos) {
        sentNanos.set(slot(sequence), nanos);
        highestSent = sequence;
    }

    /** basic.ack for {@code tag}; returns how many publishes it confirmed. */
    public int ack(long tag, boolean multiple) {
        int n = settle(tag, multiple, true);
        metrics.confirmed(n);
        return n;
    }

    /** basic.nack for {@code tag}; returns how many publishes it refused. */
    public int nack(long tag, boolean multiple) {
        int n = settle(tag, multiple, false);
        metrics.nacked(n);
        return n;
    }

    /** Whether every registered publish is settled. */
    public boolean drained() {
        return permits.availablePermits() == window;
    }

    /**
     * Waits until every registered publish is settled or the time is up; returns whether it drained.
     * Interrupts propagate.
     */
    public boolean awaitDrained(long timeoutMillis) throws InterruptedException {
        if (!permits.tryAcquire(window, timeoutMillis, TimeUnit.MILLISECONDS)) {
            return false;
        }
        permits.release(window);
        return true;
    }

    // synchronized: a future-based client (Warren) runs the callback of an already-completed publish on the
    // producer thread, concurrently with the event loop settling later ones; unsynchronized, the two lost
    // updates of lowestUnconfirmed (a run once counted 8,999 confirms of 9,000). Uncontended in steady state.
    private synchronized int settle(long tag, boolean multiple, boolean recordLatency) {
        long now = System.nanoTime();
        long lowest = lowestUnconfirmed;
        if (tag < lowest) {
            return 0; // already settled (a duplicate or a multiple ack covering fewer)
        }
        int count = 0;
        if (multiple) {
            for (long s = lowest; s <= tag; s++) {
                count += take(s, now, recordLatency);
            }
            lowest = tag + 1;
        } else {
            count = take(tag, now, recordLatency);
        }
        // skip sequences already settled one by one; stop at the highest sent, past which slots are stale
        long highest = highestSent;
        while (lowest <= highest && sentNanos.get(slot(lowest)) == EMPTY) {
            lowest++;
        }
        int freed = (int) (lowest - lowestUnconfirmed);
        lowestUnconfirmed = lowest;
        if (freed > 0) {
            permits.release(freed);
        }
        return count;
    }

    private int take(long sequence, long now, boolean recordLatency) {
        long sent = sentNanos.getAndSet(slot(sequence), EMPTY);
        if (sent == EMPTY) {
            return 0;
        }
        if (recordLatency) {
            metrics.confirmLatency(now - sent);
        }
        return 1;
    }

    private int slot(long sequence) {
        return (int) (sequence & mask);
    }
}
