package io.warren.metrics;

import io.warren.ConsumerHandle;
import java.util.Collection;
import java.util.function.Consumer;

/**
 * What an {@link io.warren.AmqpClient} counted, over all its connections, since it was created: the figures
 * RabbitMQ's Java client and PerfTest report, plus bytes, outstanding confirms and each consumer's inbound
 * queue. Read from any thread; the values are plain counters (updated without locks by the event loops),
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

    /** Messages delivered to consumers (basic.deliver) and fetched (basic.get-ok). */
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

    /** The active consumers; {@link ConsumerHandle#queued()} is each one's inbound queue depth. */
    Collection<ConsumerHandle> consumers();

    /**
     * Calls {@code listener} with every active consumer now, then with each consumer that starts later (on
     * its connection's event loop: do not block). {@link ConsumerHandle#endFuture()} tells when each ends.
     */
    void onConsumer(Consumer<ConsumerHandle> listener);
}
