package io.warren.impl.consume;

import io.warren.AmqpException;
import io.warren.ChannelLostException;
import io.warren.ConnectionLostException;
import io.warren.ConsumerHandle;
import io.warren.impl.channel.ChannelState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumers of a channel lost with its connection, and their hand-over to the recovered channel: they do not
 * end with the loss, they wait here until recovery starts them again on the new channel (with their tags and
 * options) or gives up and ends them. Kept apart from {@link ChannelConsumers} because it is recovery's part of
 * consuming: the live channel never reads it. Event loop only.
 */
final class LostConsumers {

    private static final Logger LOG = LoggerFactory.getLogger(LostConsumers.class);

    private ConsumerImpl[] lost = new ConsumerImpl[0];

    /**
     * The channel was lost: these consumers wait for recovery. Added to those already waiting: a consumer whose
     * basic.consume this channel's loss failed may have come first ({@link #moveTo}).
     */
    void keep(ConsumerImpl... consumers) {
        if (lost.length == 0) {
            lost = consumers;
            return;
        }
        ConsumerImpl[] more = Arrays.copyOf(lost, lost.length + consumers.length);
        System.arraycopy(consumers, 0, more, lost.length, consumers.length);
        lost = more;
    }

    /**
     * Starts the lost consumers again on {@code target} ({@link ConsumeRequest}: basic.qos first when they had a
     * prefetch, then basic.consume) on their queue's current name. A consumer the broker refuses ends with the refusal; one whose
     * basic.consume is failed by the loss of {@code target} (before consume-ok) waits with {@code target}'s own
     * consumers for the next recovery, and so do the others when a refusal that recovery repairs closed {@code target}
     * ({@link ChannelConsumers#refusedConsume}). Completes when every basic.consume is answered.
     *
     * @param unpausedOnly only the consumers that do not hold reading paused (the others stay for a later call)
     */
    CompletionStage<Void> moveTo(ChannelConsumers target, UnaryOperator<String> queueNames, boolean unpausedOnly) {
        // first, and in either pass: a consumer the application cancelled, or one that only waits for its cancel, is
        // not started again (a paused one would otherwise wait for a second pass that may not come)
        ConsumerImpl[] moving = startingAgain(lost);
        lost = new ConsumerImpl[0];
        if (unpausedOnly) {
            ConsumerImpl[] paused = Arrays.stream(moving)
                    .filter(ConsumerImpl::holdsReadingPaused)
                    .toArray(ConsumerImpl[]::new);
            moving = Arrays.stream(moving).filter(c -> !c.holdsReadingPaused()).toArray(ConsumerImpl[]::new);
            lost = paused;
        }
        ChannelState state = target.state();
        int number = target.number();
        CompletableFuture<?>[] all = new CompletableFuture<?>[moving.length];
        for (int i = 0; i < moving.length; i++) {
            ConsumerImpl c = moving[i];
            String queue = queueNames.apply(c.queue());
            CompletableFuture<ConsumerHandle> done = new CompletableFuture<>();
            ConsumeRequest request = build(state, number, queue, c, done);
            all[i] = done.handle((h, e) -> {
                if (e instanceof ChannelLostException refusal
                        && request != null
                        && request.consumeSent()
                        && target.refusedConsume(refusal)) {
                    // the broker refused this basic.consume, which closed the channel: recovery re-opens it without
                    // this consumer (not one that waited behind a basic.consume that timed out on the wire)
                    LOG.warn(
                            "channel {}: consumer '{}' on queue '{}' could not be recovered: {}",
                            number,
                            c.consumerTag(),
                            queue,
                            refusal.getCause().getMessage());
                    c.end((AmqpException) refusal.getCause());
                } else if (e instanceof ConnectionLostException || e instanceof ChannelLostException) {
                    // the new channel went before consume-ok: the broker has no such consumer, and the next
                    // recovery moves it on with the channel's other lost consumers
                    target.keepLost(c);
                } else if (e != null) {
                    LOG.warn(
                            "channel {}: consumer '{}' on queue '{}' could not be recovered: {}",
                            number,
                            c.consumerTag(),
                            queue,
                            e.toString());
                    c.end(
                            e instanceof AmqpException a
                                    ? a
                                    : new AmqpException(
                                            "consumer '" + c.consumerTag() + "' could not be recovered: " + e, e));
                }
                return null;
            });
            if (request == null) {
                continue;
            }
            request.call(
                    state,
                    (reply, f) -> {
                        // registered before any of its deliveries can arrive: the broker sends consume-ok first
                        c.rebind(target, queue);
                        target.add(c);
                        f.complete(c);
                        c.cancelHeldCancel(); // cancelled while its basic.consume was on the way
                    },
                    (reply, f) -> {
                        // consume-ok after the basic.consume timed out, which ended the consumer: the broker has it
                        LOG.warn(
                                "channel {}: consume-ok for consumer '{}' on queue '{}' came after its recovery timed"
                                        + " out; it is cancelled, and what it received meanwhile goes back to the queue",
                                number,
                                c.consumerTag(),
                                queue);
                        c.cancelRestartedAfterEnd(target, queue);
                    },
                    done);
        }
        return CompletableFuture.allOf(all).thenApply(v -> null);
    }

