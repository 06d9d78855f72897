package io.warren;

import java.time.Duration;
import java.util.Objects;

/**
 * Automatic recovery: what a connection does when it is lost (socket closed or reset, missed heartbeats, the
 * broker's hard error such as 320 CONNECTION_FORCED from {@code rabbitmqctl close_connection}). Mutable with
 * fluent setters; {@link ConnectionOptions#recovery(RecoveryOptions)} copies it.
 *
 * <p>On by default. The connection reconnects across its addresses with exponential backoff and jitter,
 * re-opens its channels with the same numbers, restores their qos, tx and confirm modes, declares the recorded
 * topology again (exchanges, queues, bindings) and restarts the consumers with their tags and options. The
 * {@link Connection}, {@link Channel} and {@link ConsumerHandle} objects stay the same. What recovery never
 * does: an application's {@link Connection#close()} is final, and so is a refusal by the broker that a retry
 * cannot fix (authentication, an unknown virtual host, access refused). An event loop that shuts down while the
 * connection is being recovered (waiting to reconnect, connecting or restoring) ends the recovery as {@link
 * #maxAttempts} running out does: the close future completes with a {@link ConnectionClosedException} that says so.
 *
 * <p>What the application sees meanwhile is in {@link RecoveryListener}; unconfirmed publishes fail with a
 * retryable {@link PublishNotConfirmedException} whose cause is a {@link ConnectionLostException}, and
 * deliveries received before the loss cannot be acknowledged ({@link StaleDeliveryException}): the broker
 * redelivers them, flagged redelivered.
 *
 * <p>A synchronous method the application calls on a channel while it recovers (a declare, bind, delete or purge,
 * basic.qos, basic.get, basic.recover, a consume) waits, and is sent once the channel, its modes, the topology and
 * its consumers are back: it never reaches a re-opened channel before the queues it names are declared again. It
 * waits at most the connection's {@link ConnectionOptions#rpcTimeout RPC timeout} from its call, then fails unsent
 * with {@link RpcTimeoutException}; once sent, its reply is awaited for what is left of that timeout; it fails with the
 * cause when the channel will not be recovered, and with a {@link ConnectionClosedException} when the connection's
 * event loop shuts down meanwhile. Held methods and the publishes held meanwhile go to the channel in one order, the
 * order of the calls (from several threads, the order in which they reached the channel's event loop), as they would
 * have on an open channel: a publish made after a queue.declare is written after it, so the queue exists for it. As on
 * an open channel, a method waits for the replies to the methods before it and a publish waits for none: a publish made
 * after two declares may reach the broker before the second. A held method naming a server-named queue that recovery
 * declared again under a new name fails unsent (see {@link RecoveryListener#queueRenamed}): recovery moved the queue's
 * bindings and consumers to the new one, and the old one is gone, or left behind if it was durable. Transaction and
 * confirm methods are not held: they go through the channel's publisher, whose publishes a loss fails or holds.
 *
 * <p>A named exclusive queue, or an exclusive consumer's queue, can still be held for the lost connection when the
 * broker did not see the loss: see {@link #awaitExclusiveRelease(boolean)}.
 */
public final class RecoveryOptions {

    /** What a publish does while its channel is being recovered. */
    public enum PublishDuringRecovery {
        /**
         * The publish is held by the client (its bytes count against {@link PublishOptions#maxPendingBytes()})
         * and sent once the channel and the topology are back, in call order with the synchronous methods held
         * meanwhile; it fails with a {@link PublishNotConfirmedException} (not written, retryable) when recovery
         * takes longer than {@link #publishWaitTimeout()} or gives up, or the connection's event loop shuts down
         * meanwhile. Publishes accepted before the loss but not yet written (held
         * for the confirm window or a blocked connection, or refused by the socket on their caller's thread) are
         * held the same way and written first, in order: they
         * never reached the broker, so this cannot duplicate them. A publish made from a callback of something the
         * loss failed (a retry in a failed declare's or publish's callback, on the event loop) is held too, behind
         * those.
         */
        WAIT,
        /**
         * The publish fails at once with a {@link PublishNotConfirmedException} (not written, retryable), and so do
         * those accepted before the loss but not yet written.
         */
        FAIL_FAST
    }

    private boolean enabled = true;
    private boolean topologyRecovery = true;
    private Duration initialDelay = Duration.ofMillis(500);
    private Duration maxDelay = Duration.ofSeconds(30);
    private double multiplier = 2.0;
    private double jitter = 0.5;
    private int maxAttempts;
    private Duration maxDuration;
    private PublishDuringRecovery publishDuringRecovery = PublishDuringRecovery.WAIT;
    private Duration publishWaitTimeout = Duration.ofSeconds(30);
    private boolean awaitExclusiveRelease;

    public RecoveryOptions() {}

    public RecoveryOptions(RecoveryOptions other) {
        this.enabled = other.enabled;
        this.topologyRecovery = other.topologyRecovery;
        this.initialDelay = other.initialDelay;
        this.maxDelay = other.maxDelay;
        this.multiplier = other.multiplier;
        this.jitter = other.jitter;
        this.maxAttempts = other.maxAttempts;
        this.maxDuration = other.maxDuration;
        this.publishDuringRecovery = other.publishDuringRecovery;
        this.publishWaitTimeout = other.publishWaitTimeout;
        this.awaitExclusiveRelease = other.awaitExclusiveRelease;
    }

