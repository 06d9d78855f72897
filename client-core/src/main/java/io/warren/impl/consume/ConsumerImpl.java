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
import io.warren.impl.ChannelRpc;
import io.warren.impl.ChannelState;
import io.warren.impl.ConnectionHandler;
import io.warren.impl.MetricsCollector;
import io.warren.impl.queue.InboundMessageQueue;
import io.warren.codec.method.MethodIds;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer: its {@link InboundMessageQueue} from the event loop to its context, the handler calls, the
 * demand, and its end. The public face is itself ({@link ConsumerHandle}).
 *
 * <h2>Two ways of handing deliveries over</h2>
 * <ul>
 *   <li><b>One at a time, synchronously</b> (a {@link DeliveryHandler}, concurrency 1): the queue's drain
 *       calls the handler in place; the application's pause/resume/fetch are the queue's demand, exactly.</li>
 *   <li><b>Counted in flight</b> (an {@link AsyncDeliveryHandler}, or concurrency n &gt; 1): the queue's
 *       demand is the free slots. It starts at n and a completed delivery gives one back, by raising the total
 *       granted to {@code completed + n} with a CAS, so at most n deliveries are ever out of the queue and
 *       not completed, without a lock. The application's demand is a second gate applied as the drain takes a
 *       delivery: without demand it is held (at most n) and started when demand returns. A synchronous handler
 *       runs on the executor, one task per delivery (the delivery is the task); an asynchronous one is called
 *       on the drain and its stage says when the slot is free.</li>
 * </ul>
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
public final class ConsumerImpl implements ConsumerHandle {

    private static final Logger LOG = LoggerFactory.getLogger(ConsumerImpl.class);

    private static final AtomicLongFieldUpdater<ConsumerImpl> USER_DEMAND =
            AtomicLongFieldUpdater.newUpdater(ConsumerImpl.class, "userDemand");
    private static final AtomicLongFieldUpdater<ConsumerImpl> GRANTED =
            AtomicLongFieldUpdater.newUpdater(ConsumerImpl.class, "granted");
    private static final AtomicLongFieldUpdater<ConsumerImpl> COMPLETED =
            AtomicLongFieldUpdater.newUpdater(ConsumerImpl.class, "completed");

    /**
     * At most this many released deliveries are kept for reuse, oldest first; past it the oldest is dropped (a
     * consumer that never acks keeps no more, and one tag never settled cannot stop reuse).
     */
    private static final int MAX_RELEASED = 4096;

