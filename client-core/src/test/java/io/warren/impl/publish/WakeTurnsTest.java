package io.warren.impl.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.embedded.EmbeddedChannel;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WakeTurns} alone, on an embedded loop whose time the test moves: which waiting threads a round wakes, and
 * when the check makes the next round wake everyone.
 */
class WakeTurnsTest {

    private static final long MARK = 65536;
    private static final long LARGE = 70_000;

    private EmbeddedChannel loop;
    private WakeTurns turns;
    private int retold;
    private boolean writable = true;

    @BeforeEach
    void setUp() {
        loop = new EmbeddedChannel();
        loop.freezeTime();
        turns = new WakeTurns(loop.eventLoop(), () -> writable, () -> retold++);
    }

    @AfterEach
    void tearDown() {
        loop.finishAndReleaseAll();
    }

    private void afterCheck() {
        loop.advanceTimeBy(WakeTurns.CHECK_NANOS, TimeUnit.NANOSECONDS);
        loop.runScheduledPendingTasks();
    }

    /**
     * A writable round that wakes one large publisher and leaves the next asleep, then an unwritable one: the woken one
     * published, and the socket takes nothing for a while.
     */
    private void wakeOneThenStallTheSocket() {
        turns.beginRound(true, MARK);
        assertTrue(turns.mayWake(LARGE));
        assertFalse(turns.mayWake(LARGE), "left asleep");
        turns.endRound();
        writable = false;
        turns.beginRound(false, MARK - 2 * LARGE);
        turns.endRound();
    }

    @Test
    void whenNobodyPublishesAfterARoundTheCheckMakesTheNextRoundWakeEveryone() {
        turns.beginRound(true, MARK);
        assertTrue(turns.mayWake(LARGE), "the first is always woken");
        assertFalse(turns.mayWake(LARGE), "the next waits its turn");
        turns.endRound();
        assertEquals(0, retold);

        afterCheck();
        assertEquals(1, retold, "no round since, the connection writable: told again");
        turns.beginRound(true, MARK);
        assertTrue(turns.mayWake(LARGE));
        assertTrue(turns.mayWake(LARGE), "that round wakes everyone");
        turns.endRound();
    }

    @Test
    void checksWhileTheConnectionIsUnwritableLeaveTheNextWritableRoundMetered() {
        wakeOneThenStallTheSocket();
        for (int i = 0; i < 30; i++) {
            afterCheck();
        }
        assertEquals(0, retold, "waiting for the socket, not for a thread");

        writable = true;

        turns.beginRound(true, MARK);
        assertTrue(turns.mayWake(LARGE), "the next in turn");
        assertFalse(turns.mayWake(LARGE), "not everyone");
        turns.endRound();
    }

    @Test
    void aWritableRoundAfterAnUnwritableStretchArmsItsOwnCheckAMillisecondLater() {
        wakeOneThenStallTheSocket();
        afterCheck();
        afterCheck();
        assertEquals(0, retold);
        assertEquals(-1, loop.runScheduledPendingTasks(), "no check left while the socket takes nothing");

        writable = true; // the round that tells of it wakes one and leaves one asleep again
        turns.beginRound(true, MARK);
        assertTrue(turns.mayWake(LARGE));
        assertFalse(turns.mayWake(LARGE));
        turns.endRound();
        afterCheck();
        assertEquals(1, retold, "the woken one did not publish: a millisecond later everyone is told");
    }
}
