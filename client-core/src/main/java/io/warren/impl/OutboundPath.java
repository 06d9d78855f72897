package io.warren.impl;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.warren.codec.Frames;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscUnboundedArrayQueue;

/**
 * The one way out of a connection: every frame Warren writes, from any thread, goes through here.
 *
 * <ul>
 *   <li>On the event loop a write goes straight to the pipeline. The flush is coalesced: once at the end
 *       of the read batch ({@link #endReadBatch()}), at the end of a drain, or else by one flush task
 *       scheduled for the end of the current event-loop pass. Never one flush per frame when busy.</li>
 *   <li>Off the event loop a write (or a task, see {@link #execute}) is offered to an MPSC queue, and the
 *       thread that takes the queue from idle schedules ONE drain task; the drain writes what is queued
 *       (running queued tasks in place, so a caller's writes and tasks keep their order) and flushes once.
 *       It takes at most {@value #MAX_ITEMS_PER_DRAIN} items, then lets the loop read before it goes on.</li>
 *   <li>Each item is atomic: a buffer handed to {@link #write} is written whole, so the frames of one
 *       message (one buffer or composite) are never interleaved with another's.</li>
 *   <li>A single-frame publish ({@link #writeContent}) leaves its body frame's end octet pending: the next
 *       publish's head carries it in a byte it keeps free for it, so consecutive publishes cost two buffers, two
 *       pipeline writes and two Netty outbound entries each instead of three. Any other write, and every flush,
 *       writes a pending end octet first, so nothing ever comes between a body and its end and a flush never
 *       leaves a message incomplete.</li>
 * </ul>
 *
 * <p>Ownership: a buffer passed to {@code write} belongs to the path from the call on; it is released
 * when written, or when the write fails (including on a closed connection).
 */
public final class OutboundPath {

    /** Told, on the event loop, that a write finished: {@code cause} is {@code null} on success. */
    @FunctionalInterface
    public interface WriteListener {
        void written(Throwable cause);
    }

    /**
     * A task that owns resources (a publish's buffers, its future): if the event loop is gone and the task
     * will never run, {@link #discard} is called instead, on the thread that found out, so it can release
     * them and fail its caller.
     */
    public interface DiscardableTask extends Runnable {
        void discard(Throwable cause);
    }

    /**
     * Items one drain task writes before it lets the event loop read again. A publish is one item, so this is
     * ~1,024 messages (one flush) per slice: large enough that a burst costs one task and one flush per slice,
     * small enough that a writer that keeps the queue full never starves the reads on the same loop.
     */
    static final int MAX_ITEMS_PER_DRAIN = 1024;

    private static final AtomicIntegerFieldUpdater<OutboundPath> DRAIN_SCHEDULED =
            AtomicIntegerFieldUpdater.newUpdater(OutboundPath.class, "drainScheduled");

    private final ChannelHandlerContext ctx;
    private final EventExecutor loop;
    private final Runnable drainTask = this::drain;
    private final Runnable flushTask = this::flushTask;
    private final GenericFutureListener<Future<Object>> continuationCancelled = this::continuationCancelled;

    // any thread (volatile / MPSC)
    private final MessagePassingQueue<Object> queue = new MpscUnboundedArrayQueue<>(256);
    private volatile int drainScheduled;
    private final java.util.concurrent.CopyOnWriteArrayList<Runnable> writabilityListeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    // event loop only
    private boolean inBatch;
    private boolean flushPending;
    private boolean flushTaskScheduled;
    private boolean writtenSinceCheck;
    /** Whether the body frame written last still needs its end octet, and the listener of its message. */
    private boolean endPending;
    private WriteListener pendingEndListener;

    /** The connection's reused head and end-octet buffers: the publisher frames heads, this path writes end octets. */
    private final PublishBuffers publishBuffers;

    public OutboundPath(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.loop = ctx.executor();
        this.publishBuffers = new PublishBuffers(loop, ctx.alloc());
    }

    /** The connection's head and end-octet buffers (event loop only). */
    PublishBuffers publishBuffers() {
        return publishBuffers;
    }

    /**
     * Whether the socket's outbound buffer is below Netty's high-water mark. Any thread. Publishers check it
     * and wait for {@link #addWritabilityListener a writability change} instead of growing memory.
     */
    public boolean isWritable() {
        return ctx.channel().isWritable();
    }

    /** Runs {@code listener} on the event loop each time the socket's writability changes. Any thread. */
    public void addWritabilityListener(Runnable listener) {
        writabilityListeners.add(listener);
    }

    public void removeWritabilityListener(Runnable listener) {
        writabilityListeners.remove(listener);
    }

