package io.warren.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.warren.AmqpClient;
import io.warren.ClientMetrics;
import io.warren.ConsumerHandle;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

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
 *       channel dropped before their handler (the broker redelivers them)</td></tr>
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
 * into a Timer resolved once here; the clock is read for them only once a binder asked for them (a client
 * that was never bound reads none). Binding is for the client's life: meters are not unbound. This class is the only one that touches Micrometer, and is loaded only by an
 * application that uses it; Micrometer is an optional dependency of Warren.
 */
public final class WarrenMeterBinder implements MeterBinder {

    /** The default meter name prefix, as RabbitMQ's Java client. */
    public static final String DEFAULT_PREFIX = "rabbitmq";

    /** The {@code queue} tag shared by every server-named queue's consumers. */
    public static final String SERVER_NAMED = "amq.gen-*";

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
        this.metrics = Objects.requireNonNull(client, "client").metrics();
        if (!metrics.enabled()) {
            throw new IllegalArgumentException("the client was created without metrics: "
                    + "AmqpClient.create(new ClientOptions().metricsEnabled(true))");
        }
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        gauge(registry, "connections", "open connections", ClientMetrics::connections);
        gauge(registry, "channels", "open channels", ClientMetrics::channels);
        counter(registry, "published", "messages published", ClientMetrics::published);
        counter(
                registry,
                "failed_to_publish",
                "publishes refused or failed before written",
                ClientMetrics::failedToPublish);
        counter(registry, "acknowledged_published", "publishes confirmed by the broker", ClientMetrics::confirmed);
        counter(registry, "not_acknowledged_published", "publishes nacked by the broker", ClientMetrics::nacked);
        counter(
                registry,
                "unconfirmed_published",
                "unconfirmed publishes failed by a channel or connection close",
                ClientMetrics::unconfirmed);
        counter(registry, "unrouted_published", "messages returned by the broker", ClientMetrics::returned);
        gauge(registry, "outstanding_confirms", "publishes awaiting their confirm", ClientMetrics::outstandingConfirms);
        counter(registry, "consumed", "messages delivered to consumers or fetched", ClientMetrics::consumed);
        counter(
                registry,
                "consumer.beyond_prefetch",
                "deliveries that arrived while their consumer's queue held its "
                        + "prefetch's worth: the broker did not keep to basic.qos",
                ClientMetrics::deliveriesBeyondPrefetch);
        counter(registry, "acknowledged", "acknowledgements made by the application", ClientMetrics::acknowledged);
        counter(registry, "rejected", "nacks and rejects made by the application", ClientMetrics::rejected);
        FunctionCounter.builder(prefix + ".bytes_read", metrics, m -> m.bytesRead())
                .baseUnit("bytes")
                .description("AMQP bytes read")
                .tags(tags)
                .register(registry);
        FunctionCounter.builder(prefix + ".bytes_written", metrics, m -> m.bytesWritten())
                .baseUnit("bytes")
                .description("AMQP bytes written")
                .tags(tags)
                .register(registry);
        counter(registry, "recoveries", "connections recovered automatically", ClientMetrics::recoveries);
        counter(
                registry,
                "stale_deliveries_dropped",
                "deliveries of a lost channel dropped before their handler",
                ClientMetrics::staleDeliveriesDropped);
        TimeGauge.builder(
                        prefix + ".oldest_unacknowledged_age",
                        metrics,
                        TimeUnit.MILLISECONDS,
                        ClientMetrics::oldestUnacknowledgedMillis)
                .description("how long the oldest delivery not yet settled has waited (consumer_timeout)")
                .tags(tags)
                .register(registry);
        Timer confirmLatency = Timer.builder(prefix + ".confirm_latency")
                .description("from a publish written to the broker's basic.ack (confirm mode)")
                .tags(tags)
                .register(registry);
        metrics.onConfirmLatency(nanos -> confirmLatency.record(nanos, TimeUnit.NANOSECONDS));
        Timer handlerDuration = Timer.builder(prefix + ".handler_duration")
                .description("delivery handler calls (an asynchronous handler: until its stage completed)")
                .tags(tags)
                .register(registry);
        metrics.onHandlerTime(nanos -> handlerDuration.record(nanos, TimeUnit.NANOSECONDS));
        Map<String, QueueGauge> queues = new HashMap<>();
        metrics.onConsumer(consumer -> bindConsumer(registry, queues, consumer));
    }

    /**
     * The {@code queue} tag of a consumer's gauge: its queue's name, except that every server-named queue
     * ({@code amq.gen-...}, a new name per declare) shares {@value #SERVER_NAMED}, so that series stay bounded by
     * the application's queues, not by how many consumers and reply queues it ever made.
     */
    static String queueTag(String queue) {
        return queue.startsWith("amq.gen-") ? SERVER_NAMED : queue;
    }

    private void bindConsumer(MeterRegistry registry, Map<String, QueueGauge> queues, ConsumerHandle consumer) {
        if (!consumer.isActive()) {
            return;
        }
        String queue = queueTag(consumer.queue());
        QueueGauge g;
        synchronized (queues) {
            g = queues.computeIfAbsent(queue, q -> new QueueGauge());
            if (g.gauge == null) {
                g.gauge = Gauge.builder(prefix + ".consumer.queued", g, QueueGauge::queued)
                        .description("deliveries waiting for the handlers of the queue's consumers")
                        .tags(tags)
                        .tag("queue", queue)
                        .strongReference(true)
                        .register(registry);
            }
            g.consumers.add(consumer);
        }
        consumer.endFuture().whenComplete((cause, error) -> {
            synchronized (queues) {
                g.consumers.remove(consumer);
                if (g.consumers.isEmpty() && queues.remove(queue, g)) {
                    registry.remove(g.gauge); // the queue's last consumer ended: its series goes too
                }
            }
        });
    }

    /** The active consumers of one {@code queue} tag, read as one gauge: the sum of their inbound queues. */
    private static final class QueueGauge {
        final Set<ConsumerHandle> consumers = ConcurrentHashMap.newKeySet();
        Gauge gauge; // guarded by the binding's map

        double queued() {
            long sum = 0;
            for (ConsumerHandle c : consumers) {
                sum += c.queued();
            }
            return sum;
        }
    }

    private void counter(MeterRegistry registry, String name, String description, ToDoubleFunction<ClientMetrics> f) {
        FunctionCounter.builder(prefix + "." + name, metrics, f)
                .description(description)
                .tags(tags)
                .register(registry);
    }

    private void gauge(MeterRegistry registry, String name, String description, ToDoubleFunction<ClientMetrics> f) {
        Gauge.builder(prefix + "." + name, metrics, f)
                .description(description)
                .tags(tags)
                .register(registry);
    }
}
