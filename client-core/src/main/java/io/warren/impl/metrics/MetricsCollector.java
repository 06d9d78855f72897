package io.warren.impl.metrics;

import io.warren.ConsumerHandle;

/**
 * What the protocol code tells about itself, for metrics. Internal: every class that counts holds the
 * client's collector in a {@code final} field, and a client without metrics holds {@link #NOOP}, whose
 * methods are empty, so a call site that only ever sees it costs nothing once the JIT inlined it; no meter is
 * looked up per message. {@link CountingMetrics} is the one real implementation; Micrometer (or anything
 * else) reads its counters through {@link io.warren.ClientMetrics}.
 *
 * <p>Called on event loops (and, for refused publishes and publishes written on their caller's thread, on the
 * publisher's thread): implementations must be
 * thread-safe and must not block.
 */
public interface MetricsCollector {

    /** Counts nothing. */
    MetricsCollector NOOP = new MetricsCollector() {};

    default void connectionOpened() {}

    default void connectionClosed() {}

    default void channelOpened() {}

    default void channelClosed() {}

    /** A message's frames were written (basic.publish). */
    default void messagePublished() {}

    /** A publish was refused or failed before it was written. */
    default void publishFailed() {}

    /** A publish was written in confirm mode: one more outstanding confirm. */
    default void awaitingConfirm() {}

    default void publishesConfirmed(int count) {}

    default void publishesNacked(int count) {}

    /** Outstanding confirms failed by a channel or connection close. */
    default void publishesUnconfirmed(int count) {}

    /**
     * A publish counted as written ({@link #messagePublished}, and {@link #awaitingConfirm} in confirm mode) before
     * its caller's write, which the socket then refused: nothing of it was written.
     */
    default void publishNotWritten(boolean awaitedConfirm) {}

    default void messageReturned() {}

    /** A message reached a consumer or basic.get. */
    default void messageConsumed() {}

    /** A delivery arrived while its manual-ack consumer's queue held its prefetch's worth already. */
    default void deliveredBeyondPrefetch() {}

    default void messageAcknowledged() {}

    default void messageRejected() {}

    default void readBytes(long bytes) {}

    default void wroteBytes(long bytes) {}

    /** A consumer started (consume-ok); it ends when its {@link ConsumerHandle#endFuture()} completes. */
    default void consumerStarted(ConsumerHandle consumer) {}

    default void recovered() {}

    /**
     * True when confirm latencies are recorded: the publisher reads the clock per confirm-mode publish only then.
     * Read once per publish on the event loop: a plain answer, no lookup.
     */
    default boolean timesConfirms() {
        return false;
    }

    /** A publish was confirmed (basic.ack) {@code nanos} after its frames were written. Event loop. */
    default void confirmLatency(long nanos) {}

    /** True when handler durations are recorded: the consumer reads the clock around its handler only then. */
    default boolean timesHandlers() {
        return false;
    }

    /** A delivery handler took {@code nanos} (an asynchronous one: until its stage completed). Consumer's thread. */
    default void handlerTime(long nanos) {}

    /** A manual-ack delivery from a lost channel was dropped before its handler (the broker redelivers it). */
    default void staleDeliveryDropped() {}

    /** A noAck delivery dropped because its consumer's queue was full ({@code ConsumeOptions.dropOverflow}). */
    default void overflowDeliveryDropped() {}

    /** True for a collector that counts: the byte counter is put in the pipeline only then. */
    default boolean counts() {
        return false;
    }
}
