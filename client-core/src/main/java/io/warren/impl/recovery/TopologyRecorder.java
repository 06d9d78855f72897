package io.warren.impl.recovery;

import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import io.warren.impl.consume.QueueConsumerCounts;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * What the application declared on one connection, as the broker accepted it, so that it can be declared
 * again on the connection that replaces it after a loss: exchanges, queues (server-named ones too), bindings
 * (queue and exchange-to-exchange), and how many consumers each queue has.
 *
 * <p>Recorded only on success (the reply arrived), in the order the replies arrived; deletes forget the
 * entity and everything that hangs on it, as the broker does:
 * <ul>
 *   <li>queue.delete forgets the queue and every binding to it;</li>
 *   <li>exchange.delete forgets the exchange and every binding from or to it;</li>
 *   <li>an auto-delete queue is forgotten when its last consumer ends (the broker deletes it then), and an
 *       auto-delete exchange when its last binding as a source goes (with the bindings to it).</li>
 * </ul>
 * Passive declares, the default exchange and the {@code amq.*} exchanges are never recorded: they exist
 * without us, and declaring an {@code amq.} name is refused with 403.
 *
 * <p>A server-named queue gets a new name when it is declared again; {@link #renameQueue} moves the record,
 * its bindings and its consumers' count to the new name, and {@link #currentName} maps the old name, so a
 * consumer recovered later finds its queue.
 *
 * <p>Threads: declares complete on the event loop, recovery runs there, but the snapshot accessors may be
 * called from tests; the methods are synchronized (never on a hot path: one call per declare).
 */
public final class TopologyRecorder implements QueueConsumerCounts {

    /** A recorded exchange.declare. */
    public record Exchange(
            String name,
            String type,
            boolean durable,
            boolean autoDelete,
            boolean internal,
            Map<String, Object> arguments) {
        public ExchangeSpec toDeclare() {
            return ExchangeSpec.of(name, type)
                    .durable(durable)
                    .autoDelete(autoDelete)
                    .internal(internal)
                    .arguments(arguments);
        }
    }

    /** A recorded queue.declare; {@code serverNamed} when the broker chose {@code name}. */
    public record Queue(
            String name,
            boolean serverNamed,
            boolean durable,
            boolean exclusive,
            boolean autoDelete,
            Map<String, Object> arguments) {
        /** The declare that makes it again: a server-named queue is asked for with an empty name. */
        public QueueSpec toDeclare() {
            return QueueSpec.named(serverNamed ? "" : name)
                    .durable(durable)
                    .exclusive(exclusive)
                    .autoDelete(autoDelete)
                    .arguments(arguments);
        }

        Queue renamed(String newName) {
            return new Queue(newName, serverNamed, durable, exclusive, autoDelete, arguments);
        }
    }

    /** A recorded queue.bind ({@code toExchange} false) or exchange.bind ({@code toExchange} true). */
    public record Binding(
            boolean toExchange, String destination, String source, String routingKey, Map<String, Object> arguments) {
        Binding withDestination(String d) {
            return new Binding(toExchange, d, source, routingKey, arguments);
        }
    }

    private final LinkedHashMap<String, Exchange> exchanges = new LinkedHashMap<>();
    private final LinkedHashMap<String, Queue> queues = new LinkedHashMap<>();
    private final LinkedHashSet<Binding> bindings = new LinkedHashSet<>();
    private final HashMap<String, Integer> consumersByQueue = new HashMap<>();
    /** Old server-generated name -> the name it has now. */
    private final HashMap<String, String> renamed = new HashMap<>();

    // ---- recording ---------------------------------------------------------------------------------------

    public synchronized void exchangeDeclared(ExchangeSpec d) {
        if (d.passive() || isPredeclared(d.exchange())) {
            return;
        }
        exchanges.put(
                d.exchange(),
                new Exchange(d.exchange(), d.type(), d.durable(), d.autoDelete(), d.internal(), copy(d.arguments())));
    }

    public synchronized void exchangeDeleted(String name) {
        exchanges.remove(name);
        List<Binding> gone = new ArrayList<>();
        for (Binding b : bindings) {
            if (b.source.equals(name) || (b.toExchange && b.destination.equals(name))) {
                gone.add(b);
            }
        }
        gone.forEach(this::removeBinding); // a binding to it may have been an auto-delete source's last
    }

    /** queue.declare-ok for {@code d}; {@code actualName} is the name in the reply (the broker's for ""). */
    public synchronized void queueDeclared(QueueSpec d, String actualName) {
        if (d.passive()) {
            return;
        }
        Queue before = queues.get(actualName);
        queues.put(
                actualName,
                new Queue(
                        actualName,
                        // declared again by the name the broker gave it: still the broker's to name on a new connection
                        d.queue().isEmpty() || (before != null && before.serverNamed),
                        d.durable(),
                        d.exclusive(),
                        d.autoDelete(),
                        copy(d.arguments())));
    }

    public synchronized void queueDeleted(String name) {
        queues.remove(name);
        consumersByQueue.remove(name);
        List<Binding> gone = new ArrayList<>();
        for (Binding b : bindings) {
            if (!b.toExchange && b.destination.equals(name)) {
                gone.add(b);
            }
        }
        gone.forEach(this::removeBinding);
    }

    public synchronized void bound(
            boolean toExchange, String destination, String source, String routingKey, Map<String, ?> arguments) {
        bindings.add(new Binding(toExchange, destination, source, routingKey, copy(arguments)));
    }

    public synchronized void unbound(
            boolean toExchange, String destination, String source, String routingKey, Map<String, ?> arguments) {
        removeBinding(new Binding(toExchange, destination, source, routingKey, copy(arguments)));
    }

    private void removeBinding(Binding b) {
        if (bindings.remove(b)) {
            Exchange source = exchanges.get(b.source);
            if (source != null && source.autoDelete && bindings.stream().noneMatch(o -> o.source.equals(b.source))) {
                // the broker deletes an auto-delete exchange with its last binding, and what is bound to it with it
                exchangeDeleted(b.source);
            }
        }
    }

    /** A consumer started on {@code queue} (consume-ok). */
    @Override
    public synchronized void consumerStarted(String queue) {
        consumersByQueue.merge(currentName(queue), 1, Integer::sum);
    }

    /**
     * A consumer on {@code queue} ended for good (cancelled by the application or the broker). The broker deletes
     * an auto-delete queue with its last consumer: so does the record. {@code queue} may be a server-named queue's
     * old name (a consumer that ends during recovery, before it is pointed at the new one).
     */
    @Override
    public synchronized void consumerEnded(String name) {
        String queue = currentName(name);
        Integer n = consumersByQueue.get(queue);
        if (n == null) {
            return;
        }
        if (n > 1) {
            consumersByQueue.put(queue, n - 1);
            return;
        }
        consumersByQueue.remove(queue);
        Queue q = queues.get(queue);
        if (q != null && q.autoDelete) {
            queueDeleted(queue);
        }
    }

    // ---- recovery ----------------------------------------------------------------------------------------

    public synchronized List<Exchange> exchanges() {
        return List.copyOf(exchanges.values());
    }

    public synchronized List<Queue> queues() {
        return List.copyOf(queues.values());
    }

    public synchronized List<Binding> bindings() {
        return List.copyOf(bindings);
    }

    /** The record of the queue named {@code name} now (see {@link #currentName}), or null when it has none. */
    public synchronized Queue queue(String name) {
        return queues.get(currentName(name));
    }

    /** The queue bindings to {@code queue}, as recorded. */
    public synchronized List<Binding> bindingsTo(String queue) {
        return bindings.stream()
                .filter(b -> !b.toExchange && b.destination.equals(queue))
                .toList();
    }

    /**
     * What the broker deletes with auto-delete queue {@code queue}, as far as recorded: the auto-delete exchanges its
     * bindings come from (each loses its last binding as a source, perhaps), those bound into them, and so on upwards,
     * nearest first; and the exchange-to-exchange bindings into them. One snapshot.
     */
    public synchronized Upstream upstreamOf(String queue) {
        LinkedHashMap<String, Exchange> found = new LinkedHashMap<>();
        List<Binding> into = new ArrayList<>();
        ArrayDeque<String> next = new ArrayDeque<>();
        bindingsTo(queue).forEach(b -> next.add(b.source));
        while (!next.isEmpty()) {
            Exchange x = exchanges.get(next.poll());
            if (x == null || !x.autoDelete || found.putIfAbsent(x.name, x) != null) {
                continue; // not recorded, not auto-delete, or seen (bindings may form a loop)
            }
            for (Binding b : bindings) {
                if (b.toExchange && b.destination.equals(x.name)) {
                    into.add(b);
                    next.add(b.source);
                }
            }
        }
        return new Upstream(List.copyOf(found.values()), into);
    }

    /** {@link #upstreamOf}: exchanges to declare again, then exchange bindings to make again. */
    public record Upstream(List<Exchange> exchanges, List<Binding> bindings) {}

    public synchronized int consumers(String queue) {
        return consumersByQueue.getOrDefault(queue, 0);
    }

    /**
     * A server-named queue was declared again and got {@code newName}: its record, its bindings and its consumers'
     * count move to the new name; {@link #currentName(String)} maps the old one (and names older still).
     */
    public synchronized void renameQueue(String oldName, String newName) {
        if (oldName.equals(newName)) {
            return;
        }
        Queue q = queues.remove(oldName);
        if (q != null) {
            queues.put(newName, q.renamed(newName));
        }
        List<Binding> moved = new ArrayList<>();
        bindings.removeIf(b -> {
            if (!b.toExchange && b.destination.equals(oldName)) {
                moved.add(b.withDestination(newName));
                return true;
            }
            return false;
        });
        bindings.addAll(moved);
        Integer n = consumersByQueue.remove(oldName);
        if (n != null) {
            consumersByQueue.put(newName, n);
        }
        renamed.replaceAll((old, now) -> now.equals(oldName) ? newName : now);
        renamed.put(oldName, newName);
    }

    /** The name {@code queue} has now: itself, unless it is a server-named queue recovered under a new name. */
    public synchronized String currentName(String queue) {
        return renamed.getOrDefault(queue, queue);
    }

    /** True when nothing is recorded. */
    public synchronized boolean isEmpty() {
        return exchanges.isEmpty() && queues.isEmpty() && bindings.isEmpty();
    }

    private static boolean isPredeclared(String exchange) {
        return exchange.isEmpty() || exchange.startsWith("amq.");
    }

    /** An immutable copy; the caller's map may change after the declare. */
    private static Map<String, Object> copy(Map<String, ?> m) {
        if (m == null || m.isEmpty()) {
            return Map.of();
        }
        // Map.copyOf refuses null values, which a field table may carry (void): those keep a plain copy
        return java.util.Collections.unmodifiableMap(new LinkedHashMap<>(m));
    }

    @Override
    public synchronized String toString() {
        return "TopologyRecorder{" + exchanges.size() + " exchanges, " + queues.size() + " queues, " + bindings.size()
                + " bindings}";
    }
}