    /** Called by the connection handler on channelWritabilityChanged. Event loop. */
    void writabilityChanged() {
        for (Runnable l : writabilityListeners) {
            l.run();
        }
    }

    /** The event loop that owns the connection. */
    public EventExecutor eventLoop() {
        return loop;
    }

    public boolean inEventLoop() {
        return loop.inEventLoop();
    }

    /** Writes {@code frames} (one or more whole frames) without notification; any thread. Takes ownership. */
    public void write(ByteBuf frames) {
        if (loop.inEventLoop()) {
            writePendingEnds();
            writeNow(frames, null);
        } else {
            offer(frames);
        }
    }

    /**
     * Writes {@code frames} and tells {@code listener} on the event loop when they are written or failed;
     * any thread. Takes ownership.
     */
    public void write(ByteBuf frames, WriteListener listener) {
        if (listener == null) {
            write(frames);
        } else if (loop.inEventLoop()) {
            writePendingEnds();
            writeNow(frames, listener);
        } else {
            offer(new PendingWrite(frames, listener));
        }
    }

    /**
     * Writes a single-frame publish: {@code head} holds the method, content-header and body-frame headers, with one
     * byte free just before its reader index, and {@code body} is the body frame's payload; event loop only, takes
     * ownership of both. The body frame's end octet (0xCE) is left pending: when the next write is another publish's
     * head, that head's free byte carries it; anything else written or flushed first gets it as a buffer of its own
     * (a kept one, {@link PublishBuffers#endOctet}). {@code listener} (or null) hears when the message is written
     * whole, that is with the write that carries its end octet. (On a closed channel that write fails at once and
     * the previous message's listener runs between this head and body: harmless, as every write after it fails too.)
     */
    void writeContent(ByteBuf head, ByteBuf body, WriteListener listener) {
        if (endPending && head.readerIndex() > 0) {
            WriteListener previous = pendingEndListener;
            endPending = false;
            pendingEndListener = null;
            int first = head.readerIndex() - 1;
            head.setByte(first, Frames.FRAME_END);
            head.readerIndex(first);
            writeNow(head, previous);
        } else {
            writePendingEnds(); // a head without the free byte: the end octet goes as a write of its own
            writeNow(head, null);
        }
        writeNow(body, null);
        endPending = true;
        pendingEndListener = listener;
    }

    /**
     * Writes a pending end octet (see {@link #writeContent}) before anything else is written or flushed; the caller
     * writes or flushes next. A loop: writing it can cross the high-water mark, and Netty reports that synchronously,
     * so a publisher told of it may publish right here and leave an end octet of its own pending; that one, too, must
     * go before what the caller writes.
     */
    private void writePendingEnds() {
        while (endPending) {
            WriteListener listener = pendingEndListener;
            endPending = false;
            pendingEndListener = null;
            writeToPipeline(publishBuffers.endOctet(), listener);
        }
    }

    /**
     * Runs {@code task} on the event loop: at once when called there, else queued behind the writes this
     * thread already queued, so that "write X, then close" from one thread keeps its order.
     */
    public void execute(Runnable task) {
        if (loop.inEventLoop()) {
            task.run();
        } else {
            offer(task);
        }
    }

    /** The event loop reads: writes made until {@link #endReadBatch()} are flushed together then. */
    public void beginReadBatch() {
        inBatch = true;
    }

    /** The read batch is over (channelReadComplete): flush what it wrote, once. */
    public void endReadBatch() {
        inBatch = false;
        flushIfPending();
    }

    /**
     * Flushes what was written now instead of at the end of the read batch or pass; event loop. For the few
     * writes whose delay costs the peer more than a syscall costs us: acks held back hold the broker's
     * prefetch window shut, and a read batch can hold the whole window.
     */
    public void flushNow() {
        flushIfPending();
    }

    /**
     * True when anything was written since the last call; clears the mark. Used by the heartbeat sender,
     * which sends only when the connection has been silent.
     */
    public boolean takeWrittenMark() {
        boolean w = writtenSinceCheck;
        writtenSinceCheck = false;
        return w;
    }

    /**
     * Releases everything still queued and fails its listeners; event loop, when the connection is closed.
     * Items queued later are written to the closed channel, which releases them and fails their listeners.
     */
    public void discardQueued(Throwable cause) {
        // written to the closed channel, which releases it and fails its listener as for any other write
        writePendingEnds();
        Object item;
        while ((item = queue.relaxedPoll()) != null) {
            if (item instanceof Runnable r) {
                r.run();
            } else if (item instanceof PendingWrite pw) {
                ReferenceCountUtil.release(pw.frames);
                pw.listener.written(cause);
            } else {
                ReferenceCountUtil.release(item);
            }
        }
    }

