package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The offset a stream consumer resumes at, and the typed quorum-queue arguments beside {@code quorum()}. Broker
 * behaviour (the resume without gap or repeat across a reconnect) is shown against a cluster by StreamIT.
 */
class StreamOffsetTrackerTest {

    @Test
    void consumesFromItsStartUntilSomethingIsProcessedThenFromTheNextOffset() {
        StreamOffsetTracker t = StreamOffsetTracker.startingAt("first");
        assertEquals("first", t.consumeOffset());
        assertEquals(-1, t.lastProcessed());
        t.processed(41);
        assertEquals(41, t.lastProcessed());
        assertEquals(42L, t.consumeOffset());
        Instant at = Instant.parse("2026-11-25T22:00:00Z");
        assertSame(at, StreamOffsetTracker.startingAt(at).consumeOffset());
        assertEquals(7L, StreamOffsetTracker.startingAt(7).consumeOffset());
    }

    @Test
    void eachBasicConsumeReadsTheTrackerThroughTheOptionsArguments() {
        StreamOffsetTracker t = StreamOffsetTracker.startingAt("next");
        ConsumeOptions options =
                new ConsumeOptions().streamOffset("first").priority(3).streamOffset(t);
        assertEquals(Map.of("x-priority", 3, "x-stream-offset", "next"), options.arguments());
        t.processed(9);
        // what recovery's re-consume sends
        assertEquals(Map.of("x-priority", 3, "x-stream-offset", 10L), options.arguments());
        assertSame(t, new ConsumeOptions(options).streamOffsets());
        assertNull(new ConsumeOptions().streamOffset(5).streamOffsets());
    }

    @Test
    void aRepeatRecordedAfterAReconsumeDoesNotMoveThePositionBack() {
        StreamOffsetTracker t = StreamOffsetTracker.startingAt("first");
        t.processed(41);
        t.processed(7); // a delivery of the lost connection, handled after the re-consume
        assertEquals(41, t.lastProcessed(), "the position never moves back");
        assertEquals(42L, t.consumeOffset(), "a later re-consume still asks for the message after 41");
    }

    @Test
    void theLastStreamOffsetGivenWinsBetweenATrackerAndAFixedOffset() {
        StreamOffsetTracker t = StreamOffsetTracker.startingAt("next");
        assertEquals(
                "first",
                new ConsumeOptions()
                        .streamOffset(t)
                        .streamOffset("first")
                        .arguments()
                        .get("x-stream-offset"));
        assertNull(new ConsumeOptions().streamOffset(t).streamOffset(5).streamOffsets());
        assertEquals(
                "next",
                new ConsumeOptions()
                        .streamOffset("first")
                        .streamOffset(t)
                        .arguments()
                        .get("x-stream-offset"));
    }

    @Test
    void badOffsetsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> StreamOffsetTracker.startingAt(-1));
        StreamOffsetTracker t = StreamOffsetTracker.startingAt("first");
        assertThrows(IllegalArgumentException.class, () -> t.processed(-2));
        assertEquals(-1, t.lastProcessed());
        assertThrows(NullPointerException.class, () -> new ConsumeOptions().streamOffset((StreamOffsetTracker) null));
    }

    @Test
    void singleActiveConsumerAndDeliveryLimitAreTypedQueueArguments() {
        QueueSpec d = QueueSpec.named("jobs").quorum().singleActiveConsumer().deliveryLimit(5);
        assertEquals(
                Map.of("x-queue-type", "quorum", "x-single-active-consumer", true, "x-delivery-limit", 5),
                d.arguments());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> QueueSpec.named("q").deliveryLimit(-1));
        assertEquals("deliveryLimit must not be negative: -1", e.getMessage());
        assertFalse(QueueSpec.named("q").deliveryLimit(0).arguments().isEmpty());
    }
}
