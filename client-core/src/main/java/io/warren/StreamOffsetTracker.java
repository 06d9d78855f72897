package io.warren;

import io.warren.codec.content.SequenceHeader;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * Where a consumer of a stream queue is: the offset of the last message it processed, read from each delivery's
 * {@code x-stream-offset} header, and the {@code x-stream-offset} to consume from next. Given to
 * {@link ConsumeOptions#streamOffset(StreamOffsetTracker)}, it supplies that argument to every
 * basic.consume of the consumer, the re-consume of automatic recovery included: after a reconnect the consumer
 * resumes at the message after the last one processed, without a gap or a repeat, instead of at its first
 * {@code x-stream-offset} again.
 *
 * <pre>{@code
 * StreamOffsetTracker offsets = StreamOffsetTracker.startingAt("first");
 * channel.consume("events", new ConsumeOptions().prefetch(100).streamOffset(offsets), d -> {
 *     if (!offsets.isRepeat(d)) {
 *         handle(d);
 *         offsets.processed(d); // before the ack: a message acked is never read again
 *     }
 *     d.ack();
 * });
 * }</pre>
 *
 * <p>The offset lives in this object only: to resume after a restart of the application, store
 * {@link #lastProcessed()} and start the next tracker {@link #startingAt(long) at it + 1}. Thread-safe: the
 * consumer's handler records, the connection's event loop reads when it consumes.
 */
public final class StreamOffsetTracker {

    private static final SequenceHeader STREAM_OFFSET = new SequenceHeader("x-stream-offset");

    /** A {@code String} spec, a {@code Long} offset or an {@code Instant}: the first consume's argument. */
    private final Object start;

    private static final AtomicLongFieldUpdater<StreamOffsetTracker> LAST_PROCESSED =
            AtomicLongFieldUpdater.newUpdater(StreamOffsetTracker.class, "lastProcessed");

    // any thread; only ever raised
    private volatile long lastProcessed = -1;

    private StreamOffsetTracker(Object start) {
        this.start = start;
    }

    /** Starts at {@code "first"}, {@code "last"}, {@code "next"} or an interval such as {@code "1h"}. */
    public static StreamOffsetTracker startingAt(String spec) {
        return new StreamOffsetTracker(Objects.requireNonNull(spec, "spec"));
    }

    /** Starts at the absolute offset {@code offset}. */
    public static StreamOffsetTracker startingAt(long offset) {
        if (offset < 0) {
            throw new IllegalArgumentException("stream offset must not be negative: " + offset);
        }
        return new StreamOffsetTracker(offset);
    }

    /** Starts at the first message stored at or after {@code timestamp} (a chunk's, to the second). */
    public static StreamOffsetTracker startingAt(Instant timestamp) {
        return new StreamOffsetTracker(Objects.requireNonNull(timestamp, "timestamp"));
    }

    /**
     * Records {@code delivery} as processed: its {@code x-stream-offset} header (read in place). Call it in the
     * handler, before the ack. Returns the offset.
     *
     * @throws IllegalArgumentException when the delivery has no {@code x-stream-offset} (not from a stream)
     */
    public long processed(Delivery delivery) {
        long offset = STREAM_OFFSET.find(delivery.header(), -1);
        if (offset < 0) {
            throw new IllegalArgumentException("delivery " + delivery.deliveryTag()
                    + " carries no x-stream-offset header: not consumed from a stream queue");
        }
        processed(offset);
        return offset;
    }

    /**
     * Whether {@code delivery} is at or below the last processed offset: a message delivered again after a
     * re-consume (a delivery of the lost connection handled after the re-consume had asked for the next offset).
     * Ack it and skip it.
     */
    public boolean isRepeat(Delivery delivery) {
        long offset = STREAM_OFFSET.find(delivery.header(), -1);
        return offset >= 0 && offset <= lastProcessed;
    }

    /**
     * Records the message at {@code offset} as processed. An offset at or below the last one processed (a repeat
     * after a re-consume) changes nothing: the position never moves back, so a repeat is never handled twice and a
     * re-consume never asks for messages already processed.
     */
    public void processed(long offset) {
        if (offset < 0) {
            throw new IllegalArgumentException("stream offset must not be negative: " + offset);
        }
        LAST_PROCESSED.accumulateAndGet(this, offset, Math::max);
    }

    /** The offset of the last message processed, or -1 before the first. */
    public long lastProcessed() {
        return lastProcessed;
    }

    /**
     * The {@code x-stream-offset} to consume with now: the one after the last processed message, or the start
     * before any was processed. A {@code String}, {@code Long} or {@code Instant}.
     */
    public Object consumeOffset() {
        long last = lastProcessed;
        return last < 0 ? start : (Object) (last + 1);
    }

    @Override
    public String toString() {
        return "StreamOffsetTracker{start=" + start + ", lastProcessed=" + lastProcessed + "}";
    }
}