    /** Automatic recovery on (the default) or off. Off, a lost connection is closed for good. */
    public RecoveryOptions enabled(boolean enabled) {
        this.enabled = enabled;
        return this;
    }

    public boolean enabled() {
        return enabled;
    }

    /** Whether exchanges, queues, bindings and consumers are restored (on by default). */
    public RecoveryOptions topologyRecovery(boolean on) {
        this.topologyRecovery = on;
        return this;
    }

    public boolean topologyRecovery() {
        return topologyRecovery;
    }

    /**
     * The backoff between reconnection attempts: attempt n waits {@code min(max, initial * multiplier^(n-1))},
     * less a random part of up to {@code jitter} of it (0..1). Defaults: 500 ms, 30 s, 2.0, 0.5.
     */
    public RecoveryOptions backoff(Duration initial, Duration max, double multiplier, double jitter) {
        Objects.requireNonNull(initial, "initial");
        Objects.requireNonNull(max, "max");
        if (initial.isNegative() || max.compareTo(initial) < 0) {
            throw new IllegalArgumentException("backoff needs 0 <= initial <= max: " + initial + ", " + max);
        }
        Durations.withinTimers(max, "backoff max");
        if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
            throw new IllegalArgumentException("backoff multiplier must be at least 1: " + multiplier);
        }
        if (!(jitter >= 0.0 && jitter <= 1.0)) {
            throw new IllegalArgumentException("backoff jitter must be within 0..1: " + jitter);
        }
        this.initialDelay = initial;
        this.maxDelay = max;
        this.multiplier = multiplier;
        this.jitter = jitter;
        return this;
    }

    public Duration initialDelay() {
        return initialDelay;
    }

    public Duration maxDelay() {
        return maxDelay;
    }

    public double multiplier() {
        return multiplier;
    }

    public double jitter() {
        return jitter;
    }

    /**
     * Gives up after this many failed reconnection attempts (0, the default: no limit). Giving up closes the
     * connection: {@link Connection#closeFuture()} completes with why, and
     * {@link RecoveryListener#recoveryFailed} is told {@code willRetry=false}.
     */
    public RecoveryOptions maxAttempts(int attempts) {
        if (attempts < 0) {
            throw new IllegalArgumentException("maxAttempts must not be negative: " + attempts);
        }
        this.maxAttempts = attempts;
        return this;
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    /** Gives up when the connection has not recovered this long after the loss ({@code null}, the default: never). */
    public RecoveryOptions maxDuration(Duration duration) {
        this.maxDuration = duration == null ? null : Durations.positive(duration, "maxDuration");
        return this;
    }

    public Duration maxDuration() {
        return maxDuration;
    }

    /** What a publish does while its channel recovers; {@link PublishDuringRecovery#WAIT} by default. */
    public RecoveryOptions publishDuringRecovery(PublishDuringRecovery policy) {
        this.publishDuringRecovery = Objects.requireNonNull(policy, "policy");
        return this;
    }

    public PublishDuringRecovery publishDuringRecovery() {
        return publishDuringRecovery;
    }

    /** How long a publish held during recovery ({@link PublishDuringRecovery#WAIT}) waits at most; 30 s by default. */
    public RecoveryOptions publishWaitTimeout(Duration timeout) {
        this.publishWaitTimeout = Durations.positive(Objects.requireNonNull(timeout, "timeout"), "publishWaitTimeout");
        return this;
    }

    public Duration publishWaitTimeout() {
        return publishWaitTimeout;
    }

    /**
     * Whether topology recovery waits for the broker to let go of what the lost connection held exclusively (off by
     * default). When the broker did not see the loss (a partition, a reset that never reached it) it keeps the old
     * connection until its heartbeat check gives up on it, two to three heartbeat intervals after it last heard from
     * it, and meanwhile refuses the declaration of the named exclusive queues it owns (405 RESOURCE_LOCKED) and an
     * exclusive basic.consume on the queues of its exclusive consumers (403 ACCESS_REFUSED). Off, such a consumer ends
     * with the refusal (as it does when another connection has taken its queue, with the option on or off) and its
     * channel is opened again without it, with its modes and other consumers. On, recovery declares such a queue again,
     * and looks for the queue of an exclusive consumer to have no consumer before it starts it, until three heartbeat
     * intervals and a second after the loss; the rest of the restore waits meanwhile. Turn it on when those queues and
     * consumers are this application's own; leave it off when another instance takes them over at a loss (an exclusive
     * queue as a lock, an active/standby pair of exclusive consumers), whose recovery would wait for nothing. Without
     * heartbeats nothing waits.
     */
    public RecoveryOptions awaitExclusiveRelease(boolean on) {
        this.awaitExclusiveRelease = on;
        return this;
    }

    public boolean awaitExclusiveRelease() {
        return awaitExclusiveRelease;
    }

    @Override
    public String toString() {
        return "RecoveryOptions{enabled=" + enabled + ", topology=" + topologyRecovery + ", backoff=" + initialDelay
                + ".." + maxDelay + " x" + multiplier + " jitter " + jitter + ", maxAttempts=" + maxAttempts
                + ", maxDuration=" + maxDuration + ", publish=" + publishDuringRecovery + " " + publishWaitTimeout
                + ", awaitExclusiveRelease=" + awaitExclusiveRelease + "}";
    }
}
