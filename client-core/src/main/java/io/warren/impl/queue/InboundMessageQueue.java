package io.warren.impl.queue;

import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.OrderedEventExecutor;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Carries messages from a producer event loop (the connection's Netty loop) to a consumer context
 * (the same loop, another loop, a worker pool, virtual threads, a Vert.x context: any
 * {@link Executor}) with demand-driven delivery and water-mark back-pressure. It schedules everything
 * itself on top of the lock-free {@link HandoffQueue}; subclasses override the hooks.
 *
 * <h2>Threads</h2>
 * <ul>
 *   <li>{@link #write} — producer loop only. {@link #handlePause()} and {@link #handleResume()} run on
 *       the producer loop.</li>
 *   <li>{@link #handleMessage}, and {@link #handleUnwanted} before it, run in the consumer context, one message
 *       at a time and never concurrently, even when the executor runs every task on a different thread: only
 *       the holder of the queue's ownership (see {@link HandoffQueue}) drains, and there is one ownership.</li>
 *   <li>{@link #pause()}, {@link #resume()}, {@link #fetch(long)}, {@link #close()} — any thread,
 *       including from inside {@link #handleMessage}.</li>
 *   <li>{@link #handleDispose} runs in the consumer context for queued messages and on the producer
 *       loop for messages written after {@link #close()}. When {@link #close()} finds the queue waiting for
 *       demand, or waiting for a drain its consumer context accepted and has not started, it takes the drain
 *       back and disposes of the queued messages on its own thread (in the same-thread flavour only when it is
 *       called on the loop): a context that accepted a task may never run it.</li>
 *   <li>If the consumer context rejects a task ({@link RejectedExecutionException}: it was shut down),
 *       nothing can be delivered any more: the queue closes itself, reports the rejection to
 *       {@link #handleFailure} and disposes of what it holds on the thread that was refused.</li>
 * </ul>
 *
 * <h2>Flavour</h2>
 * When the producer loop and the consumer context are the same event loop, the same-thread flavour is
 * used and a {@link #write} drains at once, in the caller's stack, without a task hand-off. Otherwise
 * the cross-thread flavour hands the drain to the consumer with one {@code execute} each time the queue
 * goes from idle to busy (not per message) and hands the writable-again signal back to the producer
 * loop with an {@code execute}.
 *
 * <h2>Demand</h2>
 * Demand starts unbounded ({@code Long.MAX_VALUE}). {@link #pause()} sets it to 0; {@link #fetch(long)}
 * adds to it (saturating) and wakes the consumer; each delivered message takes one unit unless it is
 * unbounded. A message that finds no demand is parked and delivered first when demand returns.
 *
 * <h2>Back-pressure</h2>
 * When the pending count reaches the high-water mark, {@link #handlePause()} is called once on the
 * producer loop (stop reading: {@code autoRead} off, or withhold credit). When the consumer has brought
 * it below the low-water mark, {@link #handleResume()} is called once on the producer loop. Pause and
 * resume strictly alternate; they stay balanced across {@link #close()} (disposal counts as draining),
 * so a producer that counts paused queues never leaks a pause.
 *
 * <h2>Disposal</h2>
 * {@link #close()} makes every queued message, the parked one included, and every message written
 * later go to {@link #handleDispose} (by default {@link ReferenceCountUtil#release(Object)}) instead of
 * {@link #handleMessage}. A message handed to {@link #handleMessage} is the handler's to release.
 *
 * @param <M> the message type; {@code null} is refused
 */
public abstract class InboundMessageQueue<M> {

    private static final Logger LOG = LoggerFactory.getLogger(InboundMessageQueue.class);

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicLongFieldUpdater<InboundMessageQueue<?>> DEMAND =
            (AtomicLongFieldUpdater) AtomicLongFieldUpdater.newUpdater(InboundMessageQueue.class, "demand");

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicIntegerFieldUpdater<InboundMessageQueue<?>> SUSPENDED =
            (AtomicIntegerFieldUpdater) AtomicIntegerFieldUpdater.newUpdater(InboundMessageQueue.class, "suspended");

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static final AtomicIntegerFieldUpdater<InboundMessageQueue<?>> DRAIN_PENDING =
            (AtomicIntegerFieldUpdater) AtomicIntegerFieldUpdater.newUpdater(InboundMessageQueue.class, "drainPending");

    // immutable
    private final Executor producer;
    private final Executor consumer;
    private final boolean sameThread;
    private final HandoffQueue<M> queue;
    private final Predicate<M> deliver = this::deliver;
    private final Runnable drainTask = this::startDrain;
    private final Runnable writableTask = this::acknowledgeWritable;

    // any thread (volatile)
    private volatile long demand = Long.MAX_VALUE;
    /**
     * 1 while a drain that found no demand holds the ownership at rest; whoever sets it back to 0
     * (a fetch, a close, or the drain itself on its re-check) owns the queue and must drain it.
     */
    private volatile int suspended;

    /**
     * 1 from the hand-over of the ownership to a drain task until the task starts; whoever sets it back to 0 (the
     * task, or {@link #close()} taking the drain back) owns the queue. An executor may accept a task and never run
     * it ({@code ExecutorService.shutdownNow()} returns the tasks it dropped), and what waits for that drain would
     * never be released.
     */
    private volatile int drainPending;

    private volatile boolean closed;

    /**
     * 1 from a {@link #recheckUnwanted()} until the next drain round starts: a drain that asked about the head just
     * before the message became unwanted, and found no demand, must not put the ownership at rest (the recheck saw
     * no drain at rest to wake).
     */
    private volatile int recheck;

    /**
     * Picks the flavour with {@link #sameEventLoop(Executor, Executor)}.
     *
     * @param producerLoop the producer's event loop: {@link #write}, {@link #handlePause()} and
     *     {@link #handleResume()} run there
     * @param consumerContext runs the drains, hence {@link #handleMessage}
     * @param lowWaterMark resume the producer when the pending count falls below this (at least 1)
     * @param highWaterMark pause the producer when the pending count reaches this (at least
     *     {@code lowWaterMark})
     */
    protected InboundMessageQueue(
            Executor producerLoop, Executor consumerContext, int lowWaterMark, int highWaterMark) {
        this(producerLoop, consumerContext, lowWaterMark, highWaterMark, sameEventLoop(producerLoop, consumerContext));
    }

    /**
     * For adapters that know better than {@link #sameEventLoop(Executor, Executor)}, e.g. a Vert.x
     * event-loop context on the connection's loop.
     *
     * @param sameThread {@code true} only if every task given to {@code consumerContext} runs on the
     *     producer loop's thread, so a drain may run in {@link #write}'s stack
     */
    protected InboundMessageQueue(
            Executor producerLoop, Executor consumerContext, int lowWaterMark, int highWaterMark, boolean sameThread) {
        if (producerLoop == null || consumerContext == null) {
            throw new NullPointerException("producerLoop and consumerContext are required");
        }
        this.producer = producerLoop;
        this.consumer = consumerContext;
        this.sameThread = sameThread;
        this.queue = sameThread
                ? HandoffQueue.sameThread(lowWaterMark, highWaterMark)
                : HandoffQueue.crossThread(lowWaterMark, highWaterMark);
    }

    /**
     * Whether two executors are the same event loop: the same object, or two Netty
     * {@link OrderedEventExecutor}s that both run the calling thread (so call this on the producer loop). Ordered
     * only: an executor such as {@code ImmediateEventExecutor} says it is in its loop on every thread, and runs a
     * task on whichever thread hands it one (an application thread's fetch), so it needs the cross-thread queue.
     */
    public static boolean sameEventLoop(Executor producerLoop, Executor consumerContext) {
        if (producerLoop == consumerContext) {
            return true;
        }
        return producerLoop instanceof OrderedEventExecutor p
                && consumerContext instanceof OrderedEventExecutor c
                && p.inEventLoop()
                && c.inEventLoop();
    }

    // ---------------------------------------------------------------- hooks

    /**
     * Consumer context. Delivers one message; the handler owns it from here (release it, or retain and
     * release later). An exception goes to {@link #handleFailure} and delivery continues.
     */
    protected abstract void handleMessage(M message);

    /**
     * Consumer context, before {@code message} takes a unit of demand. Whether the consumer will not have it
     * (gone stale, say): {@code true} means the hook has disposed of it, and delivery goes on to the next message
     * without taking demand, so a {@link #pause()} made meanwhile holds. The default keeps every message. An
     * exception goes to {@link #handleFailure}, and the message counts as the hook's.
     */
    protected boolean handleUnwanted(M message) {
        return false;
    }

    /** Producer loop. The pending count reached the high-water mark: stop producing. */
    protected void handlePause() {}

    /** Producer loop. The pending count fell below the low-water mark after a pause: produce again. */
    protected void handleResume() {}

    /**
     * Consumer context for queued messages, producer loop for messages written after {@link #close()}
     * (or, once the consumer context has rejected a task, the thread it rejected).
     * Releases a message that will never be delivered. The default is
     * {@link ReferenceCountUtil#release(Object)}, which ignores messages that are not reference counted.
     */
    protected void handleDispose(M message) {
        ReferenceCountUtil.release(message);
    }

    /** Any of the two threads. A hook threw; the default logs it. */
    protected void handleFailure(Throwable failure) {
        LOG.warn("InboundMessageQueue callback failed", failure);
    }

    // ---------------------------------------------------------------- producer

    /**
     * Producer loop only. Queues {@code message} and schedules its delivery; after {@link #close()},
     * disposes of it instead. Ownership of {@code message} passes to the queue.
     */
    public final void write(M message) {
        assert inProducerLoop() : "write must be called on the producer loop";
        if (closed) {
            dispose(message);
            return;
        }
        int bits = queue.add(message);
        if (HandoffQueue.unwritable(bits)) {
            // Before the drain: a same-thread drain may resume the producer at once, and pause must come first.
            pauseProducer();
        }
        if (HandoffQueue.drainRequired(bits)) {
            if (sameThread) {
                drainOwned();
            } else {
                scheduleDrain();
            }
        }
    }

    // ---------------------------------------------------------------- demand, any thread

    /** Any thread. Stops delivery after the message being delivered, if any. */
    public final void pause() {
        demand = 0;
    }

    /** Any thread. Unbounded demand: {@code fetch(Long.MAX_VALUE)}. */
    public final void resume() {
        fetch(Long.MAX_VALUE);
    }

    /**
     * Any thread. Adds {@code amount} to the demand (saturating at {@code Long.MAX_VALUE}, which means
     * unbounded) and wakes the consumer if it was waiting for demand.
     *
     * @throws IllegalArgumentException if {@code amount} is negative
     */
    public final void fetch(long amount) {
        if (amount < 0) {
            throw new IllegalArgumentException("amount must not be negative: " + amount);
        }
        if (amount == 0) {
            return;
        }
        while (true) {
            long current = demand;
            long next = current + amount;
            if (next < 0) {
                next = Long.MAX_VALUE;
            }
            if (next == current || DEMAND.compareAndSet(this, current, next)) {
                break;
            }
        }
        wakeOwner();
    }

    /**
     * Any thread. Lets a drain that waits for demand look at the queued messages again, some of which may have
     * become unwanted since ({@link #handleUnwanted}): those at the head are disposed of without taking demand, and
     * the drain stops again at the first wanted one. Nothing to do when no drain waits (one under way, or the next,
     * asks about every message anyway).
     */
    public final void recheckUnwanted() {
        recheck = 1; // before wakeOwner's read of suspended: pairs with the re-check in drainOwned
        wakeOwner();
    }

    /**
     * Any thread, idempotent. Disposes of every queued message and of every message written from now on (on the
     * producer loop). The queued ones are disposed in the consumer context by the drain under way; if none is
     * under way (the queue waits for demand, or for a drain task its context has not started), on the calling
     * thread, except in the same-thread flavour off the loop, where a drain is scheduled on the loop. A pause
     * signalled before is still followed by its resume.
     */
    public final void close() {
        if (closed) {
            return;
        }
        closed = true;
        boolean here = mayDrainHere();
        // Pairs with the re-check in drainOwned, as in wakeOwner.
        if (suspended == 1 && SUSPENDED.compareAndSet(this, 1, 0)) {
            if (here) {
                drainOwned();
            } else {
                scheduleDrain();
            }
        } else if (here && drainPending == 1 && DRAIN_PENDING.compareAndSet(this, 1, 0)) {
            drainOwned(); // taken back: the task finds nothing to do when (if ever) it runs
        }
    }

    /** Any thread. Whether {@link #close()} was called. */
    public final boolean isClosed() {
        return closed;
    }

    /** Any thread. The current demand; {@code Long.MAX_VALUE} means unbounded. */
    public final long demand() {
        return demand;
    }

    /** Whether the same-thread flavour was chosen. */
    public final boolean isSameThread() {
        return sameThread;
    }

    /**
     * The messages written and not yet handed to {@link #handleMessage} (the one in hand is not counted). Exact in
     * the consumer context and, in the same-thread flavour, on the loop; a snapshot elsewhere (see
     * {@link HandoffQueue#waiting()}).
     */
    public final long pending() {
        return queue.waiting();
    }

    /** For tests: a drain holds the ownership at rest, waiting for demand. */
    final boolean isSuspended() {
        return suspended == 1;
    }

    /** For tests. */
    final HandoffQueue<M> handoff() {
        return queue;
    }

    // ---------------------------------------------------------------- internals

    private void wakeOwner() {
        // Pairs with the re-check in drainOwned: we wrote demand, closed or recheck, then read suspended; the
        // drain wrote suspended, then reads them. One of the two sees the other.
        if (suspended == 1 && SUSPENDED.compareAndSet(this, 1, 0)) {
            scheduleDrain();
        }
    }

    /** Called by the owner only: hands the ownership to a drain in the consumer context. */
    private void scheduleDrain() {
        // Before execute, since the task may run at once; a volatile write, as it pairs with close() below.
        drainPending = 1;
        try {
            consumer.execute(drainTask);
        } catch (RejectedExecutionException e) {
            if (!DRAIN_PENDING.compareAndSet(this, 1, 0)) {
                return; // close took the drain back and disposes of everything
            }
            // The consumer context is gone, so nothing can be delivered any more. We hold the ownership,
            // so draining here cannot overlap another drain: dispose of everything rather than leak it.
            closed = true;
            handleFailure(e);
            drainOwned();
            return;
        }
        // A close() that came before drainPending was set found no drain to take back, and the executor may drop the
        // task (shut down after the close). We wrote drainPending, then read closed; close() writes closed, then
        // reads drainPending: one of the two sees the other and takes the drain back, unless the task has started.
        if (closed && mayDrainHere() && DRAIN_PENDING.compareAndSet(this, 1, 0)) {
            drainOwned();
        }
    }

    /**
     * Whether this thread may drain in place of the consumer context: always in the cross-thread flavour (the
     * ownership orders the drains), only on the loop in the same-thread flavour (its queue has plain fields).
     */
    private boolean mayDrainHere() {
        return !sameThread || (producer instanceof EventExecutor loop && loop.inEventLoop());
    }

    /** Consumer context: the drain task, unless close took the drain back before it started. */
    private void startDrain() {
        if (DRAIN_PENDING.compareAndSet(this, 1, 0)) {
            drainOwned();
        }
    }

    /** Owner only: the consumer context, or a closer that took the drain back. */
    private void drainOwned() {
        while (true) {
            // This round asks about every message it offers again. Stored only when set: a volatile store is a
            // full fence, paid per message when each delivery is a round of its own.
            if (recheck != 0) {
                recheck = 0;
            }
            int bits = queue.drain(deliver);
            if (HandoffQueue.writableAgain(bits)) {
                if (sameThread) {
                    acknowledgeWritable();
                } else {
                    scheduleWritable();
                }
            }
            if (!HandoffQueue.drainRequired(bits)) {
                return; // the queue is empty: the ownership is given up
            }
            // No demand: put the ownership at rest for fetch or close to claim. Nothing below may touch
            // consumer state unless the CAS wins, since a claimer's drain may already be running.
            suspended = 1;
            if ((demand == 0 && !closed && recheck == 0) || !SUSPENDED.compareAndSet(this, 1, 0)) {
                return;
            }
        }
    }

    private void scheduleWritable() {
        try {
            producer.execute(writableTask);
        } catch (RejectedExecutionException e) {
            // The producer loop is gone: there is nobody left to resume.
            handleFailure(e);
        }
    }

    /** Producer loop: completes a writable-again signal. */
    private void acknowledgeWritable() {
        if (queue.acknowledgeWritable()) {
            try {
                handleResume();
            } catch (Throwable t) {
                handleFailure(t);
            }
        }
    }

    private void pauseProducer() {
        try {
            handlePause();
        } catch (Throwable t) {
            handleFailure(t);
        }
    }

    /** Consumer context: the drain predicate. Refuses only when there is no demand. */
    private boolean deliver(M message) {
        if (closed) {
            dispose(message);
            return true;
        }
        if (unwanted(message)) {
            return true;
        }
        while (true) {
            long current = demand;
            if (current == 0) {
                return false;
            }
            if (current == Long.MAX_VALUE || DEMAND.compareAndSet(this, current, current - 1)) {
                break;
            }
        }
        try {
            handleMessage(message);
        } catch (Throwable t) {
            handleFailure(t);
        }
        return true;
    }

    private boolean unwanted(M message) {
        try {
            return handleUnwanted(message);
        } catch (Throwable t) {
            handleFailure(t);
            return true;
        }
    }

    private void dispose(M message) {
        try {
            handleDispose(message);
        } catch (Throwable t) {
            handleFailure(t);
        }
    }

    private boolean inProducerLoop() {
        return !(producer instanceof EventExecutor loop) || loop.inEventLoop();
    }
}