    private void offer(Object item) {
        queue.offer(item);
        // Only the thread that takes the queue from idle schedules: one drain task however many writers.
        if (drainScheduled == 0 && DRAIN_SCHEDULED.compareAndSet(this, 0, 1)) {
            try {
                loop.execute(drainTask);
            } catch (RuntimeException rejected) {
                // The event loop is shut down: nothing will ever write; release what is queued.
                discardRejected(rejected);
            }
        }
    }

    /**
     * Releases what is queued for an event loop that refused the drain. The caller holds {@code drainScheduled}
     * (it won the CAS), which makes it the queue's only consumer, as the MPSC queue requires: without it two
     * threads whose offers were both refused could poll at once. It lets go when the queue is empty, then looks
     * again for items offered by threads that saw the flag still set.
     */
    private void discardRejected(Throwable cause) {
        do {
            Object item;
            while ((item = queue.poll()) != null) {
                if (item instanceof PendingWrite pw) {
                    ReferenceCountUtil.release(pw.frames);
                    pw.listener.written(cause);
                } else if (item instanceof DiscardableTask task) {
                    task.discard(cause);
                } else if (!(item instanceof Runnable)) {
                    ReferenceCountUtil.release(item);
                }
            }
            drainScheduled = 0;
        } while (!queue.isEmpty() && DRAIN_SCHEDULED.compareAndSet(this, 0, 1));
    }

    private void drain() {
        // drainScheduled stays set while this runs: writers offering meanwhile schedule nothing, so a writer
        // that keeps the queue full cannot make the loop run drain after drain inside one pass.
        boolean outerBatch = inBatch;
        inBatch = true;
        int taken = 0;
        try {
            Object item;
            while (taken < MAX_ITEMS_PER_DRAIN && (item = queue.relaxedPoll()) != null) {
                taken++;
                if (item instanceof ByteBuf buf) {
                    writePendingEnds();
                    writeNow(buf, null);
                } else if (item instanceof PendingWrite pw) {
                    writePendingEnds();
                    writeNow(pw.frames, pw.listener);
                } else {
                    ((Runnable) item).run();
                }
            }
        } finally {
            inBatch = outerBatch;
            if (!outerBatch) {
                flushIfPending();
            }
        }
        if (taken == MAX_ITEMS_PER_DRAIN && !queue.isEmpty()) {
            // More is queued: go on after the loop's next I/O pass. A scheduled task is picked up only after
            // the loop has selected and read again (loop.execute would run it in this same pass), so the
            // broker's acks, confirms and heartbeats are read between slices of a never-ending burst.
            scheduleContinuation();
            return;
        }
        drainScheduled = 0;
        // An offer made after the last poll saw the flag still set and scheduled nothing: look again.
        if (!queue.isEmpty() && DRAIN_SCHEDULED.compareAndSet(this, 0, 1)) {
            scheduleContinuation();
        }
    }

    private void scheduleContinuation() {
        try {
            loop.schedule(drainTask, 0, TimeUnit.NANOSECONDS).addListener(continuationCancelled);
        } catch (RuntimeException rejected) {
            discardRejected(rejected);
        }
    }

    /** A shutting-down loop cancels its scheduled tasks: the queue is then released as for a refused drain. */
    private void continuationCancelled(Future<?> continuation) {
        if (continuation.isCancelled()) {
            discardRejected(new RejectedExecutionException("the event loop shut down with writes queued"));
        }
    }

    private void writeNow(ByteBuf frames, WriteListener listener) {
        writeToPipeline(frames, listener);
        if (!inBatch && !flushTaskScheduled) {
            // Written outside a batch (a timer, a callback on the loop): flush at the end of this pass.
            flushTaskScheduled = true;
            loop.execute(flushTask);
        }
    }

    /** The write itself; whoever calls this flushes or makes sure a flush comes. */
    private void writeToPipeline(ByteBuf frames, WriteListener listener) {
        writtenSinceCheck = true;
        if (listener == null) {
            ctx.write(frames, ctx.voidPromise());
        } else {
            ChannelPromise promise = ctx.newPromise();
            promise.addListener((ChannelFutureListener) (ChannelFuture f) -> listener.written(f.cause()));
            ctx.write(frames, promise);
        }
        flushPending = true;
    }

    private void flushTask() {
        flushTaskScheduled = false;
        flushIfPending();
    }

    private void flushIfPending() {
        writePendingEnds();
        if (flushPending) {
            flushPending = false;
            ctx.flush();
        }
    }

    private record PendingWrite(ByteBuf frames, WriteListener listener) {
    }
}
