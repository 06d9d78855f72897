package io.warren.flow;

import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import java.util.Objects;
import java.util.concurrent.Flow;

/**
 * A queue's deliveries as a {@link Flow.Publisher}: each {@link #subscribe subscription} starts one consumer
 * (basic.qos, basic.consume) on the channel, and cancelling the subscription cancels it (basic.cancel).
 *
 * <h2>Demand</h2>
 * {@code request(n)} is the consumer's demand ({@link io.warren.ConsumerHandle#fetch}): no delivery reaches
 * {@code onNext} without it. The broker keeps the backlog: with manual acknowledgement it sends at most the
 * prefetch ({@link ConsumeOptions#prefetch}; when the options have none, the channel's own basic.qos or
 * {@value ConsumeOptions#DEFAULT_PREFETCH}, as for {@link Channel#consume}) of
 * deliveries not yet acknowledged, so the client holds no more than the prefetch whatever the demand, and the
 * rest stays in the queue. AMQP 0-9-1 has no credit finer than that: demand above the prefetch is served as the
 * subscriber acknowledges. A prefetch about the subscriber's request size keeps what the client holds close to
 * what was asked for. With {@code noAck} (auto-ack) the broker does not wait for anything: the client's queue
 * stops the connection's reading at its high-water mark instead (see {@link io.warren.ConsumerHandle}).
 *
 * <p>Demand survives recovery: the consumer is started again on the recovered connection with its tag, and what
 * was requested and not yet delivered is delivered from there. Deliveries received on the lost connection that
 * the subscriber had not taken are not emitted (the broker requeues them).
 *
 * <h2>Signals</h2>
 * Signals are serial: never two at once, each one happening before the next. {@code onSubscribe} runs on the
 * thread calling {@code subscribe}, {@code onNext} on the consumer's context (the connection's event loop unless
 * the options name an executor). {@code onComplete} and {@code onError} run where their cause is met: the event
 * loop for the consumer's end, the thread that fails basic.consume (the one calling {@code subscribe} when
 * consume refuses at once), the thread calling {@code request} with {@code n <= 0}, the consumer's context when
 * the {@link #limit} is reached (the thread calling {@code subscribe} for a limit of 0); one that comes while
 * {@code onSubscribe} or {@code onNext} runs is signalled on that thread as it returns. A subscriber that needs
 * them on its own thread hands them over itself. {@code onComplete} follows a basic.cancel from the broker (the
 * queue was deleted, ...), the orderly close of the channel or connection by the application (reply code 200),
 * or the {@link #limit} being reached; {@code onError} follows a failure of the channel or connection (the broker
 * closed it, the connection was lost and not recovered, the queue does not exist: 404 closes the channel) and a
 * {@code request} with {@code n <= 0}.
 *
 * <h2>Ownership and settlement</h2>
 * {@code onNext} borrows the delivery, as a {@link io.warren.DeliveryHandler} does: Warren releases it when
 * {@code onNext} returns. Map it to your own type there (read the body, {@link Delivery#properties()}), or
 * {@link Delivery#retain()} it and release it later. With manual acknowledgement (the default) the subscriber
 * settles each delivery ({@link Delivery#ack()}, {@code nack}, {@code reject}), from any thread and also after
 * the release; unsettled deliveries count against the prefetch and stop the flow once it is reached. With
 * {@code noAck(true)} there is nothing to settle. A delivery that reaches the publisher after the subscription
 * was cancelled or completed is rejected with requeue.
 */
public final class DeliveryPublisher implements Flow.Publisher<Delivery> {

    private final Channel channel;
    private final String queue;
    private final ConsumeOptions options;
    private final long limit;

    private DeliveryPublisher(Channel channel, String queue, ConsumeOptions options, long limit) {
        this.channel = channel;
        this.queue = queue;
        this.options = options;
        this.limit = limit;
    }

    /**
     * A publisher of {@code queue}'s deliveries on {@code channel}. The options are those of
     * {@link Channel#consume} but for the demand (the subscriber's) and the concurrency (1: signals are serial);
     * without a prefetch, a manual-ack consumer gets what {@link Channel#consume} gives it: the channel's own
     * basic.qos, else {@value ConsumeOptions#DEFAULT_PREFETCH}.
     *
     * @throws IllegalArgumentException when the options ask for a concurrency above 1
     */
    public static DeliveryPublisher of(Channel channel, String queue, ConsumeOptions options) {
        Objects.requireNonNull(channel, "channel");
        Objects.requireNonNull(queue, "queue");
        Objects.requireNonNull(options, "options");
        if (options.concurrency() != 1) {
            throw new IllegalArgumentException("a Flow.Publisher signals one delivery at a time: concurrency must "
                    + "be 1, not " + options.concurrency());
        }
        return new DeliveryPublisher(channel, queue, new ConsumeOptions(options).initialDemand(0), Long.MAX_VALUE);
    }

    /** {@link #of(Channel, String, ConsumeOptions)} with manual acknowledgement and the default prefetch. */
    public static DeliveryPublisher of(Channel channel, String queue) {
        return of(channel, queue, new ConsumeOptions());
    }

    /**
     * The same publisher, completing each subscription after {@code count} deliveries (a job that takes a known
     * number of messages): the consumer is cancelled after the last one and never handed more (with manual
     * acknowledgement, deliveries the broker sent beyond it go back to the queue; with {@code noAck} the broker
     * has forgotten them). {@code Long.MAX_VALUE}: no limit.
     */
    public DeliveryPublisher limit(long count) {
        if (count < 0) {
            throw new IllegalArgumentException("limit must not be negative: " + count);
        }
        return new DeliveryPublisher(channel, queue, options, count);
    }

    /** A copy of the options each subscription's consumer is started with. */
    public ConsumeOptions options() {
        return new ConsumeOptions(options);
    }

    /** Starts a consumer for {@code subscriber}; see the class comment for its signals. Any thread. */
    @Override
    public void subscribe(Flow.Subscriber<? super Delivery> subscriber) {
        Objects.requireNonNull(subscriber, "subscriber"); // rule 1.9
        new DeliverySubscription(subscriber, limit, options.noAck()).start(channel, queue, options);
    }

    @Override
    public String toString() {
        return "DeliveryPublisher(queue '" + queue + "', " + options
                + (limit == Long.MAX_VALUE ? "" : ", limit " + limit) + ")";
    }
}
