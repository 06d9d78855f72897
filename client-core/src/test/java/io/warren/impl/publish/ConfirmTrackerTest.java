package io.warren.impl.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
