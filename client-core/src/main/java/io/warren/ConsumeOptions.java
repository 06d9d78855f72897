package io.warren;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * How a consumer is started by {@link Channel#consume}: the basic.consume arguments, its prefetch, where its
 * handler runs, how many deliveries it handles at once and when it pushes back. Mutable with fluent setters, which
 * validate at once and throw {@link IllegalArgumentException}; {@link Channel#consume} copies it, so changing an
 * options object afterwards does not affect a consumer already started (nor its re-consume by recovery). The
 * defaults: a server-generated tag, manual acknowledgement, not exclusive, no arguments, a prefetch of
 * {@value #DEFAULT_PREFETCH} for manual acks (see {@link #prefetch(int)}), the handler on the connection's event
 * loop, one delivery at a time, water marks {@value #DEFAULT_LOW_WATER_MARK} / {@value #DEFAULT_HIGH_WATER_MARK},
 * raised with a prefetch above {@value #DEFAULT_LOW_WATER_MARK} to the prefetch / twice the prefetch (see
 * {@link #waterMarks(int, int)}).
 *
 * <pre>{@code
 * new ConsumeOptions().prefetch(1000).executor(workers).concurrency(8)
 * new ConsumeOptions().noAck(true).waterMarks(1000, 5000)
 * new ConsumeOptions().prefetch(100).streamOffset("first")      // a stream queue
 * }</pre>
 */
public final class ConsumeOptions {

    /**
     * Default high-water mark: the consumer's queue pushes back once it holds this many deliveries (with manual
     * acknowledgement and a prefetch, twice the prefetch when that is more).
     */
    public static final int DEFAULT_HIGH_WATER_MARK = 1024;

    /** Default low-water mark: the push-back ends once the queue holds fewer deliveries than this (half the high). */
    public static final int DEFAULT_LOW_WATER_MARK = 512;

    /**
     * The prefetch of a manual-ack consumer that sets none, on a channel without a basic.qos of its own: Spring
     * AMQP's default (its {@code DEFAULT_PREFETCH_COUNT}). See {@link #prefetch(int)}.
     */
    public static final int DEFAULT_PREFETCH = 250;

    private String consumerTag = "";
    private boolean noAck;
    private boolean exclusive;
    private final Map<String, Object> arguments = new LinkedHashMap<>();
    private StreamOffsetTracker streamOffsets;
    private int prefetch = -1;
    private Executor executor;
    private int concurrency = 1;
    /** The water marks set with {@link #waterMarks}; 0 when not set: then they follow noAck and the prefetch. */
    private int lowWaterMark;

    private int highWaterMark;
    private long initialDemand = Long.MAX_VALUE;
    private boolean dropOverflow;

    public ConsumeOptions() {}

    public ConsumeOptions(ConsumeOptions other) {
        this.consumerTag = other.consumerTag;
        this.noAck = other.noAck;
        this.exclusive = other.exclusive;
        this.arguments.putAll(other.arguments);
        this.streamOffsets = other.streamOffsets; // the tracker itself is shared: it follows the consumer
        this.prefetch = other.prefetch;
        this.executor = other.executor;
        this.concurrency = other.concurrency;
        this.lowWaterMark = other.lowWaterMark;
        this.highWaterMark = other.highWaterMark;
        this.initialDemand = other.initialDemand;
        this.dropOverflow = other.dropOverflow;
    }

    /** The consumer tag (unique on the channel); {@code ""} (the default) lets the broker generate one. */
    public ConsumeOptions consumerTag(String consumerTag) {
        this.consumerTag = Objects.requireNonNull(consumerTag, "consumerTag");
        return this;
    }

    /** The consumer tag asked for; {@code ""} lets the broker generate one. */
    public String consumerTag() {
        return consumerTag;
    }

    /**
     * noAck (autoAck): no acknowledgements; the broker forgets a message once it has sent it. Off by default.
     * Faster, but what the broker sent and the handler has not yet handled lives only in this process: the
     * deliveries waiting in the consumer's queue (paused, slow handler) are <b>lost</b>, not requeued, when
     * the consumer is cancelled, its channel or connection closes or the application stops. Deliveries
     * received before a connection loss are still handed to the handler after recovery (there is nothing to
     * redeliver). With manual acknowledgement they would be requeued or redelivered instead. A noAck consumer that
     * stays paused stops its connection's reading, and RabbitMQ closes a connection it cannot write to for long: see
     * {@link ConsumerHandle}, and {@link #dropOverflow(boolean)} for a consumer that may be paused.
     */
    public ConsumeOptions noAck(boolean noAck) {
        this.noAck = noAck;
        return this;
    }

    /**
     * basic.consume's no-ack (other clients call it autoAck): the broker counts a message as acknowledged once it
     * is sent. See {@link #noAck(boolean)} for what that costs.
     */
    public boolean noAck() {
        return noAck;
    }

    /** exclusive: the only consumer of the queue (403 ACCESS_REFUSED if there is another). */
    public ConsumeOptions exclusive(boolean exclusive) {
        this.exclusive = exclusive;
        return this;
    }

    public boolean exclusive() {
        return exclusive;
    }

    /**
     * One basic.consume argument; {@code null} removes it. Setting {@code x-stream-offset} drops a
     * {@link #streamOffset(StreamOffsetTracker) tracker} given before: the last call wins.
     */
    public ConsumeOptions argument(String name, Object value) {
        Objects.requireNonNull(name, "name");
        if (name.equals("x-stream-offset")) {
            streamOffsets = null;
        }
        if (value == null) {
            arguments.remove(name);
        } else {
            arguments.put(name, value);
        }
        return this;
    }

    /** Replaces the basic.consume arguments. */
    public ConsumeOptions arguments(Map<String, ?> arguments) {
        this.arguments.clear();
        if (arguments != null) {
            arguments.forEach(this::argument);
        }
        return this;
    }

    /**
     * basic.consume's arguments (x-priority, x-stream-offset, x-cancel-on-ha-failover, ...), unmodifiable. With a
     * {@link #streamOffsets() tracker}, {@code x-stream-offset} is the tracker's at the time of the call: each
     * basic.consume, recovery's included, reads it.
     */
    public Map<String, Object> arguments() {
        StreamOffsetTracker t = streamOffsets;
        if (t == null) {
            return Collections.unmodifiableMap(arguments);
        }
        Map<String, Object> withOffset = new LinkedHashMap<>(arguments);
        withOffset.put("x-stream-offset", t.consumeOffset());
        return Collections.unmodifiableMap(withOffset);
    }

    /** {@code x-priority}: consumers with a higher priority get messages first. */
    public ConsumeOptions priority(int priority) {
        return argument("x-priority", priority);
    }

    /**
     * {@code x-stream-offset} for a stream queue: {@code "first"}, {@code "last"}, {@code "next"}, or an
     * interval such as {@code "1h"} / {@code "30m"}.
     */
    public ConsumeOptions streamOffset(String spec) {
        return argument("x-stream-offset", Objects.requireNonNull(spec, "spec"));
    }

    /** {@code x-stream-offset} as an absolute offset in the stream. */
    public ConsumeOptions streamOffset(long offset) {
        if (offset < 0) {
            throw new IllegalArgumentException("stream offset must not be negative: " + offset);
        }
        return argument("x-stream-offset", offset);
    }

    /**
     * {@code x-stream-offset} from {@code tracker} at each basic.consume: its start at first, the message after
     * the last one processed on a re-consume (automatic recovery). Replaces an {@code x-stream-offset} argument.
     */
    public ConsumeOptions streamOffset(StreamOffsetTracker tracker) {
        this.streamOffsets = Objects.requireNonNull(tracker, "tracker");
        arguments.remove("x-stream-offset");
        return this;
    }

    /** {@code x-stream-offset} as a point in time (sent as an AMQP timestamp). */
    public ConsumeOptions streamOffset(Instant timestamp) {
        return argument("x-stream-offset", Objects.requireNonNull(timestamp, "timestamp"));
    }

    /** The tracker that supplies {@code x-stream-offset}, or {@code null}. */
    public StreamOffsetTracker streamOffsets() {
        return streamOffsets;
    }

    /** {@code x-cancel-on-ha-failover}: the broker cancels the consumer when the queue's leader moves. */
    public ConsumeOptions cancelOnHaFailover(boolean cancel) {
        return argument("x-cancel-on-ha-failover", cancel);
    }

    /**
     * basic.qos(prefetch, global=false) sent on the channel before basic.consume: RabbitMQ keeps at most
     * {@code prefetch} unacknowledged deliveries in flight to this consumer (0 = no limit). 0..65535.
     *
     * <p>Not set, a manual-ack consumer gets {@link #DEFAULT_PREFETCH} (250, as Spring AMQP's listener
     * containers), unless its channel has a basic.qos of its own ({@link Channel#basicQos}, which then applies
     * as it is); a noAck consumer gets no basic.qos (RabbitMQ ignores the prefetch without acknowledgements).
     * Without any limit the broker sends a manual-ack consumer the whole queue: a paused or slow consumer
     * then fills the socket, RabbitMQ's writer stalls on it and the broker drops the connection after its
     * send timeout (30 s). {@code prefetch(0)} asks for that explicitly.
     */
    public ConsumeOptions prefetch(int prefetch) {
        if (prefetch < 0 || prefetch > 0xFFFF) {
            throw new IllegalArgumentException("prefetch must be within 0..65535: " + prefetch);
        }
        this.prefetch = prefetch;
        return this;
    }

    /**
     * The prefetch sent with basic.qos (global=false) before basic.consume, as set with {@link #prefetch(int)};
     * -1 when it was not set: then a manual-ack consumer gets {@link #DEFAULT_PREFETCH}, unless its channel has a
     * basic.qos of its own ({@link Channel#basicQos}), and a noAck consumer no basic.qos.
     */
    public int prefetch() {
        return prefetch;
    }

    /**
     * Runs the handler on {@code executor} (a worker pool, virtual threads, a Vert.x context's executor)
     * instead of the connection's event loop; {@code null} for the event loop. Deliveries are still handed
     * over one at a time unless {@link #concurrency(int)} says more.
     *
     * <p>The executor must run or reject every task it accepts while the consumer lives: end the consumer
     * (cancel it, close its channel or connection) before shutting the executor down. A drain task it accepted
     * and dropped ({@code ExecutorService.shutdownNow()}) is taken back when the consumer ends and what waited
     * for it is released; with a concurrency above 1 each task is one delivery, and a dropped one is never
     * released.
     */
    public ConsumeOptions executor(Executor executor) {
        this.executor = executor;
        return this;
    }

    /** The handler on a new virtual thread per delivery batch; {@link VirtualThreads#executor()}. */
    public ConsumeOptions virtualThreads() {
        this.executor = VirtualThreads.executor();
        return this;
    }

    /** Where the handler runs; {@code null} for the connection's event loop. */
    public Executor executor() {
        return executor;
    }

    /**
     * How many deliveries are handled at once (default 1). Above 1 a {@link DeliveryHandler} runs on the
     * executor's threads in parallel (an executor is then required), and an {@link AsyncDeliveryHandler}
     * may have that many stages incomplete. 1..65535.
     */
    public ConsumeOptions concurrency(int concurrency) {
        if (concurrency < 1 || concurrency > 0xFFFF) {
            throw new IllegalArgumentException("concurrency must be within 1..65535: " + concurrency);
        }
        this.concurrency = concurrency;
        return this;
    }

    /** How many deliveries the consumer handles at once. */
    public int concurrency() {
        return concurrency;
    }

    /**
     * The consumer's queue pushes back (the connection stops reading from the socket) once it holds
     * {@code high} deliveries and stops pushing back once it holds fewer than {@code low}; see
     * {@link ConsumerHandle}. 1 &lt;= low &lt;= high. Unset, they are {@value #DEFAULT_HIGH_WATER_MARK} /
     * {@value #DEFAULT_LOW_WATER_MARK}, and with manual acknowledgement and a prefetch the larger of that and
     * twice the prefetch / the prefetch: a broker that keeps to the prefetch never reaches them, one that does
     * not is stopped there. Marks set below the prefetch stop reading even for a broker that keeps to it.
     */
    public ConsumeOptions waterMarks(int low, int high) {
        if (low < 1 || high < low) {
            throw new IllegalArgumentException("water marks need 1 <= low <= high: " + low + " / " + high);
        }
        this.lowWaterMark = low;
        this.highWaterMark = high;
        return this;
    }

    /** The consumer's queue stops pushing back once it holds fewer deliveries than this; {@link #waterMarks}. */
    public int lowWaterMark() {
        return highWaterMark == 0 ? derivedHighWaterMark() / 2 : lowWaterMark;
    }

    /** The consumer's queue pushes back once it holds this many deliveries; see {@link #waterMarks}. */
    public int highWaterMark() {
        return highWaterMark == 0 ? derivedHighWaterMark() : highWaterMark;
    }

    private int derivedHighWaterMark() {
        // a broker that keeps to the prefetch never fills the queue to the mark, so reading pauses only for
        // one that does not (with noAck the broker ignores the prefetch)
        int high = DEFAULT_HIGH_WATER_MARK;
        if (!noAck && prefetch > 0) {
            high = Math.max(high, 2 * prefetch);
        }
        return high;
    }

    /**
     * The demand the consumer starts with: 0 starts it paused (nothing reaches the handler until
     * {@link ConsumerHandle#fetch} or {@link ConsumerHandle#resume}), so that no delivery can come before the
     * application is ready for it; {@code Long.MAX_VALUE} (the default) means no limit.
     */
    public ConsumeOptions initialDemand(long demand) {
        if (demand < 0) {
            throw new IllegalArgumentException("initialDemand must not be negative: " + demand);
        }
        this.initialDemand = demand;
        return this;
    }

    /** How many deliveries the handler gets before a fetch or resume; {@code Long.MAX_VALUE} (default) = no limit. */
    public long initialDemand() {
        return initialDemand;
    }

    /**
     * noAck only: once the consumer's queue holds its high-water mark ({@link #waterMarks}), a delivery that arrives
     * is dropped (released, never handed to the handler, counted in {@link
     * ClientMetrics#overflowDeliveriesDropped()}) instead of the connection pausing its reading. The queue keeps the
     * oldest deliveries, and memory stays bounded while the connection, its other consumers and its method replies go
     * on however long the consumer stays paused or slow.
     * Off by default: nothing is dropped, and the connection stops reading instead (see {@link ConsumerHandle}).
     * {@link Channel#consume} fails with {@link IllegalArgumentException} when this is set without {@link
     * #noAck(boolean)}: a manual-ack consumer is bounded by its prefetch, and a dropped delivery would stay
     * unacknowledged at the broker.
     */
    public ConsumeOptions dropOverflow(boolean dropOverflow) {
        this.dropOverflow = dropOverflow;
        return this;
    }

    /** Whether a noAck consumer drops what arrives while its queue is full; {@link #dropOverflow(boolean)}. */
    public boolean dropOverflow() {
        return dropOverflow;
    }

    @Override
    public String toString() {
        return "ConsumeOptions{consumerTag='" + consumerTag + "', noAck=" + noAck + ", exclusive=" + exclusive
                + ", arguments=" + arguments + ", prefetch=" + prefetch + ", executor="
                + (executor == null ? "event loop" : executor) + ", concurrency=" + concurrency + ", waterMarks="
                + lowWaterMark() + "/" + highWaterMark()
                + (initialDemand == Long.MAX_VALUE ? "" : ", initialDemand=" + initialDemand)
                + (dropOverflow ? ", dropOverflow" : "") + "}";
    }
}
