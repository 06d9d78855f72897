package io.warren.flow;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerCancelledException;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.impl.adapter.ConsumerEnds;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subscription of a {@link DeliveryPublisher}: one consumer, the subscriber's demand handed to it, and the
 * signals made serial.
 *
 * <h2>Serial signals (rule 1.3)</h2>
 * {@code onNext} comes from the consumer's queue, one at a time; the terminal signal comes from wherever the
 * consumer ended (the event loop) or from {@code request}. {@link #state} decides who signals: the drain holds
 * {@code EMITTING} around {@code onNext} (and {@code start} around {@code onSubscribe}); a terminal signal that
 * finds it held leaves {@code TERMINAL_PENDING} and the holder signals it on its way out. No lock, and a
 * {@code request} from inside {@code onNext} (rule 3.3) only adds to the consumer's demand: the queue hands the
 * next delivery over after this one returns, never inside it.
 */
final class DeliverySubscription implements Flow.Subscription {

    private static final Logger LOG = LoggerFactory.getLogger(DeliverySubscription.class);

    private static final int IDLE = 0;
    private static final int EMITTING = 1;
    private static final int TERMINAL_PENDING = 2;
    private static final int DONE = 3;

    /** The terminal signal for a completion (a {@link Throwable} for an error). */
    private static final Object COMPLETE = new Object();

    private static final AtomicIntegerFieldUpdater<DeliverySubscription> STATE =
            AtomicIntegerFieldUpdater.newUpdater(DeliverySubscription.class, "state");
    private static final AtomicReferenceFieldUpdater<DeliverySubscription, Object> TERMINAL =
            AtomicReferenceFieldUpdater.newUpdater(DeliverySubscription.class, Object.class, "terminal");
    private static final AtomicLongFieldUpdater<DeliverySubscription> REQUESTED =
            AtomicLongFieldUpdater.newUpdater(DeliverySubscription.class, "requested");
    private static final AtomicLongFieldUpdater<DeliverySubscription> GRANTED =
            AtomicLongFieldUpdater.newUpdater(DeliverySubscription.class, "granted");
    private static final AtomicIntegerFieldUpdater<DeliverySubscription> CANCEL_SENT =
            AtomicIntegerFieldUpdater.newUpdater(DeliverySubscription.class, "cancelSent");

    // immutable
    private final Flow.Subscriber<? super Delivery> subscriber;
    private final long limit;
    private final boolean noAck;

    // any thread (volatile, field updaters)
    /** Who may signal: IDLE, EMITTING (onSubscribe / onNext running), TERMINAL_PENDING, DONE. */
    private volatile int state = EMITTING;
    /** The terminal signal, set once: {@link #COMPLETE} or the error. */
    private volatile Object terminal;
    /** Requested and not yet handed to the consumer (it is not started yet, or another thread hands it). */
    private volatile long requested;
    /** Handed to the consumer in total, counted only under a limit. */
    private volatile long granted;

    private volatile int cancelSent;
    private volatile boolean cancelled;
    /** Set at consume-ok. */
    private volatile ConsumerHandle consumer;

    // consumer context only (the queue's drain is serial)
    private long emitted;

    DeliverySubscription(Flow.Subscriber<? super Delivery> subscriber, long limit, boolean noAck) {
        this.subscriber = subscriber;
        this.limit = limit;
        this.noAck = noAck;
    }

    /** onSubscribe, then the consumer (unless the subscriber cancelled meanwhile or there is nothing to take). */
    void start(Channel channel, String queue, ConsumeOptions options) {
        try {
            subscriber.onSubscribe(this);
        } catch (Throwable t) {
            // rule 2.13 broken: the subscription is cancelled and nothing more is signalled (we hold the emitter), and
            // subscribe still returns normally (rule 1.9): no consumer is made
            cancelled = true;
            state = DONE;
            if (t instanceof VirtualMachineError e) {
                throw e;
            }
            LOG.warn("subscriber {} threw from onSubscribe; its subscription is cancelled", subscriber, t);
            return;
        }
        leaveSignal();
        if (limit == 0) {
            signalTerminal(COMPLETE);
            return;
        }
        if (cancelled || terminal != null) {
            return;
        }
        CompletionStage<ConsumerHandle> consumed;
        try {
            consumed = channel.consume(queue, options, this::onDelivery);
        } catch (RuntimeException e) {
            signalTerminal(e); // rule 1.9: subscribe does not throw; the failure goes to onError
            return;
        }
        consumed.whenComplete((handle, failure) -> {
            if (failure != null) {
                signalTerminal(
                        failure instanceof CompletionException && failure.getCause() != null
                                ? failure.getCause()
                                : failure);
                return;
            }
            consumer = handle;
            handle.endFuture().whenComplete((cause, never) -> consumerEnded(cause));
            if (cancelled || terminal != null) {
                cancelConsumer();
            } else {
                handDemand();
            }
        });
    }

    // ---- consumer context ------------------------------------------------------------------------------------

    /** The consumer's handler: one delivery, with demand for it. Consumer context, one at a time. */
    private void onDelivery(Delivery delivery) {
        if (cancelled || !STATE.compareAndSet(this, IDLE, EMITTING)) {
            giveBack(delivery); // a terminal signal or a cancel got here first
            return;
        }
        try {
            subscriber.onNext(delivery);
        } catch (Throwable t) {
            // rule 2.13 broken: the subscriber is treated as cancelled; the consumer logs the failure. The delivery
            // goes back unless the subscriber settled it: the broker keeps a cancelled consumer's unacknowledged
            // deliveries until the channel closes
            giveBack(delivery);
            cancel();
            throw t;
        } finally {
            if (++emitted == limit) {
                TERMINAL.compareAndSet(this, null, COMPLETE);
                state = TERMINAL_PENDING; // ours to signal: we hold the emitter
                cancelConsumer();
            }
            leaveSignal();
        }
    }

    /** A delivery that will not be emitted: back to the queue (manual acknowledgement). */
    private void giveBack(Delivery delivery) {
        if (!noAck) { // noAck: nothing to give back, and no exception to pay for saying so
            ConsumerEnds.giveBack(delivery);
        }
    }

    // ---- serial signals ----------------------------------------------------------------------------------------

    /** The holder of EMITTING lets go, signalling a terminal that came meanwhile. */
    private void leaveSignal() {
        if (!STATE.compareAndSet(this, EMITTING, IDLE)) {
            state = DONE;
            emitTerminal();
        }
    }

    /** Posts the terminal signal (the first one wins) and signals it now unless a signal is running. Any thread. */
    private void signalTerminal(Object signal) {
        if (!TERMINAL.compareAndSet(this, null, signal)) {
            return;
        }
        while (true) {
            int s = state;
            if (s == IDLE) {
                if (STATE.compareAndSet(this, IDLE, DONE)) {
                    emitTerminal();
                    return;
                }
            } else if (s == EMITTING) {
                if (STATE.compareAndSet(this, EMITTING, TERMINAL_PENDING)) {
                    return; // the holder signals it
                }
            } else {
                return;
            }
        }
    }

    private void emitTerminal() {
        if (cancelled) {
            return; // rule 1.8: a cancelled subscriber needs no more signals
        }
        Object signal = terminal;
        if (signal == COMPLETE) {
            subscriber.onComplete();
        } else {
            subscriber.onError((Throwable) signal);
        }
    }

    /** The consumer ended (event loop): completion for a broker cancel or an orderly close, else an error. */
    private void consumerEnded(AmqpException cause) {
        if (cause == null
                || cause instanceof ConsumerCancelledException
                || ConsumerEnds.closedByTheApplication(cause)) {
            signalTerminal(COMPLETE);
        } else {
            signalTerminal(cause);
        }
    }

    // ---- Flow.Subscription (any thread) ----------------------------------------------------------------------

    @Override
    public void request(long n) {
        if (n <= 0) {
            try {
                signalTerminal(new IllegalArgumentException("rule 3.9: request(n) needs n > 0, was " + n));
            } finally {
                cancelConsumer(); // also when onError throws (rule 2.13 broken)
            }
            return;
        }
        while (true) {
            long r = requested;
            long next = r + n < 0 ? Long.MAX_VALUE : r + n; // rule 3.17: up to Long.MAX_VALUE, saturating
            if (REQUESTED.compareAndSet(this, r, next)) {
                break;
            }
        }
        handDemand();
    }

    /** Moves what was requested to the consumer's demand, never beyond the limit. Any thread. */
    private void handDemand() {
        ConsumerHandle c = consumer;
        if (c == null || cancelled || terminal != null) {
            return; // consume-ok hands it over
        }
        long n = REQUESTED.getAndSet(this, 0);
        if (n == 0) {
            return;
        }
        if (limit != Long.MAX_VALUE) {
            while (true) {
                long g = granted;
                long allowed = Math.min(n, limit - g);
                if (allowed <= 0) {
                    return;
                }
                if (GRANTED.compareAndSet(this, g, g + allowed)) {
                    n = allowed;
                    break;
                }
            }
        }
        c.fetch(n);
    }

    @Override
    public void cancel() {
        if (cancelled) {
            return;
        }
        cancelled = true;
        cancelConsumer();
    }

    /** basic.cancel, once, when the consumer exists (else consume-ok does it). */
    private void cancelConsumer() {
        ConsumerHandle c = consumer;
        if (c != null && CANCEL_SENT.compareAndSet(this, 0, 1)) {
            c.pause();
            c.cancel();
        }
    }

    @Override
    public String toString() {
        ConsumerHandle c = consumer;
        return "DeliverySubscription(" + (c == null ? "starting" : c) + (cancelled ? ", cancelled" : "") + ")";
    }
}
