package io.warren;

import java.util.Collection;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * What an {@link io.warren.AmqpClient} counted, over all its connections, since it was created: the figures
 * RabbitMQ's Java client and PerfTest report, plus bytes, outstanding confirms and each consumer's inbound
 * queue, and, for whoever asks, confirm latencies and handler durations ({@link #onConfirmLatency},
 * {@link #onHandlerTime}). Read from any thread; the values are plain counters (updated without locks by the event loops),
 * so a set of reads is not one atomic snapshot.
 *
 * <p>Collected only when {@link io.warren.ClientOptions#metricsEnabled(boolean)} was set: otherwise
 * {@link #enabled()} is false, every figure is 0, and nothing is counted anywhere (the publish and delivery
 * paths call an empty method the JIT removes). The Micrometer binder ({@code io.warren.micrometer}) exposes
 * these as meters.
 *
 * <p>Counts are of messages unless said otherwise: {@link #acknowledged()} and {@link #rejected()} count the
 * application's settlement calls (a {@code multiple} ack counts once).
 */
public interface ClientMetrics {

    /** True when the client was created with metrics enabled. */
    boolean enabled();

    /** Open connections (a gauge). */
    long connections();

    /** Open channels (a gauge). */
    long channels();

    /** Messages written to the socket with basic.publish. */
    long published();

    /** Publishes refused or failed before they were written (back-pressure, blocked, channel closed). */
    long failedToPublish();

    /** Publishes the broker confirmed (basic.ack in confirm mode). */
    long confirmed();

    /** Publishes the broker refused (basic.nack in confirm mode). */
    long nacked();

    /** Unconfirmed publishes failed because their channel or connection closed. */
    long unconfirmed();

    /** Messages the broker returned (basic.return). */
    long returned();

    /** Publishes written in confirm mode and not yet confirmed, nacked or failed (a gauge). */
    long outstandingConfirms();

    /**
     * Messages delivered to consumers (basic.deliver) and fetched (basic.get-ok), as they arrive: those dropped
     * afterwards ({@link #staleDeliveriesDropped()}, {@link #overflowDeliveriesDropped()}) included.
     */
    long consumed();

    /**
     * Deliveries that arrived while their consumer's queue already held its prefetch's worth not yet handled: the
     * broker (or something between) did not keep to the basic.qos it accepted. Warren does not trust it: the queue
     * stops the connection's reading at its high-water mark all the same. Should stay 0.
     */
    long deliveriesBeyondPrefetch();

    /** Acknowledgements the application made (basic.ack). */
    long acknowledged();

    /** Negative acknowledgements and rejections the application made (basic.nack, basic.reject). */
    long rejected();

    /** Bytes read from the sockets (after TLS: AMQP frames). */
    long bytesRead();

    /** Bytes written to the sockets (before TLS: AMQP frames). */
    long bytesWritten();

    /** Connections recovered automatically after a loss. */
    long recoveries();

    /**
     * Manual-ack deliveries dropped before they reached the handler because their channel was lost meanwhile
     * (the connection was lost, or the broker closed the channel and it was recovered), or because
     * {@link Channel#basicRecover} requeued them: the broker delivers them again, so the application sees each
     * message once.
     */
    long staleDeliveriesDropped();

    /**
     * noAck deliveries dropped because their consumer's queue was full ({@link ConsumeOptions#dropOverflow}): the
     * broker had forgotten them, so they are lost. Grows while such a consumer is paused or slower than its queue.
     */
    long overflowDeliveriesDropped();

    /**
     * How long the oldest delivery the application has not yet settled has waited, in milliseconds, over the
     * channels of the active consumers (a gauge; 0 when nothing waits). RabbitMQ closes a channel whose oldest
     * unacknowledged delivery is older than its {@code consumer_timeout} (30 minutes by default) with 406
     * PRECONDITION_FAILED; Warren then recovers the channel ({@link io.warren.RecoveryListener#channelRecoveryStarted})
     * and the message is delivered again. Watch this figure to see that coming.
     */
    long oldestUnacknowledgedMillis();

    /** The active consumers; {@link ConsumerHandle#queued()} is each one's inbound queue depth. */
    Collection<ConsumerHandle> consumers();

    /**
     * Calls {@code listener} with every active consumer now, then with each consumer that starts later (on
     * its connection's event loop: do not block). {@link ConsumerHandle#endFuture()} tells when each ends.
     */
    void onConsumer(Consumer<ConsumerHandle> listener);

    /**
     * Calls {@code nanos} with each confirmed publish's latency, in nanoseconds: from its frames being written to
     * the broker's basic.ack (confirm mode). Called on the connection's event loop: record and return (a
     * Micrometer {@code Timer}, an HdrHistogram), never block. Until one is added no clock is read for it; a
     * second one is called after the first. A client without metrics ({@link #enabled()} false) never calls it.
     */
    void onConfirmLatency(LongConsumer nanos);

    /**
     * Calls {@code nanos} with each delivery handler's duration, in nanoseconds: the handler call for a
     * {@link io.warren.DeliveryHandler}, the call until its stage completes for an
     * {@link io.warren.AsyncDeliveryHandler}. Called on the consumer's thread, as {@link #onConfirmLatency}.
     */
    void onHandlerTime(LongConsumer nanos);
}
