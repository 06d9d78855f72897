package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.warren.AsyncDeliveryHandler;
import io.warren.impl.queue.InboundMessageQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deliveries counted in flight (an {@link AsyncDeliveryHandler}, or concurrency n &gt; 1): the queue's demand is
 * the free slots. It starts at n and a completed delivery gives one back, by raising the total granted to
 * {@code completed + n} with a CAS, so at most n deliveries are ever out of the queue and not completed, without
 * a lock. The application's demand is a second gate applied as the drain takes a delivery: without demand it is
 * held (at most n) and started when demand returns. A synchronous handler runs on the executor, one task per
 * delivery (the delivery is the task, {@link #run}); an asynchronous one is called one delivery at a time, in
 * order, and its stage says when the slot is free: on the drain, or, for deliveries held for demand, by whoever
 * holds the calling token ({@link #calling}), the drain or a task on the executor, never two at once.
 */
final class SlotDispatch implements Dispatch {

    private static final Logger LOG = LoggerFactory.getLogger(SlotDispatch.class);

    private static final AtomicLongFieldUpdater<SlotDispatch> GRANTED =
            AtomicLongFieldUpdater.newUpdater(SlotDispatch.class, "granted");
    private static final AtomicLongFieldUpdater<SlotDispatch> COMPLETED =
            AtomicLongFieldUpdater.newUpdater(SlotDispatch.class, "completed");
    private static final AtomicIntegerFieldUpdater<SlotDispatch> CALLING =
            AtomicIntegerFieldUpdater.newUpdater(SlotDispatch.class, "calling");

    // immutable
    private final ConsumerImpl consumer;
    private final InboundMessageQueue<DeliveryImpl> queue;
    /** Null: a synchronous handler run in parallel on the executor. */
    private final AsyncDeliveryHandler asyncHandler;

    private final Executor executor;
    private final int concurrency;
    /** The application's demand, and the deliveries held for it. */
    private final DemandGate<DeliveryImpl> userDemand;

    // any thread (volatile, field updaters)
    private volatile long granted;
    private volatile long completed;
    /**
     * An asynchronous handler's calls of held deliveries: 0 when nobody calls them, else the one who took it from 0
     * calls them and this counts the requests to look again it has still to serve (a work-in-progress counter).
     */
    private volatile int calling;

    private final Runnable callHeldTask = new CallHeld();

    /** Event loop, as the consumer is made. */
    SlotDispatch(
            ConsumerImpl consumer,
            InboundMessageQueue<DeliveryImpl> queue,
            AsyncDeliveryHandler asyncHandler,
            Executor executor,
            int concurrency,
            long initialDemand) {
        this.consumer = consumer;
        this.queue = queue;
        this.asyncHandler = asyncHandler;
        this.executor = executor;
        this.concurrency = concurrency;
        this.userDemand = new DemandGate<>(initialDemand);
        queue.pause();
        this.granted = concurrency;
        queue.fetch(concurrency);
    }

    @Override
    public DeliveryImpl newDelivery(
            ChannelConsumers on, ByteBuf method, ByteBuf header, ByteBuf body, long deliveryTag, boolean redelivered) {
        return new DeliveryImpl(consumer, on, method, header, body, deliveryTag, redelivered);
    }

    @Override
    public void onDelivery(DeliveryImpl d) {
        if (asyncHandler != null) {
            onAsyncDelivery(d);
        } else if (userDemand.take(d)) {
            start(d);
        } else if (userDemand.hold(d) || !consumer.isActive()) {
            // a resume or an end racing with the hold either sees the delivery or is seen here
            startHeld();
        }
    }

    /**
     * Flowing with nothing held and nobody calling held ones (the common case), the handler is called here, on the
     * drain; else the delivery queues behind the held ones, so that calls stay one at a time and in order. Held is
     * read first: only the drain holds, so once nothing is held nothing older can be, and a token holder still
     * calling one it took before is then seen in {@link #calling} (read second, it keeps the token until its last
     * call returns). Drain.
     */
    private void onAsyncDelivery(DeliveryImpl d) {
        if (!userDemand.anyHeld() && calling == 0 && userDemand.take(d)) {
            processAsync(d);
            return;
        }
        userDemand.hold(d);
        callHeld(true);
    }

    /**
     * A delivery {@link #start started} on the executor: runs the synchronous handler, unless the consumer ended
     * while the task waited (then it goes as a queued one does). Consumer's executor.
     */
    void run(DeliveryImpl d) {
        assert asyncHandler == null : "an asynchronous handler's deliveries are called, not started";
        if (!consumer.isActive()) {
            consumer.dispose(d);
        } else if (consumer.dropIfLost(d)) {
            lostDemandBack(d);
        } else {
            consumer.handle(d);
        }
        completed();
    }

    /**
     * A delivery dropped as lost took a unit of the application's demand that its redelivered copy needs: given
     * back, unless the application paused since (the copy then waits for a fetch). {@code d} is released: only
     * its epoch is read.
     */
    private void lostDemandBack(DeliveryImpl d) {
        userDemand.giveBack(d);
        startHeld();
    }

    private void processAsync(DeliveryImpl d) {
        if (!consumer.isActive()) {
            consumer.dispose(d); // ended while it waited: as a queued one
            completed();
            return;
        }
        if (consumer.dropIfLost(d)) {
            lostDemandBack(d);
            completed();
            return;
        }
        long start = consumer.handlerStart();
        CompletionStage<?> stage;
        try {
            stage = asyncHandler.handle(d);
        } catch (Throwable t) {
            consumer.handlerFailed(d, t);
            consumer.handlerDone(d, start);
            completed();
            return;
        }
        if (stage == null) {
            consumer.handlerDone(d, start);
            completed();
            return;
        }
        stage.whenComplete((v, failure) -> {
            if (failure != null) {
                consumer.handlerFailed(d, failure);
            }
            consumer.handlerDone(d, start);
            completed();
        });
    }

    /** Starts a delivery on the executor (the delivery is the task). */
    private void start(DeliveryImpl d) {
        try {
            executor.execute(d);
        } catch (RejectedExecutionException e) {
            LOG.warn(
                    "consumer '{}' on channel {}: its executor refused delivery {}; dropped",
                    consumer.consumerTag(),
                    consumer.channelNumber(),
                    d.deliveryTag(),
                    e);
            consumer.dispose(d);
            completed();
        }
    }

    /** A delivery is done: its slot is free. Raises the total granted to completed + concurrency. */
    private void completed() {
        long done = COMPLETED.incrementAndGet(this);
        while (true) {
            long g = granted;
            long target = done + concurrency;
            if (target <= g) {
                return; // a later completion granted for us
            }
            if (GRANTED.compareAndSet(this, g, target)) {
                queue.fetch(target - g);
                return;
            }
        }
    }

    /**
     * Calls the asynchronous handler on held deliveries while there is demand, unless another thread does: that one
     * looks again before it lets go. {@code here}: on the drain, which may call them itself; elsewhere a task on the
     * executor does.
     */
    private void callHeld(boolean here) {
        if (CALLING.getAndIncrement(this) != 0) {
            return;
        }
        if (here) {
            callHeldWhileAsked(false);
            return;
        }
        try {
            executor.execute(callHeldTask);
        } catch (RejectedExecutionException e) {
            LOG.warn(
                    "consumer '{}' on channel {}: its executor refused to call the handler on held deliveries;"
                            + " dropped",
                    consumer.consumerTag(),
                    consumer.channelNumber(),
                    e);
            callHeldWhileAsked(true);
        }
    }

    /** Holds the calling token: calls (or, {@code refused}, disposes of) what demand releases until nobody asks. */
    private void callHeldWhileAsked(boolean refused) {
        int missed = 1;
        while (true) {
            DeliveryImpl d;
            while ((d = releaseHeld()) != null) {
                if (refused) {
                    consumer.dispose(d);
                    completed();
                } else {
                    processAsync(d);
                }
            }
            missed = CALLING.addAndGet(this, -missed);
            if (missed == 0) {
                return;
            }
        }
    }

    /** The next held delivery demand lets go, or null; an ended consumer's are disposed of. */
    private DeliveryImpl releaseHeld() {
        if (!consumer.isActive()) {
            disposeHeld();
            return null;
        }
        return userDemand.release();
    }

    private final class CallHeld implements Runnable {
        @Override
        public void run() {
            callHeldWhileAsked(false);
        }
    }

    /** Starts held deliveries while there is demand (an asynchronous handler's: calls them); any thread. */
    private void startHeld() {
        if (asyncHandler != null) {
            callHeld(false);
            return;
        }
        while (true) {
            if (!consumer.isActive()) {
                disposeHeld();
                return;
            }
            DeliveryImpl d = userDemand.release();
            if (d == null) {
                return;
            }
            start(d);
        }
    }

    private void disposeHeld() {
        DeliveryImpl d;
        while ((d = userDemand.poll()) != null) {
            consumer.dispose(d);
            completed();
        }
    }

    @Override
    public void pause() {
        userDemand.pause();
    }

    @Override
    public void fetch(long count) {
        if (count > 0) {
            userDemand.add(count);
            startHeld();
        }
    }

    @Override
    public long held() {
        return userDemand.held();
    }

    @Override
    public void end() {
        disposeHeld();
    }
}
