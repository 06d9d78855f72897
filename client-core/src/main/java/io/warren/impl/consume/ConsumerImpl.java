package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpException;
import io.warren.AsyncDeliveryHandler;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.DeliveryHandler;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.ChannelRpc;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.metrics.MetricsCollector;
import io.warren.impl.metrics.UnacknowledgedAge;
import io.warren.impl.queue.InboundMessageQueue;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer: its {@link InboundMessageQueue} from the event loop to its context, the handler calls, and its
 * life (consume-ok, recovery's move to a new channel, cancel, end). The public face is itself
 * ({@link ConsumerHandle}). How deliveries are handed to the application, and the demand, is its {@link Dispatch}:
 * {@link SerialDispatch} for a {@link DeliveryHandler} one at a time, {@link SlotDispatch} for an
 * {@link AsyncDeliveryHandler} or concurrency above 1.
 *
 * <h2>Back-pressure</h2>
 * The queue reports its high-water mark (once) and its return below the low-water mark (once), on the event
 * loop: that pauses and resumes the connection's reading ({@code ConnectionHandler.pauseReading}, counted over
 * the connection's consumers), whatever the acknowledgement mode. With manual acknowledgement and a prefetch the
 * default marks lie above the prefetch ({@link ConsumeOptions#waterMarks}), so a broker that keeps to it
 * never pauses anything and the other consumers of the connection go on; one that does not is not trusted: it is
 * stopped at the mark, reported once per consumer and channel in the log, and counted per delivery
 * ({@code deliveriesBeyondPrefetch}).
 *
 * <h2>End</h2>
 * {@link #end} (event loop) closes the queue: what is queued or held goes to {@link #dispose}: released,
 * and rejected with requeue when the channel is still open and the consumer acknowledges manually.
 */
public final class ConsumerImpl implements ConsumerHandle, UnacknowledgedAge {

    private static final Logger LOG = LoggerFactory.getLogger(ConsumerImpl.class);

    // immutable but for recovery, which moves the consumer to the recovered channel (event loop; read anywhere)
    private volatile ChannelConsumers channel;
    private volatile String queueName;
    // immutable
    private final ConsumeOptions options;
    private final boolean noAck;
    /** The synchronous handler, or null for an asynchronous one (which the {@link SlotDispatch} holds). */
    private final DeliveryHandler handler;
    /**
     * The prefetch the broker accepted for this consumer (basic.qos before basic.consume), or 0 when none binds
     * it (none asked, or noAck): the queue never holds more from a broker that keeps to it.
     */
    private final int prefetch;
    /**
     * noAck with {@link ConsumeOptions#dropOverflow}: the queue's high-water mark, at which what arrives is dropped
     * instead of the connection's reading pausing; 0 when the consumer does not drop.
     */
    private final int dropAbove;

    private final DeliveryQueue queue;
    private final Dispatch dispatch;
    /** The same object as {@link #dispatch} when deliveries are counted in flight, else null. */
    private final SlotDispatch slots;

    private final CompletableFuture<AmqpException> endFuture = new CompletableFuture<>();
    /** The client's: a client without metrics has the NOOP one, and then no clock is read around the handler. */
    private final MetricsCollector metrics;

    // event loop only
    private byte[] tagBytes;
    /**
     * The connection whose reading this consumer's queue holds paused (it reached its high-water mark and has
     * not fallen below its low-water mark since), or null. Kept so that the resume goes to the connection that
     * was paused, and so that recovery carries the pause over to the new connection ({@link #rebind}).
     */
    private ConnectionHandler readingPausedOn;

    private static final AtomicLongFieldUpdater<ConsumerImpl> STALE_QUEUED =
            AtomicLongFieldUpdater.newUpdater(ConsumerImpl.class, "staleQueued");

    /**
     * Manual-ack deliveries still in the queue whose tags are stale: of a lost channel (set by the event loop at
     * recovery), or requeued by basic.recover (set when it is written, raised for each that comes before its
     * recover-ok); lowered by the consumer's context as it drops them. The broker requeued them, so they do not
     * count against the prefetch. Any thread.
     */
    private volatile long staleQueued;

    /** Whether this consumer's channel already logged its broker sending beyond the prefetch. */
    private boolean beyondPrefetchLogged;

    /** Whether this consumer already logged that its full queue drops deliveries. Event loop. */
    private boolean overflowLogged;

    // any thread (volatile): the tag is written once, at consume-ok, before the handle is published
    private volatile String consumerTag = "";
    private volatile boolean ended;

    // event loop only
    private final HeldCancel heldCancel = new HeldCancel();

    ConsumerImpl(
            ChannelConsumers channel,
            String queueName,
            ConsumeOptions options,
            DeliveryHandler handler,
            AsyncDeliveryHandler asyncHandler) {
        EventExecutor loop = channel.state().outbound().eventLoop();
        assert loop.inEventLoop() : "consumer created off the event loop";
        this.channel = channel;
        this.metrics = channel.metrics();
        this.queueName = queueName;
        this.options = options;
        this.noAck = options.noAck();
        this.handler = handler;
        Executor executor = options.executor() == null ? loop : options.executor();
        this.prefetch = noAck ? 0 : Math.max(0, options.prefetch());
        this.dropAbove = noAck && options.dropOverflow() ? options.highWaterMark() : 0;
        this.queue = new DeliveryQueue(loop, executor, options.lowWaterMark(), options.highWaterMark());
        if (asyncHandler != null || options.concurrency() > 1) {
            this.slots = new SlotDispatch(
                    this, queue, asyncHandler, executor, options.concurrency(), options.initialDemand());
            this.dispatch = slots;
        } else {
            this.slots = null;
            this.dispatch = new SerialDispatch(this, queue, options.initialDemand());
        }
    }

    // ---- event loop: registration, deliveries, end ------------------------------------------------------------

    /** consume-ok named the tag. */
    void activate(String tag) {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        this.tagBytes = tag.getBytes(StandardCharsets.UTF_8);
        this.consumerTag = tag;
    }

    /** Whether the shortstr bytes at {@code index} (length {@code length}) are this consumer's tag. Event loop. */
    boolean hasTag(ByteBuf buf, int index, int length) {
        byte[] tag = tagBytes;
        if (tag == null || tag.length != length) {
            return false;
        }
        for (int i = length - 1; i >= 0; i--) { // tags differ at the end: amq.ctag-... and app-1, app-2
            if (buf.getByte(index + i) != tag[i]) {
                return false;
            }
        }
        return true;
    }

    /** The options it was started with: recovery starts it again with them. */
    ConsumeOptions options() {
        return options;
    }

    /**
     * Recovery: the consumer goes on, with its tag, on the recovered channel's consumers ({@code queue} is its
     * queue's name now: a server-named queue gets a new one). The manual-ack deliveries still queued came on the lost
     * channel and are dropped before the handler ({@link #dropIfLost}), at once even when the consumer has no
     * demand: with the broker's redeliveries behind them they could reach the high-water mark and stop the new
     * connection's reading until the application took demand.
     */
    void rebind(ChannelConsumers recovered, String queue) {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        this.channel = recovered;
        this.queueName = queue;
        this.beyondPrefetchLogged = false; // another connection, perhaps another broker
        if (!noAck) {
            STALE_QUEUED.set(this, this.queue.pending()); // everything queued now came on the lost channel
        }
        ConnectionHandler paused = readingPausedOn;
        ConnectionHandler now = recovered.state().connection();
        if (paused != null && paused != now) {
            // the queue is still over its high-water mark and signals that only once: without this the new
            // connection would read for this consumer without bound until the queue drains
            readingPausedOn = now;
            now.pauseReading();
        }
        if (!noAck) {
            // after the pause moved: the drops may bring the queue below its low-water mark, and the resume must
            // go to the connection that counts the pause now
            this.queue.recheckUnwanted();
        }
    }

    /**
     * basic.recover was written on this consumer's channel: every manual-ack delivery queued now was requeued, and
     * is dropped before the handler ({@link #dropIfLost}), at once even when the consumer has no demand: with the
     * redeliveries behind them they could reach the high-water mark and stop the connection's reading until the
     * application took demand. Event loop.
     */
    void recoverSent() {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        if (!noAck) {
            STALE_QUEUED.set(this, queue.pending());
            queue.recheckUnwanted();
        }
    }

    /** Whether this consumer's queue holds its connection's reading paused. Event loop. */
    boolean holdsReadingPaused() {
        return readingPausedOn != null;
    }

    /** A complete delivery for this consumer (ownership passes to the queue, or it is released here). */
    void deliver(DeliveryImpl delivery) {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        if (dropAbove > 0 && queue.pending() >= dropAbove) {
            dropOverflowing(delivery);
            return;
        }
        if (!noAck && channel.isRequeued(delivery.settleTag())) {
            // before basic.recover's recover-ok: requeued with the rest. Counted before the write, which may drop it
            STALE_QUEUED.incrementAndGet(this);
        }
        queue.write(delivery);
        if (prefetch > 0 && queue.pending() - staleQueued > prefetch) {
            beyondPrefetch();
        }
    }

    /**
     * The queue holds more deliveries not yet handled than the broker may have unacknowledged: it does not keep to
     * the prefetch. Reported, not trusted: the high-water mark stops reading all the same. Event loop.
     */
    private void beyondPrefetch() {
        channel.metrics().deliveredBeyondPrefetch();
        if (!beyondPrefetchLogged) {
            beyondPrefetchLogged = true;
            LOG.warn(
                    "consumer '{}' on channel {} (queue '{}'): the broker sent more than the prefetch of {} it "
                            + "accepted ({} deliveries wait for the handler); reading from the connection pauses when {} wait. "
                            + "Logged once for this consumer and channel; the metric deliveriesBeyondPrefetch counts each",
                    consumerTag,
                    channel.number(),
                    queueName,
                    prefetch,
                    queue.pending(),
                    options.highWaterMark());
        }
    }

    /** The queue is full and the consumer drops what arrives ({@link ConsumeOptions#dropOverflow}). Event loop. */
    private void dropOverflowing(DeliveryImpl delivery) {
        delivery.release(); // noAck: nothing to settle, the broker has forgotten it
        metrics.overflowDeliveryDropped();
        if (!overflowLogged) {
            overflowLogged = true;
            LOG.warn(
                    "consumer '{}' on channel {} (queue '{}'): its queue holds {} deliveries, its high-water mark, and "
                            + "drops what arrives (dropOverflow, noAck: they are lost). Logged once for this consumer; "
                            + "the metric overflowDeliveriesDropped counts each",
                    consumerTag,
                    channel.number(),
                    queueName,
                    dropAbove);
        }
    }

    /** Ends the consumer with {@code cause} ({@code null}: cancelled by the application). */
    void end(AmqpException cause) {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        if (ended) {
            return;
        }
        ended = true;
        channel.ended(this);
        // the broker no longer has this consumer (cancelled, or its channel closed for good: a consumer moved by
        // recovery never ends): an auto-delete queue without consumers is gone, so is its record
        QueueConsumerCounts topology = channel.topology();
        if (topology != null && !consumerTag.isEmpty()) {
            topology.consumerEnded(queueName);
        }
        queue.close();
        dispatch.end();
        endFuture.complete(cause);
        heldCancel.consumerEnded();
    }

    /**
     * A consumer the application was told it does not have (its basic.consume timed out): cancelled at once, and
     * every delivery it gets until cancel-ok is disposed of (rejected back to the queue) rather than handed over.
     */
    void cancelUnwanted() {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        queue.close();
        cancel(new AmqpException("consumer '" + consumerTag + "' started after its basic.consume timed out"));
    }

    /**
     * Recovery's basic.consume for this consumer timed out (it ended then) and its consume-ok came after: the broker
     * has it on {@code recovered} again. It goes back into that channel's table only so that what the broker sends it
     * until cancel-ok is disposed of (its queue is closed: rejected back to the queue), and it is cancelled.
     */
    void cancelRestartedAfterEnd(ChannelConsumers recovered, String queue) {
        rebind(recovered, queue);
        recovered.add(this);
        ChannelState state = recovered.state();
        ByteBuf frame;
        try {
            frame = ConsumeFrames.basicCancel(state.alloc(), state.number(), consumerTag);
        } catch (RuntimeException e) {
            recovered.ended(this);
            return;
        }
        state.call(basicCancel(frame, () -> recovered.ended(this), new CompletableFuture<>()));
    }

    /**
     * basic.cancel with {@code frame} (taken), {@code onCancelOk} run at cancel-ok, also a late one (after a timeout:
     * the broker has cancelled it all the same), and {@code answered} completed by the reply or the failure.
     */
    private static ChannelRpc.Request<Void> basicCancel(
            ByteBuf frame, Runnable onCancelOk, CompletableFuture<Void> answered) {
        return ChannelRpc.Request.of(
                        MethodIds.BASIC_CANCEL,
                        MethodIds.BASIC_CANCEL_OK,
                        -1,
                        frame,
                        (reply, f) -> {
                            onCancelOk.run();
                            f.complete(null);
                        },
                        answered)
                .onLateReply((reply, f) -> onCancelOk.run());
    }

    /** Whether the application cancelled this consumer while its channel was lost (recovery must not start it). */
    boolean cancelRequested() {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        return heldCancel.isHeld();
    }

    /**
     * Whether its deliveries are disposed of rather than handled: it only waits for its cancel (unwanted, or its
     * executor refused a drain), or it ended. Event loop.
     */
    boolean deliveriesClosed() {
        return queue.isClosed();
    }

    /** Recovery: a consumer cancelled while it waited, and not started again, ends as cancelled. */
    void endCancelled() {
        end(heldCancel.cause());
    }

    /**
     * Recovery started this consumer again (consume-ok on the recovered channel) after the application cancelled
     * it: the cancel held for it goes to the broker now.
     */
    void cancelHeldCancel() {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        if (heldCancel.isHeld()) {
            heldCancel.sentAs(cancel(heldCancel.cause()));
        }
    }

    boolean noAck() {
        return noAck;
    }

    // ---- consumer context: handing over ------------------------------------------------------------------

    /**
     * The delivery object for a message that just arrived (takes the three buffers): its dispatch's, which may
     * reuse a released one.
     */
    DeliveryImpl newDelivery(
            ChannelConsumers on, ByteBuf method, ByteBuf header, ByteBuf body, long deliveryTag, boolean redelivered) {
        assert channel.state().outbound().inEventLoop() : "consumer state off the event loop";
        return dispatch.newDelivery(on, method, header, body, deliveryTag, redelivered);
    }

    /** A delivery started on the executor (counted in flight) runs. Consumer's executor. */
    void run(DeliveryImpl d) {
        slots.run(d);
    }

    /** Runs the synchronous handler on the delivery and releases it (the handler borrows it). Consumer context. */
    void handle(DeliveryImpl d) {
        long start = handlerStart();
        try {
            handler.handle(d);
        } catch (Throwable t) {
            handlerFailed(d, t);
        } finally {
            handlerDone(d, start);
        }
    }

    /**
     * Drops a manual-ack delivery whose channel was lost (with its connection, or closed by the broker and
     * recovered) while it waited in the queue, or which basic.recover requeued: the broker requeued it and delivers
     * it again, so handing it over would give the application the message twice, and its settlement could only throw
     * {@link io.warren.StaleDeliveryException}. A noAck delivery is still handed over: nobody will redeliver it.
     * The queue asks before the delivery takes a unit of demand (a pause made meanwhile holds); {@link SlotDispatch}
     * asks again for one lost while held or started, and gives back the unit of the application's demand it took
     * unless a pause came since ({@link DemandGate#giveBack}).
     * Consumer context.
     */
    boolean dropIfLost(DeliveryImpl d) {
        if (noAck || !d.isStale()) {
            return false;
        }
        d.channel.staleDeliveryDropped(d);
        STALE_QUEUED.updateAndGet(this, n -> n > 0 ? n - 1 : 0);
        releaseBorrow(d);
        return true;
    }

    /** The clock before a handler runs, or 0 when handlers are not timed (no clock read at all). */
    long handlerStart() {
        return metrics.timesHandlers() ? System.nanoTime() : 0;
    }

    /** A handler that started at {@code start} is done with the delivery: timed, and the delivery released. */
    void handlerDone(DeliveryImpl d, long start) {
        if (start != 0) {
            metrics.handlerTime(System.nanoTime() - start);
        }
        releaseBorrow(d);
    }

    /** A delivery that will not reach the handler: requeued when possible, released. Any thread. */
    void dispose(DeliveryImpl d) {
        if (!channel.isClosed()) {
            d.settleQuietly(AckCoalescer.REJECT | AckCoalescer.REQUEUE);
        }
        releaseBorrow(d);
    }

    private void releaseBorrow(DeliveryImpl d) {
        try {
            d.release();
        } catch (IllegalReferenceCountException e) {
            LOG.warn(
                    "consumer '{}' on channel {}: delivery {} was released by the application, which only borrows "
                            + "it (retain() it first to keep it)",
                    consumerTag,
                    channel.number(),
                    d.deliveryTag());
        }
    }

    void handlerFailed(DeliveryImpl d, Throwable t) {
        LOG.warn(
                "consumer '{}' on channel {} (queue '{}'): the handler failed on delivery {}{}",
                consumerTag,
                channel.number(),
                queueName,
                d.deliveryTag(),
                noAck ? "" : "; unless the handler settled it, it stays unacknowledged",
                t);
    }

    /** The channel number, for logs. Any thread. */
    int channelNumber() {
        return channel.number();
    }

    // ---- ConsumerHandle (any thread) -------------------------------------------------------------------------

    @Override
    public String consumerTag() {
        return consumerTag;
    }

    @Override
    public String queue() {
        return queueName;
    }

    @Override
    public Channel channel() {
        return channel.state().facade();
    }

    @Override
    public boolean isActive() {
        return !ended;
    }

    @Override
    public void pause() {
        dispatch.pause();
    }

    @Override
    public void resume() {
        fetch(Long.MAX_VALUE);
    }

    @Override
    public void fetch(long count) {
        if (count < 0) {
            throw new IllegalArgumentException("count must not be negative: " + count);
        }
        dispatch.fetch(count);
    }

    /**
     * How long the oldest delivery not yet settled on this consumer's channel has waited (nanoseconds, 0 for none).
     * Any thread.
     */
    @Override
    public long oldestUnacknowledgedAgeNanos() {
        return ended ? 0 : channel.oldestUnacknowledgedAgeNanos();
    }

    @Override
    public long queued() {
        return queue.pending() + dispatch.held();
    }

    @Override
    public CompletionStage<Void> cancel() {
        return cancel(null);
    }

    /** basic.cancel; the consumer ends with {@code cause} on cancel-ok ({@code null}: by the application). */
    private CompletionStage<Void> cancel(AmqpException cause) {
        CompletableFuture<Void> result = new CompletableFuture<>();
        ChannelState state = channel.state();
        ByteBuf frame;
        try {
            frame = ConsumeFrames.basicCancel(state.alloc(), state.number(), consumerTag);
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
            return result;
        }
        CompletableFuture<Void> rpc = new CompletableFuture<>();
        rpc.whenComplete((v, e) -> {
            // a consumer that ended meanwhile (channel closed, broker cancel) is cancelled all the same
            if (e == null || ended) {
                result.complete(null);
            } else {
                result.completeExceptionally(e);
            }
        });
        state.outbound()
                .execute(new LoopTask(
                        () -> {
                            if (ended) {
                                frame.release();
                                rpc.complete(null);
                                return;
                            }
                            // read again on the loop: recovery may have moved the consumer to a new channel state
                            // since the caller's thread looked (the channel number, and so the frame, stay the same)
                            ChannelState now = channel.state();
                            if (!now.isUsable()) {
                                // lost with its connection: recovery would start it again, so the cancel waits
                                // for recovery's outcome (or the channel's close, which ends the consumer)
                                frame.release();
                                heldCancel.hold(cause, rpc);
                                return;
                            }
                            CompletableFuture<Void> answered = new CompletableFuture<>();
                            answered.whenComplete((v, e) -> {
                                if (e != null && !ended && !channel.state().isUsable()) {
                                    // the channel went while basic.cancel was on its way: recovery decides, as above
                                    heldCancel.hold(cause, rpc);
                                } else if (e == null) {
                                    rpc.complete(null);
                                } else {
                                    rpc.completeExceptionally(e);
                                }
                            });
                            now.call(basicCancel(frame, () -> end(cause), answered));
                        },
                        rpc,
                        frame::release));
        return result;
    }

    @Override
    public CompletionStage<AmqpException> endFuture() {
        return endFuture;
    }

    @Override
    public String toString() {
        return "Consumer('" + consumerTag + "' on queue '" + queueName + "', channel " + channel.number()
                + (noAck ? ", noAck" : "") + (ended ? ", ended" : "") + ")";
    }

    /** The queue between the event loop and the consumer's context; its hooks call back into the consumer. */
    private final class DeliveryQueue extends InboundMessageQueue<DeliveryImpl> {

        DeliveryQueue(EventExecutor loop, Executor context, int lowWaterMark, int highWaterMark) {
            super(loop, context, lowWaterMark, highWaterMark);
        }

        @Override
        protected void handleMessage(DeliveryImpl message) {
            dispatch.onDelivery(message);
        }

        @Override
        protected boolean handleUnwanted(DeliveryImpl message) {
            return dropIfLost(message);
        }

        @Override
        protected void handlePause() {
            if (dropAbove > 0) {
                return; // full: deliver() drops what arrives, and the connection goes on reading
            }
            ConnectionHandler connection = channel.state().connection();
            readingPausedOn = connection;
            connection.pauseReading();
        }

        @Override
        protected void handleResume() {
            ConnectionHandler paused = readingPausedOn;
            if (paused != null) {
                readingPausedOn = null;
                paused.resumeReading();
            }
        }

        @Override
        protected void handleDispose(DeliveryImpl message) {
            dispose(message);
        }

        @Override
        protected void handleFailure(Throwable failure) {
            if (failure instanceof RejectedExecutionException) {
                // The queue has closed itself: every later delivery would be rejected with requeue and come
                // straight back, for ever. Cancel, so that the broker gives the messages to other consumers.
                LOG.warn(
                        "consumer '{}' on channel {}: its executor refused a drain (shut down?); the consumer is "
                                + "cancelled",
                        consumerTag,
                        channel.number(),
                        failure);
                cancel(new AmqpException(
                        "consumer '" + consumerTag + "' on queue '" + queueName + "' (channel " + channel.number()
                                + ") was cancelled: its executor refused to run its deliveries",
                        failure));
                return;
            }
            LOG.warn(
                    "consumer '{}' on channel {}: delivery queue callback failed",
                    consumerTag,
                    channel.number(),
                    failure);
        }
    }
}
