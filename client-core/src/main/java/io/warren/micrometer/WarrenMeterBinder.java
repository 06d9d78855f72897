package io.warren.micrometer;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.warren.AmqpClient;
import io.warren.ClientMetrics;
import java.util.Objects;

/**
 * Micrometer meters for an {@link AmqpClient} created with {@link io.warren.ClientOptions#metricsEnabled(boolean)
 * metrics enabled}: the names of RabbitMQ's Java client ({@code MicrometerMetricsCollector}) so that existing
 * dashboards keep working, plus bytes, outstanding confirms, the consumers' inbound queues (per queue),
 * recoveries, and timers for confirm latency and handler duration.
 *
 * <pre>{@code
 * AmqpClient client = AmqpClient.create(new ClientOptions().metricsEnabled(true));
 * new WarrenMeterBinder(client, Tags.of("service", "orders")).bindTo(registry);
 * }</pre>
 *
 * <table>
 *   <caption>Meters (prefix {@value #DEFAULT_PREFIX} by default)</caption>
 *   <tr><th>name</th><th>type</th><th>what</th></tr>
 *   <tr><td>{@code rabbitmq.connections}</td><td>gauge</td><td>open connections</td></tr>
 *   <tr><td>{@code rabbitmq.channels}</td><td>gauge</td><td>open channels</td></tr>
 *   <tr><td>{@code rabbitmq.published}</td><td>counter</td><td>messages written with basic.publish</td></tr>
 *   <tr><td>{@code rabbitmq.failed_to_publish}</td><td>counter</td><td>publishes refused or failed before written</td></tr>
 *   <tr><td>{@code rabbitmq.acknowledged_published}</td><td>counter</td><td>publishes confirmed (basic.ack)</td></tr>
 *   <tr><td>{@code rabbitmq.not_acknowledged_published}</td><td>counter</td><td>publishes nacked (basic.nack)</td></tr>
 *   <tr><td>{@code rabbitmq.unconfirmed_published}</td><td>counter</td><td>unconfirmed publishes failed by a close</td></tr>
 *   <tr><td>{@code rabbitmq.unrouted_published}</td><td>counter</td><td>messages returned (basic.return)</td></tr>
 *   <tr><td>{@code rabbitmq.outstanding_confirms}</td><td>gauge</td><td>publishes awaiting their confirm</td></tr>
 *   <tr><td>{@code rabbitmq.consumed}</td><td>counter</td><td>messages delivered or fetched</td></tr>
 *   <tr><td>{@code rabbitmq.consumer.beyond_prefetch}</td><td>counter</td><td>deliveries beyond a consumer's
 *       prefetch (a broker not keeping to basic.qos; should stay 0)</td></tr>
 *   <tr><td>{@code rabbitmq.acknowledged}</td><td>counter</td><td>the application's acks</td></tr>
 *   <tr><td>{@code rabbitmq.rejected}</td><td>counter</td><td>the application's nacks and rejects</td></tr>
 *   <tr><td>{@code rabbitmq.bytes_read}, {@code rabbitmq.bytes_written}</td><td>counter</td><td>AMQP bytes</td></tr>
 *   <tr><td>{@code rabbitmq.recoveries}</td><td>counter</td><td>connections recovered automatically</td></tr>
 *   <tr><td>{@code rabbitmq.stale_deliveries_dropped}</td><td>counter</td><td>manual-ack deliveries of a lost
 *       channel, or requeued by basic.recover, dropped before their handler (the broker redelivers them)</td></tr>
 *   <tr><td>{@code rabbitmq.consumer.overflow_dropped}</td><td>counter</td><td>noAck deliveries dropped because
 *       their consumer's queue was full ({@code ConsumeOptions.dropOverflow}): lost</td></tr>
 *   <tr><td>{@code rabbitmq.oldest_unacknowledged_age}</td><td>time gauge</td><td>how long the oldest delivery
 *       not yet settled has waited; RabbitMQ closes its channel at {@code consumer_timeout}</td></tr>
 *   <tr><td>{@code rabbitmq.consumer.queued}</td><td>gauge, tag {@code queue}</td>
 *       <td>deliveries waiting for the handlers of the queue's consumers, summed over them (one series per
 *       queue, {@value #SERVER_NAMED} for all server-named queues; removed when the queue's last consumer
 *       ends); RPC clients' reply consumers are under {@code amq.rabbitmq.reply-to}</td></tr>
 *   <tr><td>{@code rabbitmq.confirm_latency}</td><td>timer</td>
 *       <td>from a publish written to the socket to the broker's basic.ack (confirm mode)</td></tr>
 *   <tr><td>{@code rabbitmq.handler_duration}</td><td>timer</td>
 *       <td>delivery handler calls (an asynchronous handler: until its stage completed)</td></tr>
 * </table>
 *
 * The counters and gauges read the client's counters when the registry asks (FunctionCounter, Gauge): nothing
 * is looked up or recorded per message for them. The two timers are recorded per confirm and per delivery,
 * into a Timer resolved at binding; the clock is read for them only once a binder asked for them (a client
 * that was never bound reads none).
 *
 * <p>Clients bound to one registry under the same prefix and tags (a publishing and a consuming client of one
 * application, say) are reported together, as Micrometer keeps one meter per name and tags: each counter is the
 * sum over them, each gauge the sum of their values now (the oldest unacknowledged age: the oldest of theirs), and
 * each timer gets every client's samples once. Binding a client again to the same registry, prefix and tags does
 * nothing. A client's meters are not unbound while it lives; once it is closed and the application let go of it,
 * its counts stay in the counters and the binding lets go of it too, so a service that creates and closes many
 * clients keeps none of the closed ones. A consumer's {@code queue} series goes when the queue's last consumer,
 * of any of the clients, ends.
 *
 * <p>This package is the only one that touches Micrometer, and is loaded only by an application that uses it;
 * Micrometer is an optional dependency of Warren.
 */
public final class WarrenMeterBinder implements MeterBinder {

    /** The default meter name prefix, as RabbitMQ's Java client. */
    public static final String DEFAULT_PREFIX = "rabbitmq";

    /** The {@code queue} tag shared by every server-named queue's consumers. */
    public static final String SERVER_NAMED = "amq.gen-*";

    private final AmqpClient client;
    private final ClientMetrics metrics;
    private final String prefix;
    private final Tags tags;

    /** Meters named {@code rabbitmq.*} without extra tags. */
    public WarrenMeterBinder(AmqpClient client) {
        this(client, DEFAULT_PREFIX, Tags.empty());
    }

    /** Meters named {@code rabbitmq.*} with {@code tags}. */
    public WarrenMeterBinder(AmqpClient client, Iterable<Tag> tags) {
        this(client, DEFAULT_PREFIX, tags);
    }

    /**
     * @throws IllegalArgumentException when the client was created without metrics
     *                                  ({@link io.warren.ClientOptions#metricsEnabled(boolean)})
     */
    public WarrenMeterBinder(AmqpClient client, String prefix, Iterable<Tag> tags) {
        this.client = Objects.requireNonNull(client, "client");
        this.metrics = client.metrics();
        if (!metrics.enabled()) {
            throw new IllegalArgumentException("the client was created without metrics: "
                    + "AmqpClient.create(new ClientOptions().metricsEnabled(true))");
        }
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        BoundClients.of(Objects.requireNonNull(registry, "registry"), prefix, tags)
                .add(client, metrics);
    }
}
