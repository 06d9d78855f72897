package io.warren;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * How a consumer is started by {@link Channel#consume}: the basic.consume arguments, its prefetch, where its
 * handler runs, how many deliveries it handles at once and when it pushes back. Immutable; build one with
 * {@link #builder()}. The defaults: a server-generated tag, manual acknowledgement, not exclusive, no
 * arguments, no basic.qos, the handler on the connection's event loop, one delivery at a time, water marks
 * {@value #DEFAULT_LOW_WATER_MARK} / {@value #DEFAULT_HIGH_WATER_MARK}.
 *
 * <pre>{@code
 * ConsumeOptions.builder().prefetch(1000).executor(workers).concurrency(8).build()
 * ConsumeOptions.builder().noAck(true).waterMarks(1000, 5000).build()
 * ConsumeOptions.builder().prefetch(100).streamOffset("first").build()      // a stream queue
 * }</pre>
 */
public final class ConsumeOptions {

    /** Default high-water mark: the consumer's queue pushes back once it holds this many deliveries. */
    public static final int DEFAULT_HIGH_WATER_MARK = 1024;

    /** Default low-water mark: the push-back ends once the queue holds fewer deliveries than this. */
    public static final int DEFAULT_LOW_WATER_MARK = 512;

    private static final ConsumeOptions DEFAULTS = builder().build();

    private final String consumerTag;
    private final boolean noAck;
    private final boolean exclusive;
    private final Map<String, Object> arguments;
    private final StreamOffsetTracker streamOffsets;
    private final int prefetch;
    private final Executor executor;
    private final int concurrency;
    private final int lowWaterMark;
    private final int highWaterMark;
    private final long initialDemand;

    private ConsumeOptions(Builder b) {
        this.consumerTag = b.consumerTag;
        this.noAck = b.noAck;
        this.exclusive = b.exclusive;
        this.arguments = Collections.unmodifiableMap(new LinkedHashMap<>(b.arguments));
        this.streamOffsets = b.streamOffsets;
        this.prefetch = b.prefetch;
        this.executor = b.executor;
        this.concurrency = b.concurrency;
        this.lowWaterMark = b.lowWaterMark;
        this.highWaterMark = b.highWaterMark;
        this.initialDemand = b.initialDemand;
    }

    /** The defaults (see the class comment). */
    public static ConsumeOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding these options, to change some. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.consumerTag = consumerTag;
        b.noAck = noAck;
        b.exclusive = exclusive;
        b.arguments.putAll(arguments);
        b.streamOffsets = streamOffsets;
        b.prefetch = prefetch;
        b.executor = executor;
        b.concurrency = concurrency;
        b.lowWaterMark = lowWaterMark;
        b.highWaterMark = highWaterMark;
        b.initialDemand = initialDemand;
        return b;
    }

    /** The consumer tag asked for; {@code ""} lets the broker generate one. */
    public String consumerTag() {
        return consumerTag;
    }

    /** basic.consume's no-ack: the broker counts a message as acknowledged once it is sent. */
    public boolean noAck() {
        return noAck;
    }

    public boolean exclusive() {
        return exclusive;
    }

    /**
     * basic.consume's arguments (x-priority, x-stream-offset, x-cancel-on-ha-failover, ...). With a
     * {@link #streamOffsets() tracker}, {@code x-stream-offset} is the tracker's at the time of the call: each
     * basic.consume, recovery's included, reads it.
     */
    public Map<String, Object> arguments() {
        StreamOffsetTracker t = streamOffsets;
        if (t == null) {
            return arguments;
        }
        Map<String, Object> withOffset = new LinkedHashMap<>(arguments);
        withOffset.put("x-stream-offset", t.consumeOffset());
        return Collections.unmodifiableMap(withOffset);
    }

    /** The tracker that supplies {@code x-stream-offset}, or {@code null}. */
    public StreamOffsetTracker streamOffsets() {
        return streamOffsets;
    }

    /** The prefetch sent with basic.qos (global=false) before basic.consume, or -1 for no basic.qos. */
    public int prefetch() {
        return prefetch;
    }

    /** Where the handler runs; {@code null} for the connection's event loop. */
    public Executor executor() {
        return executor;
    }

    /** How many deliveries the consumer handles at once. */
    public int concurrency() {
        return concurrency;
    }

    public int lowWaterMark() {
        return lowWaterMark;
    }

    public int highWaterMark() {
        return highWaterMark;
    }

    /** How many deliveries the handler gets before a fetch or resume; {@code Long.MAX_VALUE} (default) = no limit. */
    public long initialDemand() {
        return initialDemand;
    }

    @Override
    public String toString() {
        return "ConsumeOptions{consumerTag='" + consumerTag + "', noAck=" + noAck + ", exclusive=" + exclusive
                + ", arguments=" + arguments + ", prefetch=" + prefetch + ", executor="
                + (executor == null ? "event loop" : executor) + ", concurrency=" + concurrency + ", waterMarks="
                + lowWaterMark + "/" + highWaterMark
                + (initialDemand == Long.MAX_VALUE ? "" : ", initialDemand=" + initialDemand) + "}";
    }

    /** Builds {@link ConsumeOptions}; setters validate at once and throw {@link IllegalArgumentException}. */
    public static final class Builder {

        private String consumerTag = "";
        private boolean noAck;
        private boolean exclusive;
        private final Map<String, Object> arguments = new LinkedHashMap<>();
        private StreamOffsetTracker streamOffsets;
        private int prefetch = -1;
        private Executor executor;
        private int concurrency = 1;
        private int lowWaterMark = DEFAULT_LOW_WATER_MARK;
        private int highWaterMark = DEFAULT_HIGH_WATER_MARK;
        private long initialDemand = Long.MAX_VALUE;

        private Builder() {
        }

        /** The consumer tag (unique on the channel); {@code ""} (the default) lets the broker generate one. */
        public Builder consumerTag(String consumerTag) {
            this.consumerTag = Objects.requireNonNull(consumerTag, "consumerTag");
            return this;
        }

        /** noAck: no acknowledgements; the broker forgets a message once sent. Off by default. */
        public Builder noAck(boolean noAck) {
            this.noAck = noAck;
            return this;
        }

        /** exclusive: the only consumer of the queue (403 ACCESS_REFUSED if there is another). */
        public Builder exclusive(boolean exclusive) {
            this.exclusive = exclusive;
            return this;
        }

        /** One basic.consume argument; {@code null} removes it. */
        public Builder argument(String name, Object value) {
            Objects.requireNonNull(name, "name");
            if (value == null) {
                arguments.remove(name);
            } else {
                arguments.put(name, value);
            }
            return this;
        }

        /** Replaces the basic.consume arguments. */
        public Builder arguments(Map<String, ?> arguments) {
            this.arguments.clear();
            if (arguments != null) {
                arguments.forEach(this::argument);
            }
            return this;
        }

        /** {@code x-priority}: consumers with a higher priority get messages first. */
        public Builder priority(int priority) {
            return argument("x-priority", priority);
        }

        /**
         * {@code x-stream-offset} for a stream queue: {@code "first"}, {@code "last"}, {@code "next"}, or an
         * interval such as {@code "1h"} / {@code "30m"}.
         */
        public Builder streamOffset(String spec) {
            return argument("x-stream-offset", Objects.requireNonNull(spec, "spec"));
        }

        /** {@code x-stream-offset} as an absolute offset in the stream. */
        public Builder streamOffset(long offset) {
            if (offset < 0) {
                throw new IllegalArgumentException("stream offset must not be negative: " + offset);
            }
            return argument("x-stream-offset", offset);
        }

        /**
         * {@code x-stream-offset} from {@code tracker} at each basic.consume: its start at first, the message after
         * the last one processed on a re-consume (automatic recovery). Replaces an {@code x-stream-offset} argument.
         */
        public Builder streamOffset(StreamOffsetTracker tracker) {
            this.streamOffsets = Objects.requireNonNull(tracker, "tracker");
            arguments.remove("x-stream-offset");
            return this;
        }

        /** {@code x-stream-offset} as a point in time (sent as an AMQP timestamp). */
        public Builder streamOffset(Instant timestamp) {
            return argument("x-stream-offset", Objects.requireNonNull(timestamp, "timestamp"));
        }

        /** {@code x-cancel-on-ha-failover}: the broker cancels the consumer when the queue's leader moves. */
        public Builder cancelOnHaFailover(boolean cancel) {
            return argument("x-cancel-on-ha-failover", cancel);
        }

        /**
         * basic.qos(prefetch, global=false) sent on the channel before basic.consume: RabbitMQ keeps at most
         * {@code prefetch} unacknowledged deliveries in flight to this consumer (0 = no limit). 0..65535.
         */
        public Builder prefetch(int prefetch) {
            if (prefetch < 0 || prefetch > 0xFFFF) {
                throw new IllegalArgumentException("prefetch must be within 0..65535: " + prefetch);
            }
            this.prefetch = prefetch;
            return this;
        }

        /**
         * Runs the handler on {@code executor} (a worker pool, virtual threads, a Vert.x context's executor)
         * instead of the connection's event loop; {@code null} for the event loop. Deliveries are still handed
         * over one at a time unless {@link #concurrency(int)} says more.
         */
        public Builder executor(Executor executor) {
            this.executor = executor;
            return this;
        }

        /** The handler on a new virtual thread per delivery batch; {@link VirtualThreads#executor()}. */
        public Builder virtualThreads() {
            this.executor = VirtualThreads.executor();
            return this;
        }

        /**
         * How many deliveries are handled at once (default 1). Above 1 a {@link DeliveryHandler} runs on the
         * executor's threads in parallel (an executor is then required), and an {@link AsyncDeliveryHandler}
         * may have that many stages incomplete. 1..65535.
         */
        public Builder concurrency(int concurrency) {
            if (concurrency < 1 || concurrency > 0xFFFF) {
                throw new IllegalArgumentException("concurrency must be within 1..65535: " + concurrency);
            }
            this.concurrency = concurrency;
            return this;
        }

        /**
         * The consumer's queue pushes back once it holds {@code high} deliveries and stops pushing back once it
         * holds fewer than {@code low}; see {@link ConsumerHandle}. 1 &lt;= low &lt;= high.
         */
        public Builder waterMarks(int low, int high) {
            if (low < 1 || high < low) {
                throw new IllegalArgumentException("water marks need 1 <= low <= high: " + low + " / " + high);
            }
            this.lowWaterMark = low;
            this.highWaterMark = high;
            return this;
        }

        /**
         * The demand the consumer starts with: 0 starts it paused (nothing reaches the handler until
         * {@link ConsumerHandle#fetch} or {@link ConsumerHandle#resume}), so that no delivery can come before the
         * application is ready for it; {@code Long.MAX_VALUE} (the default) means no limit.
         */
        public Builder initialDemand(long demand) {
            if (demand < 0) {
                throw new IllegalArgumentException("initialDemand must not be negative: " + demand);
            }
            this.initialDemand = demand;
            return this;
        }

        public ConsumeOptions build() {
            return new ConsumeOptions(this);
        }
    }
}
