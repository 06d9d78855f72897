package io.warren.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.warren.ConsumerHandle;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code <prefix>.consumer.queued} gauges of the clients bound under one prefix and tags ({@link BoundClients}):
 * one per {@code queue} tag over the active consumers of all of them, removed when the last of those ends, whichever
 * client it belongs to. Any thread: consumers start on their connections' event loops.
 */
final class QueueGauges {

    private final MeterRegistry registry;
    private final String name;
    private final Tags tags;
    /** By {@code queue} tag. Guarded by itself; the registry's lock is taken inside it, never the other way round. */
    private final Map<String, QueueGauge> queues = new HashMap<>();

    QueueGauges(MeterRegistry registry, String prefix, Tags tags) {
        this.registry = registry;
        this.name = prefix + ".consumer.queued";
        this.tags = tags;
    }

    /**
     * The {@code queue} tag of a consumer's gauge: its queue's name, except that every server-named queue
     * ({@code amq.gen-...}, a new name per declare) shares {@value WarrenMeterBinder#SERVER_NAMED}, so that series
     * stay bounded by the application's queues, not by how many consumers and reply queues it ever made.
     */
    static String queueTag(String queue) {
        return queue.startsWith("amq.gen-") ? WarrenMeterBinder.SERVER_NAMED : queue;
    }

    /** Counts {@code consumer} in its queue's gauge until it ends. */
    void consumerStarted(ConsumerHandle consumer) {
        if (!consumer.isActive()) {
            return;
        }
        String queue = queueTag(consumer.queue());
        QueueGauge g;
        synchronized (queues) {
            g = queues.computeIfAbsent(queue, q -> new QueueGauge());
            if (g.gauge == null) {
                g.gauge = Gauge.builder(name, g, QueueGauge::queued)
                        .description("deliveries waiting for the handlers of the queue's consumers")
                        .tags(tags)
                        .tag("queue", queue)
                        .strongReference(true)
                        .register(registry);
            }
            g.consumers.add(consumer);
        }
        consumer.endFuture().whenComplete((cause, error) -> consumerEnded(queue, g, consumer));
    }

    private void consumerEnded(String queue, QueueGauge g, ConsumerHandle consumer) {
        synchronized (queues) {
            g.consumers.remove(consumer);
            if (g.consumers.isEmpty() && queues.remove(queue, g)) {
                registry.remove(g.gauge); // the queue's last consumer, of any bound client, ended: its series goes too
            }
        }
    }

    /** The active consumers of one {@code queue} tag, read as one gauge: the sum of their inbound queues. */
    private static final class QueueGauge {
        final Set<ConsumerHandle> consumers = ConcurrentHashMap.newKeySet();
        Gauge gauge; // guarded by the map of queues

        double queued() {
            long sum = 0;
            for (ConsumerHandle c : consumers) {
                sum += c.queued();
            }
            return sum;
        }
    }
}
