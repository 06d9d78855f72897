package io.warren.impl.publish;

import io.netty.util.concurrent.EventExecutor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Which threads waiting in {@link Publisher#whenWritable} a round of {@link PublishFlow}'s telling wakes. A thread
 * woken only to find the connection unwritable again, because another publisher's message took the room first, costs
 * two context switches and a task on the loop for nothing: with 16 threads publishing 1 MiB bodies on one connection
 * that was 2.7 waits per message when every round woke everyone.
 *
 * <p>So a round ({@link #beginRound} .. {@link #endRound}) wakes the first publisher with waiting threads, and the next
 * ones while the room under the high-water mark holds what they are expected to publish ({@link #mayWake}): small
 * publishes are all woken at once, large ones a publisher at a time. Those left asleep are woken by later rounds, or
 * by the check {@value #CHECK_NANOS} ns after a round left some asleep: if rounds came since, the publishers are
 * moving and it looks again later; if none came (the woken thread did not publish), the next round wakes everyone.
 * Unless the connection is unwritable when the check looks: then no woken thread could publish, and what everyone
 * waits for is the socket (or the broker's unblock). The check ends there; the writable round that comes with the
 * change (every turn to writable is told, as the threads that were never deferred rely on) wakes the next in turn and
 * arms a check of its own. Waking everyone there sent most of 16 threads publishing 1 MiB bodies back to wait after
 * each pause in the broker's reading.
 *
 * <p>Event loop only. One per {@link PublishFlow}; itself the check's task.
 */
public final class WakeTurns implements Runnable {

    /** How long after a round left threads asleep the check looks whether any round came since. */
    public static final long CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final EventExecutor loop;
    /** Whether the connection is writable now (the flow's view, as a round's). */
    private final BooleanSupplier writable;
    /** Tells the publishers again: a round, which {@link #wakeAll} makes wake everyone. */
    private final Runnable retell;

    /** In a round that meters: not between rounds, nor in a round that wakes everyone. */
    private boolean metering;
    /** In a round: the bytes under the high-water mark not yet promised to a woken publisher. */
    private long room;
    /** In a round: publishers whose waiting threads were woken. */
    private int woken;
    /** The last writable round left waiting threads asleep (unwritable rounds wake nobody and leave it as it is). */
    private boolean deferred;
    /** The next round wakes everyone: the check found no round since the last one left some asleep. */
    private boolean wakeAll;

    private long rounds;
    private long roundsAtCheck;
    private boolean checkScheduled;

    WakeTurns(EventExecutor loop, BooleanSupplier writable, Runnable retell) {
        this.loop = loop;
        this.writable = writable;
        this.retell = retell;
    }

    /** A round of telling starts; {@code room}: the bytes under the high-water mark when it does. */
    void beginRound(boolean writable, long room) {
        assert loop.inEventLoop() : "wake turns off the event loop";
        rounds++;
        metering = !wakeAll;
        if (writable) {
            wakeAll = false;
            deferred = false;
        }
        this.room = room;
        woken = 0;
    }

    /**
     * Whether a publisher told of a change wakes its threads waiting for writability, expected to publish
     * {@code expectedBytes} (0 when not known: always woken). Outside a round, always.
     */
    boolean mayWake(long expectedBytes) {
        assert loop.inEventLoop() : "wake turns off the event loop";
        if (!metering) {
            return true;
        }
        if (expectedBytes <= 0 || woken == 0 || expectedBytes <= room) {
            woken++;
            room -= expectedBytes;
            return true;
        }
        deferred = true;
        return false;
    }

    /** Publishers whose threads this round has woken so far. */
    int woken() {
        return woken;
    }

    /** The round is over: the check is scheduled if it left threads asleep. */
    void endRound() {
        metering = false;
        if (deferred && !checkScheduled) {
            scheduleCheck();
        }
    }

    /** The check. */
    @Override
    public void run() {
        checkScheduled = false;
        if (!deferred) {
            return; // the last writable round woke everyone it found waiting
        }
        if (rounds != roundsAtCheck) {
            scheduleCheck();
            return;
        }
        if (!writable.getAsBoolean()) {
            return; // waiting for the socket, not for the woken thread: the round that ends it arms a new check
        }
        wakeAll = true;
        retell.run();
    }

    private void scheduleCheck() {
        roundsAtCheck = rounds;
        try {
            loop.schedule(this, CHECK_NANOS, TimeUnit.NANOSECONDS);
            checkScheduled = true;
        } catch (RejectedExecutionException shutDown) {
            // the loop is ending: the connection's end fails every waiter
        }
    }
}