    /** {@code c}'s frames for {@code target}; null when they cannot be built: then {@code done} has failed. */
    private static ConsumeRequest build(
            ChannelState state, int number, String queue, ConsumerImpl c, CompletableFuture<ConsumerHandle> done) {
        try {
            return ConsumeRequest.build(
                    state.alloc(),
                    number,
                    queue,
                    c.consumerTag(),
                    c.options(),
                    state.connection().facade().frameMax());
        } catch (RuntimeException e) {
            done.completeExceptionally(e);
            return null;
        }
    }

    /**
     * Of {@code consumers}, those recovery starts again; the others end here (or have ended): a consumer that ended
     * while its cancel was on the way (started after its basic.consume timed out), one the application cancelled while
     * the connection was down (the broker has none, nor gets one), one whose deliveries are closed and which only
     * waited for its cancel-ok (unwanted, or its executor refused it).
     */
    private static ConsumerImpl[] startingAgain(ConsumerImpl[] consumers) {
        List<ConsumerImpl> again = new ArrayList<>(consumers.length);
        for (ConsumerImpl c : consumers) {
            if (!c.isActive()) {
                continue;
            }
            if (c.cancelRequested()) {
                c.endCancelled();
            } else if (c.deliveriesClosed()) {
                c.end(new AmqpException("consumer '" + c.consumerTag() + "' was being cancelled when its channel was"
                        + " lost (its basic.cancel unanswered): not started again"));
            } else {
                again.add(c);
            }
        }
        return again.toArray(ConsumerImpl[]::new);
    }

    /** The lost consumers that will not start again end now ({@link #startingAgain}); the others keep waiting. */
    void settle() {
        lost = startingAgain(lost);
    }

    /** Adds the queues of the waiting consumers that consume exclusively to {@code into}. */
    void exclusiveQueues(java.util.Collection<String> into) {
        for (ConsumerImpl c : lost) {
            if (c.isActive() && c.options().exclusive()) {
                into.add(c.queue());
            }
        }
    }

    /** Adds the queues of the lost consumers that will start again to {@code into} (as named before the loss). */
    void queues(java.util.Collection<String> into) {
        for (ConsumerImpl c : lost) {
            if (c.isActive()) {
                into.add(c.queue());
            }
        }
    }

    /** Recovery will not happen: the lost consumers end with {@code cause}. */
    void endAll(AmqpException cause) {
        ConsumerImpl[] all = lost;
        lost = new ConsumerImpl[0];
        for (ConsumerImpl c : all) {
            c.end(cause);
        }
    }
}
