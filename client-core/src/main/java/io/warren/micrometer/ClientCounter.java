package io.warren.micrometer;

import io.warren.ClientMetrics;
import java.util.function.ToLongFunction;

/** The figures of {@link ClientMetrics} that only go up, each reported as a FunctionCounter named {@code <prefix>.<name>}. */
enum ClientCounter {
    PUBLISHED("published", "messages published", ClientMetrics::published),
    FAILED_TO_PUBLISH(
            "failed_to_publish", "publishes refused or failed before written", ClientMetrics::failedToPublish),
    ACKNOWLEDGED_PUBLISHED("acknowledged_published", "publishes confirmed by the broker", ClientMetrics::confirmed),
    NOT_ACKNOWLEDGED_PUBLISHED("not_acknowledged_published", "publishes nacked by the broker", ClientMetrics::nacked),
    UNCONFIRMED_PUBLISHED(
            "unconfirmed_published",
            "unconfirmed publishes failed by a channel or connection close",
            ClientMetrics::unconfirmed),
    UNROUTED_PUBLISHED("unrouted_published", "messages returned by the broker", ClientMetrics::returned),
    CONSUMED("consumed", "messages delivered to consumers or fetched", ClientMetrics::consumed),
    BEYOND_PREFETCH(
            "consumer.beyond_prefetch",
            "deliveries that arrived while their consumer's queue held its "
                    + "prefetch's worth: the broker did not keep to basic.qos",
            ClientMetrics::deliveriesBeyondPrefetch),
    ACKNOWLEDGED("acknowledged", "acknowledgements made by the application", ClientMetrics::acknowledged),
    REJECTED("rejected", "nacks and rejects made by the application", ClientMetrics::rejected),
    BYTES_READ("bytes_read", "AMQP bytes read", ClientMetrics::bytesRead),
    BYTES_WRITTEN("bytes_written", "AMQP bytes written", ClientMetrics::bytesWritten),
    RECOVERIES("recoveries", "connections recovered automatically", ClientMetrics::recoveries),
    STALE_DELIVERIES_DROPPED(
            "stale_deliveries_dropped",
            "deliveries of a lost channel, or requeued by basic.recover, dropped before their handler",
            ClientMetrics::staleDeliveriesDropped),
    OVERFLOW_DROPPED(
            "consumer.overflow_dropped",
            "noAck deliveries dropped because their consumer's queue was full (dropOverflow)",
            ClientMetrics::overflowDeliveriesDropped);

    /** Every constant, read once: {@code values()} copies its array at each call. */
    static final ClientCounter[] ALL = values();

    final String name;
    final String description;
    private final ToLongFunction<ClientMetrics> figure;

    ClientCounter(String name, String description, ToLongFunction<ClientMetrics> figure) {
        this.name = name;
        this.description = description;
        this.figure = figure;
    }

    long of(ClientMetrics metrics) {
        return figure.applyAsLong(metrics);
    }

    /** The meter's base unit, or null. */
    String baseUnit() {
        return this == BYTES_READ || this == BYTES_WRITTEN ? "bytes" : null;
    }
}
