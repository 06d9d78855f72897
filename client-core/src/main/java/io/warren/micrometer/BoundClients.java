package io.warren.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.warren.AmqpClient;
import io.warren.ClientMetrics;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * The clients bound to one registry under one prefix and tags. Micrometer keeps one meter per name and tags, and
 * gives every later registration the first one, so these clients are reported together, by meters that read this
 * object: a counter is the sum over them, a gauge the sum of the live values (the oldest unacknowledged age: the
 * oldest of them), a timer gets each client's samples once.
 *
 * <p>A client is a member while it may still count: its {@link ClientMetrics} held, the client itself weakly. Once
 * the client is unreachable (the application closed it and let it go) and has nothing open, a read folds its last
 * counts into {@link #retired} and drops it: a service that creates and closes many clients holds the live ones
 * only, and a counter never goes down. A count made after that, through an object of the client the application
 * still holds (a publish refused by a closed channel), is not reported.
 *
 * <p>Held by its meters in the registry (their functions) and by its members' recorders, not by {@link #GROUPS}:
 * it holds the registry, which must stay collectable.
 */
final class BoundClients {

    /** Each registry's groups, by prefix and tags. */
    private static final Map<MeterRegistry, Map<Key, WeakReference<BoundClients>>> GROUPS = new WeakHashMap<>();

    private record Key(String prefix, Tags tags) {}

    private final MeterRegistry registry;
    private final String prefix;
    private final Tags tags;
    private final QueueGauges queues;

    // guarded by this; never held while calling the registry, whose lock may be held while it reads a meter
    private final List<Member> members = new ArrayList<>();
    /** The last counts of the members dropped, by {@link ClientCounter#ordinal()}. */
    private final long[] retired = new long[ClientCounter.ALL.length];

    // any thread (volatile): the registry's timers, set again by each binding (one may have been removed)
    private volatile Timer confirmLatency;
    private volatile Timer handlerDuration;

    private BoundClients(MeterRegistry registry, String prefix, Tags tags) {
        this.registry = registry;
        this.prefix = prefix;
        this.tags = tags;
        this.queues = new QueueGauges(registry, prefix, tags);
    }

    /** The group of {@code registry}'s clients under {@code prefix} and {@code tags}, made at its first binding. */
    static BoundClients of(MeterRegistry registry, String prefix, Tags tags) {
        Key key = new Key(prefix, tags);
        synchronized (GROUPS) {
            Map<Key, WeakReference<BoundClients>> groups = GROUPS.computeIfAbsent(registry, r -> new HashMap<>());
            WeakReference<BoundClients> ref = groups.get(key);
            BoundClients group = ref == null ? null : ref.get();
            if (group == null) {
                group = new BoundClients(registry, prefix, tags);
                groups.put(key, new WeakReference<>(group));
            }
            return group;
        }
    }

    /**
     * Registers the meters (Micrometer returns those already registered) and adds the client: its timings and
     * consumers are reported from now on. A client added already is not added again.
     */
    void add(AmqpClient client, ClientMetrics metrics) {
        register();
        synchronized (this) {
            retireUnreachable(); // here too: a registry never read must not hold every client ever bound
            for (Member m : members) {
                if (m.metrics == metrics) {
                    return;
                }
            }
            members.add(new Member(client, metrics));
        }
        metrics.onConfirmLatency(nanos -> confirmLatency.record(nanos, TimeUnit.NANOSECONDS));
        metrics.onHandlerTime(nanos -> handlerDuration.record(nanos, TimeUnit.NANOSECONDS));
        metrics.onConsumer(queues::consumerStarted);
    }

    // Each function below calls a method of this group, so holds it: Micrometer holds a meter's object weakly.

    private void register() {
        gauge("connections", "open connections", ClientMetrics::connections);
        gauge("channels", "open channels", ClientMetrics::channels);
        gauge("outstanding_confirms", "publishes awaiting their confirm", ClientMetrics::outstandingConfirms);
        for (ClientCounter c : ClientCounter.ALL) {
            FunctionCounter.builder(prefix + "." + c.name, this, group -> count(c))
                    .description(c.description)
                    .baseUnit(c.baseUnit())
                    .tags(tags)
                    .register(registry);
        }
        TimeGauge.builder(
                        prefix + ".oldest_unacknowledged_age",
                        this,
                        TimeUnit.MILLISECONDS,
                        group -> oldestUnacknowledgedMillis())
                .description("how long the oldest delivery not yet settled has waited (consumer_timeout)")
                .tags(tags)
                .strongReference(true)
                .register(registry);
        confirmLatency = Timer.builder(prefix + ".confirm_latency")
                .description("from a publish written to the broker's basic.ack (confirm mode)")
                .tags(tags)
                .register(registry);
        handlerDuration = Timer.builder(prefix + ".handler_duration")
                .description("delivery handler calls (an asynchronous handler: until its stage completed)")
                .tags(tags)
                .register(registry);
    }

    private void gauge(String name, String description, ToLongFunction<ClientMetrics> figure) {
        Gauge.builder(prefix + "." + name, this, group -> sum(figure))
                .description(description)
                .tags(tags)
                .strongReference(true)
                .register(registry);
    }

    /** A counter: the retired members' last counts and the members' counts now. */
    private synchronized double count(ClientCounter counter) {
        retireUnreachable();
        long sum = retired[counter.ordinal()];
        for (Member m : members) {
            sum += counter.of(m.metrics);
        }
        return sum;
    }

    /** A gauge: the members' values now. */
    private synchronized double sum(ToLongFunction<ClientMetrics> figure) {
        long sum = 0;
        for (Member m : members) {
            sum += figure.applyAsLong(m.metrics);
        }
        return sum;
    }

    private synchronized double oldestUnacknowledgedMillis() {
        long oldest = 0;
        for (Member m : members) {
            oldest = Math.max(oldest, m.metrics.oldestUnacknowledgedMillis());
        }
        return oldest;
    }

    /** Folds the counts of each member whose client is unreachable with nothing open, and drops it. */
    private void retireUnreachable() {
        for (Iterator<Member> it = members.iterator(); it.hasNext(); ) {
            Member m = it.next();
            if (m.client.get() == null && idle(m.metrics)) {
                for (ClientCounter c : ClientCounter.ALL) {
                    retired[c.ordinal()] += c.of(m.metrics);
                }
                it.remove();
            }
        }
    }

    private static boolean idle(ClientMetrics metrics) {
        return metrics.connections() == 0
                && metrics.channels() == 0
                && metrics.outstandingConfirms() == 0
                && metrics.consumers().isEmpty();
    }

    /**
     * A client bound: its metrics, which its connections count into, and the client weakly, whose reachability
     * tells that it is gone (open connections and connects on their way reach it).
     */
    private static final class Member {
        final WeakReference<AmqpClient> client;
        final ClientMetrics metrics;

        Member(AmqpClient client, ClientMetrics metrics) {
            this.client = new WeakReference<>(client);
            this.metrics = metrics;
        }
    }
}
