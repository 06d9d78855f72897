package io.warren.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What one client run must do, resolved from the command line (PerfTest's meanings) and handed to a
 * {@link ClientDriver}. Immutable; drivers read it and never see picocli.
 *
 * <p>Topology, as PerfTest builds it:
 * <ul>
 *   <li>the exchange {@link #exchange()} of type {@link #exchangeType()} is declared non-durable unless it
 *       is the default exchange ({@code ""}) or a predefined {@code amq.*} one;</li>
 *   <li>with a named {@link #queue()}, that one queue is declared (durable, not exclusive,
 *       {@link #autoDelete()}, {@link #queueArgs()}), bound with {@link #routingKey()}, and every consumer
 *       shares it;</li>
 *   <li>without one, each consumer declares its own server-named exclusive queue on its own connection and
 *       binds it, so every consumer receives a copy of every message.</li>
 * </ul>
 *
 * @param uris the brokers (or the loopback peer), {@code amqp://user:pass@host:port/vhost}; connections spread
 *     over them round-robin
 * @param producers publishing threads, each with its own connection and channel
 * @param consumers consumers, each with its own connection and channel
 * @param size body length in bytes; at least {@link MessageBody#MIN_SIZE} (the timestamp)
 * @param producerMessages messages each producer publishes before it stops; 0 = no limit
 * @param consumerMessages messages each consumer takes before it cancels; 0 = no limit
 * @param rate messages per second per producer; 0 or less = as fast as possible
 * @param confirm outstanding publisher confirms per producer; 0 or less = no confirms
 * @param qos consumer prefetch count; 0 = unlimited
 * @param multiAckEvery acknowledge with multiple=true every this many deliveries; 0 = ack each one
 * @param autoAck consume with no-ack (the broker considers a delivery acknowledged when sent)
 * @param queue the shared queue's name; {@code ""} = one server-named queue per consumer
 * @param persistent publish with delivery-mode 2
 * @param mandatory publish with the mandatory flag (returns are counted)
 * @param routingKey the routing key for publishes and bindings (never null)
 * @param exchange the exchange to publish to; {@code ""} is the default exchange
 * @param exchangeType the type the exchange is declared with
 * @param queueArgs arguments for a named queue's declaration (x-queue-type, x-max-length, ...)
 * @param autoDelete whether a named queue is declared auto-delete
 */
public record RunOptions(
        List<String> uris,
        int producers,
        int consumers,
        int size,
        long producerMessages,
        long consumerMessages,
        double rate,
        int confirm,
        int qos,
        int multiAckEvery,
        boolean autoAck,
        String queue,
        boolean persistent,
        boolean mandatory,
        String routingKey,
        String exchange,
        String exchangeType,
        Map<String, Object> queueArgs,
        boolean autoDelete,
        boolean nativeTransport) {

    public RunOptions {
        uris = List.copyOf(uris);
        if (uris.isEmpty()) {
            throw new IllegalArgumentException("at least one URI");
        }
        Objects.requireNonNull(queue, "queue");
        Objects.requireNonNull(routingKey, "routingKey");
        Objects.requireNonNull(exchange, "exchange");
        Objects.requireNonNull(exchangeType, "exchangeType");
        queueArgs = Map.copyOf(queueArgs);
        if (producers < 0 || consumers < 0) {
            throw new IllegalArgumentException("producers and consumers must be 0 or more");
        }
        if (size < MessageBody.MIN_SIZE) {
            throw new IllegalArgumentException("size must be at least " + MessageBody.MIN_SIZE);
        }
    }

    /** The first broker's URI (the only one unless {@code --uris} named several). */
    public String uri() {
        return uris.get(0);
    }

    /**
     * The brokers in the order connection {@code index} tries them: its own first (connections spread over the
     * brokers round-robin, as PerfTest's {@code --uris} does), then the others, for failover.
     */
    public List<String> urisFor(int index) {
        List<String> list = new ArrayList<>(uris.size());
        for (int k = 0; k < uris.size(); k++) {
            list.add(uris.get((index + k) % uris.size()));
        }
        return list;
    }

    /** Whether producers put their channels in confirm mode. */
    public boolean confirms() {
        return confirm > 0;
    }

    /** Whether each consumer declares its own server-named queue (no {@code --queue} given). */
    public boolean serverNamedQueues() {
        return queue.isEmpty();
    }

    /**
     * Deliveries each publish makes when the run both publishes and consumes: one per consumer with its own
     * server-named queue, one with a shared queue; 0 when one side is missing (nothing to compare).
     */
    public long deliveriesPerPublish() {
        if (producers == 0 || consumers == 0) {
            return 0;
        }
        return serverNamedQueues() ? consumers : 1;
    }

    /** Whether {@link #exchange()} must be declared: not the default exchange, not a predefined one. */
    public boolean declaresExchange() {
        return !exchange.isEmpty() && !exchange.startsWith("amq.");
    }

    /**
     * The routing key that reaches a queue named {@code queueName}: through the default exchange a message
     * is routed by queue name, through any other exchange by the binding's key.
     */
    public String routingKeyFor(String queueName) {
        return exchange.isEmpty() ? queueName : routingKey;
    }

    /** The same run with other numbers of producers and consumers (one side of it against the loopback peer). */
    public RunOptions withProducersAndConsumers(int newProducers, int newConsumers) {
        return copy(uris, newProducers, newConsumers);
    }

    /** The same run against another address (the loopback peer's). */
    public RunOptions withUri(String newUri) {
        return copy(List.of(newUri), producers, consumers);
    }

    /** The one place every field is copied: a new field is added here once. */
    private RunOptions copy(List<String> newUris, int newProducers, int newConsumers) {
        return new RunOptions(
                newUris,
                newProducers,
                newConsumers,
                size,
                producerMessages,
                consumerMessages,
                rate,
                confirm,
                qos,
                multiAckEvery,
                autoAck,
                queue,
                persistent,
                mandatory,
                routingKey,
                exchange,
                exchangeType,
                queueArgs,
                autoDelete,
                nativeTransport);
    }
}
