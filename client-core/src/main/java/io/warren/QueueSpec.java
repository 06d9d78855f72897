package io.warren;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The arguments of queue.declare. Spec defaults: not passive, not durable, not exclusive, not
 * auto-delete, no arguments, wait for declare-ok.
 *
 * <pre>{@code
 * channel.queueDeclare(QueueSpec.named("orders").durable(true).quorum())
 * channel.queueDeclare(QueueSpec.named("jobs").quorum().singleActiveConsumer().deliveryLimit(5))
 * channel.queueDeclare(QueueSpec.serverNamed())   // exclusive, auto-delete, name from the broker
 * }</pre>
 */
public final class QueueSpec {

    /** RabbitMQ's largest x-message-ttl: 2^32 - 1 ms. */
    private static final Duration LONGEST_TTL = Duration.ofMillis(0xFFFF_FFFFL);

    private final String queue;
    private boolean passive;
    private boolean durable;
    private boolean exclusive;
    private boolean autoDelete;
    private boolean noWait;
    private final Map<String, Object> arguments = new LinkedHashMap<>();

    private QueueSpec(String queue) {
        this.queue = Objects.requireNonNull(queue, "queue");
    }

    public static QueueSpec named(String queue) {
        return new QueueSpec(queue);
    }

    /**
     * A queue the broker names (queue.declare with an empty name), exclusive and auto-delete as the
     * official clients' {@code queueDeclare()} does: read the name from {@link DeclaredQueue#queue()}.
     */
    public static QueueSpec serverNamed() {
        QueueSpec d = new QueueSpec("");
        d.exclusive = true;
        d.autoDelete = true;
        return d;
    }

    /** Checks that {@code queue} exists and reads its counts (404 NOT_FOUND closes the channel if not). */
    public static QueueSpec passive(String queue) {
        QueueSpec d = new QueueSpec(queue);
        d.passive = true;
        return d;
    }

    public QueueSpec durable(boolean durable) {
        this.durable = durable;
        return this;
    }

    public QueueSpec exclusive(boolean exclusive) {
        this.exclusive = exclusive;
        return this;
    }

    public QueueSpec autoDelete(boolean autoDelete) {
        this.autoDelete = autoDelete;
        return this;
    }

    /** Do not wait for declare-ok: the stage completes once written, with counts of -1. Needs a name. */
    public QueueSpec noWait(boolean noWait) {
        this.noWait = noWait;
        return this;
    }

    /**
     * An argument such as {@code x-queue-type}, {@code x-message-ttl}, {@code x-max-length}; a null value removes
     * the key (the broker refuses a void value for its own arguments).
     */
    public QueueSpec argument(String key, Object value) {
        Objects.requireNonNull(key, "key");
        if (value == null) {
            arguments.remove(key);
        } else {
            arguments.put(key, value);
        }
        return this;
    }

    public QueueSpec arguments(Map<String, ?> arguments) {
        this.arguments.putAll(arguments);
        return this;
    }

    /** {@code x-queue-type=quorum}; quorum queues must be durable, so this sets durable too. */
    public QueueSpec quorum() {
        durable = true;
        return argument("x-queue-type", "quorum");
    }

    /** {@code x-queue-type=stream}; streams must be durable, so this sets durable too. */
    public QueueSpec stream() {
        durable = true;
        return argument("x-queue-type", "stream");
    }

    /**
     * {@code x-single-active-consumer=true}: of the queue's consumers one at a time gets messages; when its channel
     * or connection goes, the broker moves the queue to the next (classic and quorum queues).
     */
    public QueueSpec singleActiveConsumer() {
        return argument("x-single-active-consumer", true);
    }

    /**
     * {@code x-delivery-limit} of a quorum queue: a message returned (nack, reject, or a consumer gone) more than
     * {@code limit} times is dropped or dead-lettered instead of delivered again.
     */
    public QueueSpec deliveryLimit(int limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("deliveryLimit must not be negative: " + limit);
        }
        return argument("x-delivery-limit", limit);
    }

    /**
     * {@code x-message-ttl} in milliseconds: 0 to 2^32 - 1 ms (about 49 days), what RabbitMQ takes; outside that it
     * closes the channel with 406.
     */
    public QueueSpec messageTtl(Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.isNegative() || ttl.compareTo(LONGEST_TTL) > 0) {
            throw new IllegalArgumentException("messageTtl must be within 0.." + LONGEST_TTL + ": " + ttl);
        }
        return argument("x-message-ttl", ttl.toMillis());
    }

    /** {@code x-max-length}: the most ready messages the queue keeps; not negative. */
    public QueueSpec maxLength(long maxLength) {
        if (maxLength < 0) {
            throw new IllegalArgumentException("maxLength must not be negative: " + maxLength);
        }
        return argument("x-max-length", maxLength);
    }

    public String queue() {
        return queue;
    }

    public boolean passive() {
        return passive;
    }

    public boolean durable() {
        return durable;
    }

    public boolean exclusive() {
        return exclusive;
    }

    public boolean autoDelete() {
        return autoDelete;
    }

    public boolean noWait() {
        return noWait;
    }

    public Map<String, Object> arguments() {
        return java.util.Collections.unmodifiableMap(arguments);
    }
}
