package io.warren.impl.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.PublishOutcome;
import io.warren.impl.metrics.MetricsCollector;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Confirm latencies as the tracker records them: one per acked publish, none for nacks or untimed publishes. */
class ConfirmTrackerTest {

    /** Keeps what the tracker records. */
    private static final class Latencies implements MetricsCollector {
        final List<Long> nanos = new ArrayList<>();

        @Override
        public void confirmLatency(long n) {
            nanos.add(n);
        }
    }

    @Test
    void aMultipleAckRecordsEachPublishItConfirmsAndANackRecordsNothing() {
        Latencies metrics = new Latencies();
        ConfirmTracker tracker = new ConfirmTracker(1, 100, metrics);
        long sent = System.nanoTime() - 5_000_000; // written 5 ms ago
        List<CompletableFuture<PublishOutcome>> f = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            f.add(new CompletableFuture<>());
            tracker.add(f.get(i), false, sent);
        }
        tracker.ack(2, true);
        tracker.nack(3, false);
        tracker.ack(4, false);
        assertEquals(3, metrics.nanos.size(), "publishes 1, 2 and 4: " + metrics.nanos);
        for (long n : metrics.nanos) {
            assertTrue(n >= 5_000_000, "latency from the write: " + n);
        }
        assertTrue(f.get(2).isCompletedExceptionally());
    }

    @Test
    void aPublishWrittenBeforeTimingStartedRecordsNothing() {
        Latencies metrics = new Latencies();
        ConfirmTracker tracker = new ConfirmTracker(1, 100, metrics);
        tracker.add(null, false, 0); // written before a recorder was added
        tracker.add(null, false, System.nanoTime());
        tracker.ack(2, true);
        assertEquals(1, metrics.nanos.size(), "only the timed publish: " + metrics.nanos);
    }

    @Test
    void stampsSurviveTheRingGrowing() {
        Latencies metrics = new Latencies();
        ConfirmTracker tracker = new ConfirmTracker(1, 8192, metrics);
        int count = 3000; // past the first ring's 1024 slots, twice
        long sent = System.nanoTime();
        for (int i = 0; i < count; i++) {
            tracker.add(null, false, sent + i);
        }
        tracker.ack(count, true);
        assertEquals(count, metrics.nanos.size());
        // the later a publish was written, the shorter its latency: each kept its own stamp through the growth
        for (int i = 1; i < count; i++) {
            assertEquals(metrics.nanos.get(i - 1) - 1, (long) metrics.nanos.get(i));
        }
    }

    @Test
    void eachPublishIsCountedBeforeItsFutureCompletes() {
        int[] counted = new int[2]; // confirmed, nacked
        MetricsCollector metrics = new MetricsCollector() {
            @Override
            public void publishesConfirmed(int count) {
                counted[0] += count;
            }

            @Override
            public void publishesNacked(int count) {
                counted[1] += count;
            }
        };
        ConfirmTracker tracker = new ConfirmTracker(1, 100, metrics);
        List<String> seen = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            CompletableFuture<PublishOutcome> f = new CompletableFuture<>();
            // what a caller woken by the future reads: the metrics must already include its publish
            f.whenComplete((o, e) -> seen.add(counted[0] + "/" + counted[1]));
            tracker.add(f, false, 0);
        }
        tracker.ack(2, true);
        tracker.nack(3, false);
        assertEquals(List.of("1/0", "2/0", "2/1"), seen);
    }
    /**
     * Callers' records and the loop's own publishes share one numbering: an ack names either, the window counts both,
     * and a record taken after failAll (a caller that wrote while the channel was lost) fails and is counted alone.
     * failAll counts what it fails itself.
     */
    @Test
    void callersRecordsJoinTheLoopsNumberingAndFailLateAfterFailAll() {
        int[] unconfirmed = new int[1];
        MetricsCollector metrics = new MetricsCollector() {
            @Override
            public void publishesUnconfirmed(int count) {
                unconfirmed[0] += count;
            }
        };
        ConfirmTracker tracker = new ConfirmTracker(1, 4, metrics);
        List<CompletableFuture<PublishOutcome>> f = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            f.add(new CompletableFuture<>());
        }
        assertEquals(1, tracker.callerSequence());
        tracker.recordCaller(1, f.get(0), true, 0);
        assertEquals(2, tracker.nextSequenceNumber(), "the loop numbers after the caller's record");
        assertEquals(2, tracker.add(f.get(1), false, 0));
        tracker.recordCaller(tracker.callerSequence(), f.get(2), false, 0);
        tracker.recordCaller(tracker.callerSequence(), null, false, 0);
        assertEquals(0, tracker.callerSequence(), "the window of 4 is full: the next one is queued and held");
        assertTrue(tracker.windowFullForCallers());
        tracker.ack(3, true); // names the callers' third before the loop has taken it
        assertSame(PublishOutcome.CONFIRMED, f.get(0).join());
        assertSame(PublishOutcome.CONFIRMED, f.get(1).join());
        assertSame(PublishOutcome.CONFIRMED, f.get(2).join());
        assertEquals(1, tracker.outstanding());
        assertEquals(5, tracker.callerSequence(), "room again");
        tracker.failAll(new IllegalStateException("lost"));
        tracker.recordCaller(5, f.get(4), false, 0); // a caller that held the token across the loss
        assertFalse(f.get(4).isDone());
        tracker.takeCallers();
        assertTrue(f.get(4).isCompletedExceptionally());
        assertEquals(2, unconfirmed[0], "the outstanding one counted by failAll, the late one alone");
        assertEquals(0, tracker.outstanding());
    }

    /**
     * A caller's publish the socket refused (nothing written) is its task's to settle, whichever comes first on the
     * loop, the task or the close; one the close failed before it was marked stays failed, and the task is told so.
     */
    @Test
    void aRefusedPublishIsLeftToItsTaskWhicheverComesFirst() {
        ConfirmTracker tracker = new ConfirmTracker(1, 100, MetricsCollector.NOOP);
        CompletableFuture<PublishOutcome> written = new CompletableFuture<>();
        CompletableFuture<PublishOutcome> refusedThenClosed = new CompletableFuture<>();
        CompletableFuture<PublishOutcome> refusedTaskFirst = new CompletableFuture<>();
        tracker.recordCaller(tracker.callerSequence(), written, false, 0);
        tracker.recordCaller(tracker.callerSequence(), refusedThenClosed, false, 0);
        tracker.refusedByCaller(2);
        tracker.recordCaller(tracker.callerSequence(), refusedTaskFirst, false, 0);
        tracker.refusedByCaller(3);
        assertTrue(tracker.forgetRefused(3), "its task came first: taken out, its outcome the task's");
        assertEquals(2, tracker.outstanding(), "publishes 1 and 2");
        tracker.ack(1, false);
        assertEquals(PublishOutcome.CONFIRMED, written.join());
        assertEquals(1, tracker.outstanding());

        tracker.failAll(new IllegalStateException("lost"));
        assertFalse(refusedThenClosed.isDone(), "the refused one is left to its task");
        assertTrue(tracker.forgetRefused(2));
        assertFalse(refusedTaskFirst.isDone());

        ConfirmTracker closedFirst = new ConfirmTracker(1, 100, MetricsCollector.NOOP);
        CompletableFuture<PublishOutcome> failed = new CompletableFuture<>();
        closedFirst.recordCaller(closedFirst.callerSequence(), failed, false, 0);
        assertEquals(1, closedFirst.outstanding(), "taken by the loop");
        closedFirst.failAll(new IllegalStateException("lost")); // before its caller marked it
        closedFirst.refusedByCaller(1);
        assertFalse(closedFirst.forgetRefused(1), "settled by the close already");
        assertTrue(failed.isCompletedExceptionally());

        ConfirmTracker takenLate = new ConfirmTracker(1, 100, MetricsCollector.NOOP);
        takenLate.failAll(new IllegalStateException("lost"));
        CompletableFuture<PublishOutcome> late = new CompletableFuture<>();
        takenLate.recordCaller(takenLate.callerSequence(), late, false, 0); // a caller that held the token across it
        takenLate.refusedByCaller(1);
        assertTrue(takenLate.forgetRefused(1), "taken after the close, and refused: its task's");
        assertFalse(late.isDone());
    }
}
