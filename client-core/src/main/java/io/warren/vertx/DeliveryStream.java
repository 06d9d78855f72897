package io.warren.vertx;

import io.vertx.core.Closeable;
import io.vertx.core.Completable;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.internal.ContextInternal;
import io.vertx.core.streams.ReadStream;
import io.warren.AmqpException;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.impl.adapter.ConsumerEnds;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A consumer as a Vert.x {@link ReadStream}: deliveries, the stream's end and its failures arrive on the context
 * the stream was made on ({@link VertxChannel#consume}), one at a time, in order.
 *
 * <h2>Flow control</h2>
 * {@link #pause()}, {@link #resume()} and {@link #fetch(long)} are the consumer's demand
 * ({@link ConsumerHandle#pause()} ...): nothing reaches the handler without demand, and deliveries received
 * meanwhile wait in the consumer's bounded queue (with manual acks the broker stops at the prefetch, by default
 * {@value io.warren.ConsumeOptions#DEFAULT_PREFETCH}; with noAck the connection stops reading at the queue's
 * high-water mark). So {@link #pipeTo} honours the write stream's back-pressure all the way to the broker, and,
 * with manual acks, a stream paused for long keeps its connection. <b>A noAck stream must not stay paused</b>: its
 * connection stops reading (the connection's other consumers and method replies wait too), RabbitMQ closes a
 * connection it cannot write to for long (about 20 s here), and what it had sent is lost (see
 * {@link ConsumerHandle}). A noAck stream that may be paused for long sets
 * {@link io.warren.ConsumeOptions#dropOverflow}: its full queue drops what arrives (as the Vert.x RabbitMQ client's
 * bounded internal queue does) and the connection goes on. The stream starts without demand and flows once a handler
 * is set, unless it was paused.
 *
 * <h2>Ownership</h2>
 * The handler borrows each {@link Delivery}: Warren releases it when the handler returns. A handler or a
 * {@link io.vertx.core.streams.WriteStream} that keeps a delivery beyond the call (a write queue, a future
 * completed later) must {@link Delivery#retain() retain} it and release it when done. Settle it with
 * {@link Delivery#ack()} and friends, from any thread, unless the consumer is noAck.
 *
 * <h2>Failures</h2>
 * An exception thrown by the handler goes to the stream's {@link #exceptionHandler}, else, as Vert.x reports a
 * handler's exception, to the context's {@link Context#exceptionHandler()} or Vert.x's
 * {@link io.vertx.core.Vertx#exceptionHandler()}; with none set, Warren logs it. The stream goes on with the next
 * delivery; a manual-ack delivery the handler did not settle stays unacknowledged until the channel closes.
 *
 * <h2>End</h2>
 * When the consumer ends, the {@link #exceptionHandler} gets the reason if it was a failure (the broker
 * cancelled it or closed the channel or connection, the connection was lost for good), then the
 * {@link #endHandler} is called; after that the handler is not called again. A cancel, and a close the
 * application made itself ({@code channel.close()}, {@code connection.close()}, from a verticle's {@code stop()}
 * say), are an orderly end: the end handler only, so {@code pipeTo} ends its write stream and succeeds. Deliveries still
 * queued are released without reaching the handler. With manual acks the broker delivers them again: they are
 * requeued when the channel is still open, and requeued by the broker itself when the channel or connection
 * closed. <b>With noAck they are lost</b>: the broker forgot each message when it sent it, so what a paused or slow
 * stream holds when it is cancelled or its channel or connection closed is gone. Use manual acks for messages that
 * must not be lost.
 *
 * <p>A stream made in a verticle ends with it, as the verticle's event-bus consumers do: undeploying the verticle
 * cancels the consumer. From then on the handler is not called (deliveries still arriving go back to the queue with
 * manual acks), and the end handler follows the broker's cancel-ok on the verticle's context. The undeploy does not
 * wait for that cancel-ok, so that a broker out of reach cannot hold it up. The channel the stream was made on stays
 * open: it is the application's.
 *
 * <h2>Recovery</h2>
 * The stream survives a connection loss (and the channel's recovery after RabbitMQ's consumer acknowledgement
 * timeout): the same stream goes on. Manual-ack deliveries it had not yet handed to the handler are dropped, since
 * the broker delivers them again; a delivery handed over before the loss can no longer be settled
 * ({@link io.warren.StaleDeliveryException}).
 */
public final class DeliveryStream implements ReadStream<Delivery> {

    private final Context context;

    // any thread (volatile): ReadStream methods are meant for the context, but may come from elsewhere
    private volatile Handler<Delivery> handler;
    private volatile Handler<Throwable> exceptionHandler;
    private volatile Handler<Void> endHandler;
    private volatile ConsumerHandle consumer;
    /**
     * The stream's demand as Vert.x streams count it: {@code Long.MAX_VALUE} flowing (the start, resume), 0 paused,
     * else what fetch asked for and the handler has not had. Kept here, not only in the consumer: without a handler
     * the consumer is held paused, and what was fetched meanwhile must survive until one is set.
     */
    private final AtomicLong demand = new AtomicLong(Long.MAX_VALUE);

    // the context only
    private boolean ended;
    /** Cancels the consumer when the verticle that made the stream is undeployed; null outside a verticle. */
    private Closeable undeployHook;
    /** The verticle was undeployed: the handler is not called again. Any thread (volatile). */
    private volatile boolean undeployed;

    DeliveryStream(Context context) {
        this.context = context;
    }

    /** consume-ok: the consumer exists; its end is reported on the context. On the context. */
    DeliveryStream started(ConsumerHandle handle) {
        this.consumer = handle;
        handle.endFuture().whenComplete((cause, never) -> context.runOnContext(ignored -> end(cause)));
        // made in a verticle: its deployment ID stays set after the undeploy (isDeployment() does not), so a consume
        // that completes after the verticle is gone finds its close future closed and cancels at once
        if (context.deploymentID() != null && context instanceof ContextInternal ci) {
            Closeable hook = this::undeploy;
            undeployHook = hook;
            if (!ci.closeFuture().add(hook)) {
                undeploy(null); // undeployed while the consume was on its way
                return this;
            }
        }
        applyDemand();
        return this;
    }

    /** The verticle's close hook (its undeploy, or Vert.x's close): on the thread undeploying it. */
    private void undeploy(Completable<Void> done) {
        undeployed = true;
        ConsumerHandle c = consumer;
        c.pause();
        // not awaited: a cancel waits for recovery while the connection is lost, and must not hold up the undeploy
        c.cancel();
        if (done != null) {
            done.succeed();
        }
    }

    /** The consumer's handler, on the context. */
    void onDelivery(Delivery delivery) throws Exception {
        Handler<Delivery> h = handler;
        if (h == null || ended || undeployed) {
            // the handler was removed (or its verticle undeployed) while this one was on its way: give it back
            ConsumerEnds.giveBack(delivery);
            return;
        }
        // flowing (the common case): one read, no write; fetched demand counts down
        long d = demand.get();
        while (d != Long.MAX_VALUE && d > 0 && !demand.compareAndSet(d, d - 1)) {
            d = demand.get();
        }
        try {
            h.handle(delivery);
        } catch (RuntimeException | Error e) {
            Handler<Throwable> eh = unhandled();
            if (eh == null) {
                throw e;
            }
            eh.handle(e);
        }
    }

    /**
     * Where a handler's exception goes, as Vert.x reports a handler's exception on a context: the stream's exception
     * handler, else the context's, else Vert.x's; with none of them, the consumer logs it (naming its queue and
     * delivery, which Vert.x's own log could not): then null.
     */
    private Handler<Throwable> unhandled() {
        Handler<Throwable> eh = exceptionHandler;
        if (eh == null) {
            eh = context.exceptionHandler();
        }
        return eh != null ? eh : context.owner().exceptionHandler();
    }

    private void end(AmqpException cause) {
        if (ended) {
            return;
        }
        ended = true;
        Closeable hook = undeployHook;
        if (hook != null) {
            // the verticle's close future must not keep every stream it ever made
            ((ContextInternal) context).closeFuture().remove(hook);
        }
        Handler<Throwable> eh = exceptionHandler;
        try {
            // the application's own close ends the stream in order: a pipeTo ends its write stream and succeeds
            if (cause != null && !ConsumerEnds.closedByTheApplication(cause) && eh != null) {
                eh.handle(cause);
            }
        } finally {
            // an exception handler that throws (Vert.x reports it) must not skip what the application ends with
            Handler<Void> done = endHandler;
            if (done != null) {
                done.handle(null);
            }
        }
    }

    /** Gives the consumer the stream's demand, or none while there is no handler to take deliveries. */
    private void applyDemand() {
        ConsumerHandle c = consumer;
        if (c == null) {
            return;
        }
        long d = demand.get();
        if (handler == null || d == 0) {
            c.pause();
        } else if (d == Long.MAX_VALUE) {
            c.resume();
        } else {
            c.pause();
            c.fetch(d);
        }
    }

    /** The consumer behind the stream (tag, queue, cancel). */
    public ConsumerHandle consumer() {
        return consumer;
    }

    /** Cancels the consumer; the end handler follows. */
    public Future<Void> cancel() {
        return Future.fromCompletionStage(consumer.cancel(), context);
    }

    /**
     * Sets the handler. {@code null} holds the consumer paused, keeping what it has (with manual acks up to the
     * prefetch, unacknowledged at the broker) until a handler is set again: it does not cancel it. A failed
     * {@link #pipeTo} leaves the stream so; {@link #cancel()} it, or close its channel, to give the messages back.
     */
    @Override
    public DeliveryStream handler(Handler<Delivery> handler) {
        this.handler = handler;
        applyDemand();
        return this;
    }

    @Override
    public DeliveryStream exceptionHandler(Handler<Throwable> handler) {
        this.exceptionHandler = handler;
        return this;
    }

    @Override
    public DeliveryStream endHandler(Handler<Void> handler) {
        this.endHandler = handler;
        return this;
    }

    @Override
    public DeliveryStream pause() {
        demand.set(0);
        applyDemand();
        return this;
    }

    @Override
    public DeliveryStream resume() {
        demand.set(Long.MAX_VALUE);
        applyDemand();
        return this;
    }

    /**
     * Adds {@code amount} to the demand; a paused stream delivers that many and stays paused. Asked before a handler
     * is set, the demand waits for it (nothing is taken from the consumer without a handler to give it to).
     */
    @Override
    public DeliveryStream fetch(long amount) {
        if (amount < 0) {
            throw new IllegalArgumentException("amount must not be negative: " + amount);
        }
        if (amount == 0) {
            return this;
        }
        demand.getAndUpdate(d -> d > Long.MAX_VALUE - amount ? Long.MAX_VALUE : d + amount);
        ConsumerHandle c = consumer;
        if (c != null && handler != null) {
            c.fetch(amount);
        }
        return this;
    }

    @Override
    public String toString() {
        ConsumerHandle c = consumer;
        long d = demand.get();
        return "DeliveryStream(" + (c == null ? "starting" : c.toString())
                + (d == 0 ? ", paused" : d == Long.MAX_VALUE ? "" : ", demand " + d) + ")";
    }
}