    // immutable but for recovery, which moves the consumer to the recovered channel (event loop; read anywhere)
    private volatile ChannelConsumers channel;
    private volatile String queueName;
    // immutable
    private final ConsumeOptions options;
    private final boolean noAck;
    private final DeliveryHandler handler;
    private final AsyncDeliveryHandler asyncHandler;
    private final Executor executor;
    private final int concurrency;
    /** Deliveries are counted in flight (async handler or concurrency above 1). */
    private final boolean slots;
    /** A synchronous handler run in parallel on the executor. */
    private final boolean parallel;
    /**
     * The prefetch the broker accepted for this consumer (basic.qos before basic.consume), or 0 when none binds
     * it (none asked, or noAck): the queue never holds more from a broker that keeps to it.
     */
    private final int prefetch;
    private final DeliveryQueue queue;
    private final ConcurrentLinkedQueue<DeliveryImpl> held;
    /**
     * Released deliveries kept for reuse (handler on the event loop, one at a time): the oldest is reused once its
     * tag is settled, so a steady stream allocates no delivery objects. Event loop only.
     */
    private final ArrayDeque<DeliveryImpl> released;
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
     * Manual-ack deliveries of a lost channel still in the queue (set by the event loop at recovery, lowered by the
     * consumer's context as it drops them): the broker requeued them, so they do not count against the new
     * channel's prefetch. Any thread.
     */
    private volatile long staleQueued;

    /** Whether this consumer's channel already logged its broker sending beyond the prefetch. */
    private boolean beyondPrefetchLogged;

    // any thread (volatile): the tag is written once, at consume-ok, before the handle is published
    private volatile String consumerTag = "";
    private volatile boolean ended;

    // any thread (volatile, field updaters): the counted mode's demand
    private volatile long userDemand = Long.MAX_VALUE;
    private volatile long granted;
    private volatile long completed;

    /** Event loop. */
    ConsumerImpl(ChannelConsumers channel, String queueName, ConsumeOptions options, DeliveryHandler handler,
                 AsyncDeliveryHandler asyncHandler) {
        EventExecutor loop = channel.state().outbound().eventLoop();
        this.channel = channel;
        this.metrics = channel.metrics();
        this.queueName = queueName;
        this.options = options;
        this.noAck = options.noAck();
        this.handler = handler;
        this.asyncHandler = asyncHandler;
        this.executor = options.executor() == null ? loop : options.executor();
        this.concurrency = options.concurrency();
        this.slots = asyncHandler != null || concurrency > 1;
        this.parallel = asyncHandler == null && concurrency > 1;
        this.prefetch = noAck ? 0 : Math.max(0, options.prefetch());
        this.queue = new DeliveryQueue(loop, executor, options.lowWaterMark(), options.highWaterMark());
        this.released = handler != null && !slots && queue.isSameThread() ? new ArrayDeque<>(16) : null;
        if (slots) {
            held = new ConcurrentLinkedQueue<>();
            userDemand = options.initialDemand();
            queue.pause();
            granted = concurrency;
            queue.fetch(concurrency);
        } else {
            held = null;
            if (options.initialDemand() != Long.MAX_VALUE) {
                queue.pause();
                queue.fetch(options.initialDemand());
            }
        }
    }

    // ---- event loop: registration, deliveries, end ------------------------------------------------------------

    /** consume-ok named the tag. Event loop. */
    void activate(String tag) {
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
     * queue's name now: a server-named queue gets a new one). Event loop.
     */
    void rebind(ChannelConsumers recovered, String queue) {
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
    }

    /** Whether this consumer's queue holds its connection's reading paused. Event loop. */
    boolean holdsReadingPaused() {
        return readingPausedOn != null;
    }

    /** A complete delivery for this consumer (ownership passes to the queue). Event loop. */
    void deliver(DeliveryImpl delivery) {
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
            LOG.warn("consumer '{}' on channel {} (queue '{}'): the broker sent more than the prefetch of {} it "
                    + "accepted ({} deliveries wait for the handler); reading from the connection pauses when {} wait. "
                    + "Logged once for this consumer and channel; the metric deliveriesBeyondPrefetch counts each",
                    consumerTag, channel.number(), queueName, prefetch, queue.pending(), options.highWaterMark());
        }
    }

    /** Ends the consumer with {@code cause} ({@code null}: cancelled by the application). Event loop. */
    void end(AmqpException cause) {
        if (ended) {
            return;
        }
        ended = true;
        channel.ended(this);
        // the broker no longer has this consumer (cancelled, or its channel closed for good: a consumer moved by
        // recovery never ends): an auto-delete queue without consumers is gone, so is its record
        io.warren.impl.recovery.TopologyRecorder topology = channel.topology();
        if (topology != null && !consumerTag.isEmpty()) {
            topology.consumerEnded(queueName);
        }
        queue.close();
        if (held != null) {
            disposeHeld();
        }
        endFuture.complete(cause);
    }

    boolean noAck() {
        return noAck;
    }

    // ---- consumer context: handing over ------------------------------------------------------------------

    /** Consumer context, one at a time (the queue's drain). */
    private void onDelivery(DeliveryImpl d) {
        if (!slots) {
            process(d);
        } else if (takeUserDemand()) {
            if (parallel) {
                start(d);
            } else {
                processAsync(d);
            }
        } else {
            held.offer(d);
            // a resume or an end racing with the offer either sees the delivery or is seen here
            if (userDemand != 0 || ended) {
                startHeld();
            }
        }
    }

    /** Runs the synchronous handler, or starts the asynchronous one. Consumer's executor. */
    void process(DeliveryImpl d) {
        if (asyncHandler != null) {
            processAsync(d);
            return;
        }
        if (droppedAsLost(d)) {
            if (slots) {
                completed();
            }
            return;
        }
        long start = metrics.timesHandlers() ? System.nanoTime() : 0;
        try {
            handler.handle(d);
        } catch (Throwable t) {
            handlerFailed(d, t);
        } finally {
            timed(start);
            releaseBorrow(d);
            if (slots) {
                completed();
            } else if (released != null && d.refCnt() == 0) {
                if (released.size() == MAX_RELEASED) {
                    // the oldest's tag has waited a whole pool's worth of messages (a failed handler leaves it
                    // unsettled until the channel closes): let it go, or it blocks reuse for good
                    released.pollFirst();
                }
                released.addLast(d); // not retained: ours again once its tag is settled
            }
        }
    }

    /**
     * The delivery object for a message that just arrived (takes the three buffers): a released one when the
     * oldest kept is reusable (released, no settlement on its way, its tag settled on its channel; at once with
     * noAck), else a new one. Event loop.
     */
    DeliveryImpl newDelivery(ChannelConsumers on, ByteBuf method, ByteBuf header, ByteBuf body, long deliveryTag,
                             boolean redelivered) {
        if (released != null) {
            DeliveryImpl d = released.peekFirst();
            if (d != null && d.reusable() && (noAck || on.acks().isSettled(d.settleTag()))) {
                released.pollFirst();
                if (d.channel == on) { // after a recovery the kept ones belong to a channel that is gone
                    d.reuse(on, method, header, body, deliveryTag, redelivered);
                    return d;
                }
            }
        }
        return new DeliveryImpl(this, on, method, header, body, deliveryTag, redelivered);
    }

    /**
     * Drops a manual-ack delivery whose channel was lost (with its connection, or closed by the broker and
     * recovered) while it waited in the queue: the broker requeued it with that channel and delivers it again,
     * so handing it over would give the application the message twice, and its settlement could only throw
     * {@link io.warren.StaleDeliveryException}. A noAck delivery is still handed over: nobody will redeliver it.
     */
    private boolean droppedAsLost(DeliveryImpl d) {
        if (noAck || !d.channel.isStale()) {
            return false;
        }
        d.channel.lostDeliveryDropped(d);
        STALE_QUEUED.updateAndGet(this, n -> n > 0 ? n - 1 : 0);
        releaseBorrow(d);
        // the delivery took a unit of the application's demand that its redelivered copy needs
        if (slots) {
            addUserDemand(1);
            startHeld();
        } else {
            queue.fetch(1);
        }
        return true;
    }

    private void processAsync(DeliveryImpl d) {
        if (droppedAsLost(d)) {
            completed();
            return;
        }
        long start = metrics.timesHandlers() ? System.nanoTime() : 0;
        CompletionStage<?> stage;
        try {
            stage = asyncHandler.handle(d);
        } catch (Throwable t) {
            handlerFailed(d, t);
            timed(start);
            releaseBorrow(d);
            completed();
            return;
        }
        if (stage == null) {
            timed(start);
            releaseBorrow(d);
            completed();
            return;
        }
        stage.whenComplete((v, failure) -> {
            if (failure != null) {
                handlerFailed(d, failure);
            }
            timed(start);
            releaseBorrow(d);
            completed();
        });
    }

    /** A handler that started at {@code start} (0: not timed) is done. */
    private void timed(long start) {
        if (start != 0) {
            metrics.handlerTime(System.nanoTime() - start);
        }
    }

    /** Starts a delivery on the executor (the delivery is the task). */
    private void start(DeliveryImpl d) {
        try {
            executor.execute(d);
        } catch (RejectedExecutionException e) {
            LOG.warn("consumer '{}' on channel {}: its executor refused delivery {}; dropped", consumerTag,
                    channel.number(), d.deliveryTag(), e);
            dispose(d);
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

    private boolean takeUserDemand() {
        while (true) {
            long d = userDemand;
            if (d == 0) {
                return false;
            }
            if (d == Long.MAX_VALUE || USER_DEMAND.compareAndSet(this, d, d - 1)) {
                return true;
            }
        }
    }

    private void giveBackUserDemand() {
        addUserDemand(1);
    }

    private void addUserDemand(long amount) {
        while (true) {
            long d = userDemand;
            long next = d + amount;
            if (next < 0 || d == Long.MAX_VALUE) {
                next = Long.MAX_VALUE;
            }
            if (next == d || USER_DEMAND.compareAndSet(this, d, next)) {
                return;
            }
        }
    }

    /** Starts held deliveries while there is demand; any thread. */
    private void startHeld() {
        while (!held.isEmpty()) {
            if (ended) {
                disposeHeld();
                return;
            }
            if (!takeUserDemand()) {
                return;
            }
            DeliveryImpl d = held.poll();
            if (d == null) {
                giveBackUserDemand(); // another thread took it
                return;
            }
            start(d);
        }
    }

    private void disposeHeld() {
        DeliveryImpl d;
        while ((d = held.poll()) != null) {
            dispose(d);
            completed();
        }
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
            LOG.warn("consumer '{}' on channel {}: delivery {} was released by the application, which only borrows "
                    + "it (retain() it first to keep it)", consumerTag, channel.number(), d.deliveryTag());
        }
    }

    private void handlerFailed(DeliveryImpl d, Throwable t) {
        LOG.warn("consumer '{}' on channel {} (queue '{}'): the handler failed on delivery {}{}", consumerTag,
                channel.number(), queueName, d.deliveryTag(), noAck ? "" : "; it stays unacknowledged", t);
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
        if (slots) {
            userDemand = 0;
        } else {
            queue.pause();
        }
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
        if (!slots) {
            queue.fetch(count);
        } else if (count > 0) {
            addUserDemand(count);
            startHeld();
        }
    }

    /**
     * How long the oldest delivery not yet settled on this consumer's channel has waited (nanoseconds, 0 for none).
     * Any thread.
     */
    public long oldestUnacknowledgedAgeNanos() {
        return ended ? 0 : channel.oldestUnacknowledgedAgeNanos();
    }

    @Override
    public long queued() {
        return queue.pending() + (held == null ? 0 : held.size());
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
        state.outbound().execute(new ChannelConsumers.Task(() -> {
            if (ended) {
                frame.release();
                rpc.complete(null);
                return;
            }
            state.call(ChannelRpc.Request.of(MethodIds.BASIC_CANCEL, MethodIds.BASIC_CANCEL_OK, -1, frame,
                    (reply, f) -> {
                        end(cause);
                        f.complete(null);
                    }, rpc));
        }, rpc, frame));
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
            onDelivery(message);
        }

        @Override
        protected void handlePause() {
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
                LOG.warn("consumer '{}' on channel {}: its executor refused a drain (shut down?); the consumer is "
                        + "cancelled", consumerTag, channel.number(), failure);
                cancel(new AmqpException("consumer '" + consumerTag + "' on queue '" + queueName + "' (channel "
                        + channel.number() + ") was cancelled: its executor refused to run its deliveries", failure));
                return;
            }
            LOG.warn("consumer '{}' on channel {}: delivery queue callback failed", consumerTag, channel.number(),
                    failure);
        }
    }
}
