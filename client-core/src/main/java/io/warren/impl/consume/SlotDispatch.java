package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.warren.AsyncDeliveryHandler;
import io.warren.impl.queue.InboundMessageQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deliveries counted in flight (an {@link AsyncDeliveryHandler}, or concurrency n &gt; 1): the queue's demand is
 * the free slots. It starts at n and a completed delivery gives one back, by raising the total granted to
 * {@code completed + n} with a CAS, so at most n deliveries are ever out of the queue and not completed, without
 * a lock. The application's demand is a second gate applied as the drain takes a delivery: without demand it is
 * held (at most n) and started when demand returns. A synchronous handler runs on the executor, one task per
 * delivery (the delivery is the task, {@link #run}); an asynchronous one is called on the drain and its stage
 * says when the slot is free.
 */
final class SlotDispatch implements Dispatch {

    private static final Logger LOG = LoggerFactory.getLogger(SlotDispatch.class);

    private static final AtomicLongFieldUpdater<SlotDispatch> GRANTED =
            AtomicLongFieldUpdater.newUpdater(SlotDispatch.class, "granted");
    private static final AtomicLongFieldUpdater<SlotDispatch> COMPLETED =
            AtomicLongFieldUpdater.newUpdater(SlotDispatch.class, "completed");

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
        if (userDemand.take(d)) {
            if (asyncHandler == null) {
                start(d);
            } else {
                processAsync(d);
            }
        } else if (userDemand.hold(d) || !consumer.isActive()) {
            // a resume or an end racing with the hold either sees the delivery or is seen here
            startHeld();
        }
    }

    /**
     * A delivery {@link #start started} on the executor: runs the synchronous handler, or (a delivery held for
     * demand, then started) the asynchronous one. Consumer's executor.
     */
    void run(DeliveryImpl d) {
        if (asyncHandler != null) {
            processAsync(d);
            return;
        }
        if (consumer.dropIfLost(d)) {
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

    /** Starts held deliveries while there is demand; any thread. */
    private void startHeld() {
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
