package io.warren.perf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.warren.Channel;
import io.warren.PublishNackedException;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;

/**
 * One {@link WarrenDriver} producer: the loop of its publishing thread on its own channel, already open (and in
 * confirm mode when {@code confirms} is given). See {@link WarrenDriver} for how it publishes and waits.
 *
 * <p>Each publish waits, in this order: for its turn ({@link PublishGate}: the pacer's slot, then room in the tool's
 * confirm window), as amqp-client's producer does; then it is stamped; then it waits while Warren is not writable.
 * That last wait is Warren's back-pressure, what amqp-client's producer spends blocked in {@code basicPublish}'s
 * socket write after its stamp: so it is in the latency of both, and the confirm window's wait in neither.
 */
final class WarrenProducer {

    /** How long a waiting producer sleeps at most before it looks at the stop flag again. */
    private static final long WAIT_SLICE_MILLIS = PublishGate.WAIT_SLICE_MILLIS;

    private final Channel channel;
    private final ConfirmTracker confirms;
    private final RunOptions options;
    private final Metrics metrics;
    private final BooleanSupplier running;
    private final NanoClock clock;

    /**
     * @param confirms the channel's confirm window, or null without confirms
     * @param running false once the run stops (any thread may turn it)
     * @param clock the time stamped on each publish and the pacer's
     */
    WarrenProducer(
            Channel channel,
            ConfirmTracker confirms,
            RunOptions options,
            Metrics metrics,
            BooleanSupplier running,
            NanoClock clock) {
        this.channel = channel;
        this.confirms = confirms;
        this.options = options;
        this.metrics = metrics;
        this.running = running;
        this.clock = clock;
    }

    Channel channel() {
        return channel;
    }

    /** The producer's loop: publishes until the run stops or {@link RunOptions#producerMessages()} are confirmed. */
    void run(ShortString exchange, ShortString routingKey) {
        ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
        int size = options.size();
        boolean mandatory = options.mandatory();
        BasicProperties props =
                options.persistent() ? BasicProperties.builder().deliveryMode(2).build() : BasicProperties.EMPTY;
        PublishGate gate = new PublishGate(new Pacer(options.rate(), clock), confirms);
        long limit = options.producerMessages();
        long sent = 0;
        CompletableFuture<PublishOutcome> lastWritten = null;
        try {
            while (running() && (limit == 0 || sent < limit)) {
                if (!gate.await()) {
                    if (!channel.isOpen()) {
                        break; // no confirm will come (the channel's closeFuture reported the close)
                    }
                    continue; // no room in the window yet: look at the stop flag, then wait again (the slot is kept)
                }
                // the body is made before the stamp: amqp-client re-sends one array, so neither pays this in latency
                ByteBuf body = alloc.directBuffer(size, size).writeZero(size);
                long now = clock.nanoTime();
                MessageBody.stamp(body, now);
                boolean writable = false;
                try {
                    writable = awaitWritable();
                } finally {
                    if (!writable) {
                        body.release(); // stopping, closed or interrupted: the body never went to Warren
                    }
                }
                if (!writable) {
                    break; // stopping, or the channel closed (its closeFuture reported it)
                }
                if (confirms == null && limit > 0 && sent + 1 == limit) {
                    // the last of --pmessages: its outcome says when it is written to the socket, and the channel's
                    // publishes are written in order, so then all of them are (amqp-client's are when the call
                    // returns)
                    lastWritten = channel.publish(exchange, routingKey, mandatory, props, body)
                            .toCompletableFuture();
                } else if (confirms == null) {
                    channel.publishNoOutcome(exchange, routingKey, mandatory, props, body);
                } else {
                    long sequence = sent + 1;
                    confirms.sent(sequence, now);
                    channel.publish(exchange, routingKey, mandatory, props, body)
                            .whenComplete(confirmCallback(sequence));
                }
                metrics.published();
                sent++;
            }
            if (running() && confirms != null) {
                while (running() && channel.isOpen() && !confirms.awaitDrained(WAIT_SLICE_MILLIS)) {
                    // the last confirms are still on their way
                }
            }
            while (running() && lastWritten != null && !written(lastWritten)) {
                // the last publishes are still on their way to the socket
            }
            if (running() && channel.isOpen()) {
                metrics.producerDone();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            // a refusal thrown by publishNoOutcome: the channel or connection closed under the producer
            if (running()) {
                metrics.fail(e);
            }
        }
    }

    private boolean running() {
        return running.getAsBoolean();
    }

    /** Waits a little for {@code write}; true once it is written (or failed: the close is reported elsewhere). */
    private boolean written(CompletableFuture<PublishOutcome> write) throws InterruptedException {
        try {
            write.get(WAIT_SLICE_MILLIS, TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            if (running()) {
                metrics.fail(unwrap(e.getCause()));
            }
            return true;
        }
    }

    /**
     * Waits until a publish now is written at once: Warren writable (its queue and the socket below the high-water
     * mark, the connection not blocked by the broker). Warren's own confirm window never closes first
     * ({@link WarrenDriver#ownConfirmWindow}), so this is back-pressure only. Returns false when the run is stopping or
     * the channel closed.
     */
    private boolean awaitWritable() throws InterruptedException {
        while (running()) {
            if (channel.isWritable()) {
                return true;
            }
            if (!channel.isOpen()) {
                return false;
            }
            try {
                channel.whenWritable().toCompletableFuture().get(WAIT_SLICE_MILLIS, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                // look at the stop flag, then wait again
            } catch (ExecutionException e) {
                return false; // the channel closed
            }
        }
        return false;
    }

    /**
     * The callback of one confirmed publish: Warren reports confirms only through each publish's future, so this
     * object (and the future's dependent) is the per-message cost of measuring confirms with Warren. Runs on the
     * event loop.
     */
    private BiConsumer<PublishOutcome, Throwable> confirmCallback(long sequence) {
        return (outcome, error) -> {
            if (error == null) {
                confirms.ack(sequence, false); // RETURNED counts too: the broker acked it, as amqp-client counts it
                return;
            }
            Throwable cause = unwrap(error);
            if (cause instanceof PublishNackedException) {
                confirms.nack(sequence, false);
            } else if (running()) {
                metrics.fail(cause); // not confirmed: the channel or connection closed
            }
        };
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
