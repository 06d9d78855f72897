package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.internal.PlatformDependent;
import io.warren.PublishOptions;
import io.warren.codec.FrameDecoder;
import io.warren.codec.Frames;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscUnboundedArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <h2>The writer token: publishes written on the caller's thread</h2>
 * At a service's pace the queue is empty at every publish, and handing each one to the event loop costs a selector
 * wake-up and a scheduling delay per message. So a publishing thread that finds the path idle writes the message to
 * the socket itself. Who may write to the socket is decided by one token ({@code owner}):
 * <ul>
 *   <li>{@code FREE}: nobody writes. Invariants: nothing the loop wrote is unflushed, no end octet is pending.</li>
 *   <li>{@code LOOP}: the event loop writes through the pipeline. It takes the token (one CAS) at its first write of
 *       a pass or drain, and gives it back after the flush that ends them ({@link #flushIfPending}).</li>
 *   <li>{@code CALLER}: one publishing thread frames a message into {@link #callerHead()} and makes one gathering,
 *       non-blocking write ({@link #writeDirect}) to the JDK socket under Netty's NIO channel. It takes the token
 *       only when nothing is queued, no drain is scheduled, Netty's outbound buffer is empty and the channel is
 *       writable ({@link #tryTakeForCaller}).</li>
 *   <li>{@code HANDED}: the socket took only part of a caller's message; the rest waits in {@code handed*} for the
 *       loop, which alone may take the token from this state, and writes that rest first.</li>
 * </ul>
 * Why a write from another thread is safe: every byte Netty writes to this socket comes from its outbound buffer,
 * and only the token holder adds to it (all of Warren's writes go through this path; nothing else in the pipeline
 * writes on its own). A caller takes the token and then sees the buffer empty ({@code totalPendingWriteBytes}
 * falls to 0 only after Netty's last socket write of an entry): while it holds the token Netty has nothing to
 * write, and the loop, finding the token held, queues its own writes ({@code deferring}: all of them, in order,
 * until the queue is drained) instead of writing. The JDK's {@code SocketChannel} allows a write on one thread while
 * another reads or closes it. Callers never write where that argument does not hold: TLS ({@code SslHandler} must
 * see every byte) and the native transports (Netty exposes their descriptor as a raw int, which a concurrent close
 * could hand to another socket). The metrics' byte counter only counts: a caller counts what it writes
 * itself. Under load the token is rarely free and publishes go through the queue and its coalesced flushes as
 * before.
 *
 * <p>Ownership: a buffer passed to {@code write} belongs to the path from the call on; it is released
 * when written, or when the write fails (including on a closed connection).
 */
public final class OutboundPath {

    private static final Logger LOG = LoggerFactory.getLogger(OutboundPath.class);

    /**
     * Told, on the event loop, that a write finished: {@code cause} is {@code null} on success. It listens to the
     * write's Netty promise itself, so a write with a listener allocates no adapter.
     */
    @FunctionalInterface
    public interface WriteListener extends ChannelFutureListener {
        void written(Throwable cause);

        @Override
        default void operationComplete(ChannelFuture future) {
            written(future.cause());
        }
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
    private static final AtomicIntegerFieldUpdater<OutboundPath> OWNER =
            AtomicIntegerFieldUpdater.newUpdater(OutboundPath.class, "owner");

    /** Token states: see the class comment. */
    private static final int FREE = 0;

    private static final int LOOP = 1;
    private static final int CALLER = 2;
    private static final int HANDED = 3;

    /** Capacity of the caller's head buffer: a larger head goes through the event loop. */
    static final int CALLER_HEAD_CAPACITY = 512;

    private final ChannelHandlerContext ctx;
    private final EventExecutor loop;
    // named classes, not method references: each method reference is a class a fresh JVM generates at its first use
    private final Runnable drainTask = new DrainTask();
    private final Runnable flushTask = new FlushTask();
    private final GenericFutureListener<Future<Object>> continuationCancelled = new ContinuationCancelled();

    // any thread (volatile / MPSC)
    private final MessagePassingQueue<Object> queue = new MpscUnboundedArrayQueue<>(256);
    private volatile int drainScheduled;
    /** The writer token: FREE, LOOP, CALLER or HANDED. */
    private volatile int owner;
    /** Set by whoever writes (the token holder); read and cleared by the heartbeat sender on the loop. */
    private volatile boolean writtenSinceCheck;
    /** When the last caller's write or the loop's last flush was made ({@code System.nanoTime()}); token holder. */
    private volatile long lastWriteNanos;
    /** Caller writes in the current burst; {@link #callerWritesPerBurst} once the loop has the burst. */
    private volatile int burstWrites;
    /**
     * What makes a burst, and how many of a burst's publishes their callers write before the rest joins the queue
     * ({@link PublishOptions#callerWriteGap}, {@link PublishOptions#callerWritesPerBurst}; a test may change the gap).
     */
    private volatile long callerWriteGapNanos;

    private final int callerWritesPerBurst;
    private final java.util.concurrent.CopyOnWriteArrayList<Runnable> writabilityListeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    // event loop only
    private boolean inBatch;
    private boolean flushPending;
    private boolean flushTaskScheduled;
    /** The loop queued a write of its own (a caller held the token): its later writes queue behind it. */
    private boolean deferring;
    /** A drain runs: it holds the token, and what its items write goes straight out. */
    private boolean draining;
    /** Whether the body frame written last still needs its end octet, and the listener of its message. */
    private boolean endPending;
    /**
     * A message's head and body are being written: Netty may call back from inside those writes (a writability
     * change, a failed promise's listener), and whatever such a callback writes is queued behind the message
     * instead of landing inside its body frame.
     */
    private boolean midMessage;
    /** Writability changed while {@link #midMessage}: the listeners hear of it once the message is written. */
    private boolean writabilityChangedMidMessage;
    /** A drain came while {@link #midMessage}: it runs once the message is written. */
    private boolean drainAfterMessage;

    private WriteListener pendingEndListener;

    /** The connection's reused head and end-octet buffers: the publisher frames heads, this path writes end octets. */
    private final PublishBuffers publishBuffers;

    /** The JDK socket a caller may write to under the token; null when callers never write (class comment). */
    private final SocketChannel socket;
    /** The pipeline's byte counter (metrics on), which a caller's write passes by: it counts its bytes itself. */
    private final ByteCounter counter;
    // token holder only (CALLER): the head buffer, the gathering array and the end octet of a caller's write
    private final ByteBuf callerHead;
    private final ByteBuffer[] gather = new ByteBuffer[3];
    private final ByteBuffer callerEnd;
    // written by a caller before it sets HANDED, read by the loop after it takes the token from HANDED
    private ByteBuf handedHead;
    private ByteBuf handedBody;
    private WriteListener handedListener;
    /** Messages callers wrote, and how many of them the socket took only in part (token holder; for tests). */
    private long callerWrites;

    private long handOvers;

    /** With {@link PublishOptions}' defaults for callers' writes. */
    public OutboundPath(ChannelHandlerContext ctx) {
        this(ctx, new PublishOptions());
    }

    /** @param options the callers' writes' tuning: {@link PublishOptions#callerWriteGap} and its burst bound */
    public OutboundPath(ChannelHandlerContext ctx, PublishOptions options) {
        this.ctx = ctx;
        this.callerWriteGapNanos = options.callerWriteGap().toNanos();
        this.callerWritesPerBurst = options.callerWritesPerBurst();
        this.lastWriteNanos = System.nanoTime() - callerWriteGapNanos;
        this.loop = ctx.executor();
        this.publishBuffers = new PublishBuffers(loop, ctx.alloc());
        // callerWritesPerBurst 0: the event loop writes every publish, so callers never write, even to an idle path
        this.socket = callerWritesPerBurst > 0
                        && ctx.channel() instanceof DirectNioSocketChannel direct
                        && onlyWarrensHandlers(ctx)
                ? direct.socket()
                : null;
        this.counter = socket == null ? null : ctx.pipeline().get(ByteCounter.class);
        if (socket != null) {
            // The JDK's own direct buffers, kept for the connection's life and freed by the garbage collector.
            callerHead = PlatformDependent.hasUnsafe()
                    ? new CallerHead(ctx.alloc())
                    : Unpooled.wrappedBuffer(ByteBuffer.allocateDirect(CALLER_HEAD_CAPACITY))
                            .clear();
            callerEnd = ByteBuffer.allocateDirect(1).put(0, (byte) Frames.FRAME_END);
        } else {
            callerHead = null;
            callerEnd = null;
        }
    }

    /**
     * The caller's head buffer: what {@code Unpooled.wrappedBuffer} makes of a direct {@code ByteBuffer} with
     * {@code Unsafe} (the same buffer class, accessors and {@code nioBuffer}s: a subclass adds nothing), made here
     * because {@code Unpooled}'s first use loads some 25 buffer classes (its methods name them), which a fresh JVM's
     * first connect paid for. Never released: the JDK frees its memory with the connection.
     */
    private static final class CallerHead extends UnpooledUnsafeDirectByteBuf {
        CallerHead(ByteBufAllocator alloc) {
            super(alloc, ByteBuffer.allocateDirect(CALLER_HEAD_CAPACITY), CALLER_HEAD_CAPACITY);
            clear(); // a wrapped buffer starts readable to its end
        }
    }

    /**
     * Callers write to the socket only when the pipeline is the frame decoder, the byte counter and this path's
     * handler: no SslHandler (it must see every byte), nothing that could write on its own. (The initializer that
     * built the pipeline is still in it while it runs.)
     */
    private static boolean onlyWarrensHandlers(ChannelHandlerContext ctx) {
        for (Map.Entry<String, ChannelHandler> e : ctx.pipeline()) {
            ChannelHandler h = e.getValue();
            // the byte counter only counts: a caller's write counts its own bytes (writeGathered)
            if (!(h instanceof FrameDecoder
                    || h instanceof ByteCounter
                    || h == ctx.handler()
                    || h instanceof ChannelInitializer<?>)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether a heap body waits for the socket without a copy in direct memory: on NIO, Warren's channel stages heap
     * bytes only as the socket takes them ({@link DirectNioSocketChannel}). TLS ({@code SslHandler} encrypts into
     * direct buffers) and the native transports (they copy a heap buffer into direct memory when it is written)
     * hold a copy of every body not yet taken. Any thread.
     */
    public boolean stagesHeapBodies() {
        return !Transport.isNative(ctx.channel()) && ctx.pipeline().get(SslHandler.class) == null;
    }

    /** The connection's head and end-octet buffers (event loop only). */
    public PublishBuffers publishBuffers() {
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
        if (midMessage) {
            writabilityChangedMidMessage = true; // a publisher told now would write inside the message
            return;
        }
        for (Runnable l : writabilityListeners) {
            l.run();
        }
    }

    /** A message's head and body are written: what Netty reported meanwhile is told now, what was queued drains. */
    private void endMessage() {
        midMessage = false;
        if (writabilityChangedMidMessage) {
            writabilityChangedMidMessage = false;
            writabilityChanged();
        }
        if (drainAfterMessage) {
            drainAfterMessage = false;
            scheduleDrain();
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
        if (!loop.inEventLoop()) {
            offer(frames);
        } else if (takeOnLoop()) {
            writePendingEnds();
            writeNow(frames, null);
        } else {
            defer(frames);
        }
    }

    /**
     * Writes {@code frames} and tells {@code listener} on the event loop when they are written or failed;
     * any thread. Takes ownership.
     */
    public void write(ByteBuf frames, WriteListener listener) {
        if (listener == null) {
            write(frames);
        } else if (!loop.inEventLoop()) {
            offer(new PendingWrite(frames, listener));
        } else if (takeOnLoop()) {
            writePendingEnds();
            writeNow(frames, listener);
        } else {
            defer(new PendingWrite(frames, listener));
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
    public void writeContent(ByteBuf head, ByteBuf body, WriteListener listener) {
        if (!takeOnLoop()) {
            // a caller holds the token: after it, in order with the loop's other writes
            defer(new DeferredContent(head, body, listener));
            return;
        }
        if (!(endPending && head.readerIndex() > 0)) {
            writePendingEnds(); // a head without the free byte: the end octet goes as a write of its own
        }
        midMessage = true;
        try {
            if (endPending) {
                WriteListener previous = pendingEndListener;
                endPending = false;
                pendingEndListener = null;
                int first = head.readerIndex() - 1;
                head.setByte(first, Frames.FRAME_END);
                head.readerIndex(first);
                writeNow(head, previous);
            } else {
                writeNow(head, null);
            }
            writeNow(body, null);
            endPending = true;
            pendingEndListener = listener;
        } finally {
            endMessage();
        }
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
        // as a drain: what the items write goes to the closed channel now instead of being queued again
        draining = true;
        deferring = false;
        try {
            discardItems(cause);
        } finally {
            draining = false;
        }
    }

    private void discardItems(Throwable cause) {
        Object item;
        while ((item = queue.relaxedPoll()) != null) {
            if (item instanceof Runnable r) {
                runTask(r); // one that throws must not keep the rest from being discarded
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
        scheduleDrain();
    }

    /**
     * Only the thread that takes the queue from idle schedules: one drain task however many writers. An event loop
     * that refuses it is shut down: nothing will ever write, what is queued is released.
     */
    private void scheduleDrain() {
        if (drainScheduled == 0 && DRAIN_SCHEDULED.compareAndSet(this, 0, 1)) {
            try {
                loop.execute(drainTask);
            } catch (RuntimeException rejected) {
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
        // A caller's rest handed over for the loop to write (HANDED): nobody will write it now. Only the loop leaves
        // HANDED, and it refused, so this takes the rest (the CAS keeps a second discarding thread away).
        if (owner == HANDED && OWNER.compareAndSet(this, HANDED, LOOP)) {
            HandedRest rest = takeHandedRest();
            ReferenceCountUtil.safeRelease(rest.head());
            ReferenceCountUtil.safeRelease(rest.body());
            if (rest.listener() != null) {
                rest.listener().written(cause);
            }
        }
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

    /**
     * Runs a queued task. One that throws (an Error from an application's listener, say) is logged and the path goes
     * on, as Netty's loop does with its own tasks: thrown out of the drain, it would leave the drain's flag set, and
     * nothing queued afterwards would ever run.
     */
    private void runTask(Runnable task) {
        try {
            task.run();
        } catch (Throwable t) {
            LOG.warn("{}: a task on the outbound path failed; the path goes on", channel(), t);
        }
    }

    private void drain() {
        if (midMessage) {
            // run from inside a message's writes (an executor that runs tasks at once): after the message
            drainScheduled = 0;
            drainAfterMessage = true;
            return;
        }
        if (!takeToken()) {
            // A caller writes: it looks at the queue when it gives the token back and schedules a drain then. Let go
            // of the flag first, then look at the token again: either the caller sees the flag clear, or this sees
            // the token given back (volatile accesses are totally ordered).
            drainScheduled = 0;
            int o = owner;
            if (o == HANDED || o == FREE && !queue.isEmpty()) {
                scheduleDrain();
            }
            return;
        }
        // drainScheduled stays set while this runs: writers offering meanwhile schedule nothing, so a writer
        // that keeps the queue full cannot make the loop run drain after drain inside one pass.
        boolean outerBatch = inBatch;
        inBatch = true;
        draining = true;
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
                    runTask((Runnable) item);
                }
            }
        } finally {
            draining = false;
            if (queue.isEmpty()) {
                deferring = false; // the loop's own queued writes are all out
            }
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

    private final class DrainTask implements Runnable {
        @Override
        public void run() {
            drain();
        }
    }

    /** A shutting-down loop cancels its scheduled tasks: the queue is then released as for a refused drain. */
    private final class ContinuationCancelled implements GenericFutureListener<Future<Object>> {
        @Override
        public void operationComplete(Future<Object> continuation) {
            if (continuation.isCancelled()) {
                discardRejected(new RejectedExecutionException("the event loop shut down with writes queued"));
            }
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
            promise.addListener(listener);
            ctx.write(frames, promise);
        }
        flushPending = true;
    }

    private final class FlushTask implements Runnable {
        @Override
        public void run() {
            flushTaskScheduled = false;
            flushIfPending();
        }
    }

    private void flushIfPending() {
        writePendingEnds();
        if (flushPending) {
            flushPending = false;
            ctx.flush();
            lastWriteNanos = System.nanoTime();
            burstWrites = callerWritesPerBurst;
        }
        if (!inBatch && !draining && !midMessage && owner == LOOP) {
            // Everything the loop wrote is flushed (what the socket did not take is in Netty's outbound buffer,
            // which keeps callers away until it is written): callers may write again.
            owner = FREE;
            if (!queue.isEmpty()) {
                scheduleDrain();
            }
        }
    }

    // ---- the writer token ------------------------------------------------------------------------------------

    /**
     * Takes the token for a write of the event loop's; false when a caller holds it, or when the loop has queued
     * writes of its own that must go first: the write is then queued ({@link #defer}). Event loop.
     */
    private boolean takeOnLoop() {
        if (midMessage) {
            return false; // called back from inside a message's writes: behind the message
        }
        if (draining) {
            return true; // a drain holds the token and writes in queue order
        }
        return !deferring && takeToken();
    }

    /**
     * Takes the token for a write the loop makes at once (true), as its own writes do: the loop numbers a publish in
     * confirm mode only holding it, so that numbering order is wire order. False when a caller holds it or the loop's
     * queued writes go first: see {@link #deferBehindCaller}. Event loop.
     */
    public boolean takeForLoop() {
        assert loop.inEventLoop() : "the loop's token taken off the event loop";
        return takeOnLoop();
    }

    /**
     * Runs {@code task} on the event loop behind what is queued, holding the token (a drain runs it), for a task
     * {@link #takeForLoop} refused. Event loop.
     */
    public void deferBehindCaller(Runnable task) {
        assert loop.inEventLoop() : "deferred off the event loop";
        defer(task);
    }

    /**
     * Whether the loop has queued writes or tasks of its own that have not run yet ({@link #deferBehindCaller}): what
     * the loop does now in their order must go behind them. Event loop.
     */
    public boolean defersLoopWrites() {
        assert loop.inEventLoop() : "the loop's queue looked at off the event loop";
        return deferring;
    }

    /** Takes the token for the loop unless a caller holds it; writes a handed rest first. Event loop. */
    private boolean takeToken() {
        int o = owner;
        if (o == LOOP) {
            return true;
        }
        if (o == FREE && OWNER.compareAndSet(this, FREE, LOOP)) {
            return true;
        }
        if (o == HANDED) {
            owner = LOOP; // only the loop leaves HANDED
            writeHanded();
            return true;
        }
        return false;
    }

    /** Queues a write (or a task that writes) of the loop's own behind a caller's; see {@link #takeOnLoop}. */
    private void defer(Object item) {
        deferring = true;
        queue.offer(item);
        scheduleDrain();
    }

    /** The rest of a caller's message the socket did not take: first on the wire. Event loop, token just taken. */
    private void writeHanded() {
        HandedRest rest = takeHandedRest();
        midMessage = true;
        try {
            if (rest.head() != null) {
                writeToPipeline(rest.head(), null);
            }
            if (rest.body() != null) {
                writeToPipeline(rest.body(), null);
            }
            endPending = true; // the message's end octet is always part of what is left
            pendingEndListener = rest.listener();
        } finally {
            endMessage();
        }
        if (!inBatch && !flushTaskScheduled) {
            flushTaskScheduled = true;
            loop.execute(flushTask);
        }
    }

    /**
     * Moves the rest a caller handed over out of the handed fields, which are left empty for the next hand-over; the
     * taker now owns (writes or releases) its head and body, either of which is null when the socket took all of it.
     * Only by the thread that just took the token from HANDED (the loop, or the one discarding for a refused loop).
     */
    private HandedRest takeHandedRest() {
        HandedRest rest = new HandedRest(handedHead, handedBody, handedListener);
        handedHead = null;
        handedBody = null;
        handedListener = null;
        return rest;
    }

    /**
     * Takes the token for a caller's write when the path is idle: callers may write here, nothing is queued or being
     * drained, Netty's outbound buffer is empty and the channel writable. Any thread but the loop; on true the caller
     * goes on with {@link #writeDirect} or gives the token back with {@link #releaseCaller}.
     */
    public boolean tryTakeForCaller() {
        // not on the loop: its publishes are written in its pass and flushed together (one syscall per batch); not
        // deep in a burst (callerWritesPerBurst)
        if (socket == null
                || owner != FREE
                || drainScheduled != 0
                || !queue.isEmpty()
                || inBurst(System.nanoTime()) && burstWrites >= callerWritesPerBurst
                || loop.inEventLoop()
                || !OWNER.compareAndSet(this, FREE, CALLER)) {
            return false;
        }
        // Looked at under the token: the loop adds to Netty's buffer only while it holds it.
        io.netty.channel.Channel ch = ctx.channel();
        ChannelOutboundBuffer out = ch.unsafe().outboundBuffer();
        if (out == null || out.totalPendingWriteBytes() != 0 || !ch.isWritable() || !ch.isActive()) {
            releaseCaller();
            return false;
        }
        return true;
    }

    /** Whether {@code now} is close behind the connection's last write: see {@link PublishOptions#callerWriteGap}. */
    private boolean inBurst(long now) {
        return now - lastWriteNanos < callerWriteGapNanos;
    }

    /** Gives the caller's token back; schedules a drain for what was queued meanwhile. Token holder (CALLER). */
    public void releaseCaller() {
        owner = FREE;
        if (!queue.isEmpty()) {
            scheduleDrain();
        }
    }

    /** The head buffer a caller frames into, cleared. Token holder (CALLER) only; the path owns it. */
    public ByteBuf callerHead() {
        return callerHead.clear();
    }

    /**
     * Writes {@code head} (the {@link #callerHead()}), {@code body} and the body frame's end octet with one
     * non-blocking gathering write. Token holder (CALLER); takes ownership of {@code body} unless the socket refuses
     * it. When the socket took it
     * all the token is given back and this returns true. Otherwise the caller keeps the token and must call
     * {@link #handOver} next: the rest (head copied, body kept, end octet) goes to the event loop.
     *
     * @throws IOException when the socket refused it (closed, reset): nothing was written, the token is given back
     *                     and {@code body} stays the caller's
     * @throws RuntimeException when {@code body} cannot be written (released, no NIO view): the same, nothing
     *                     written, token given back, {@code body} the caller's
     */
    public boolean writeDirect(ByteBuf head, ByteBuf body) throws IOException {
        gatherDirect(head, body);
        return writeGathered(head, body);
    }

    /**
     * The first half of {@link #writeDirect}: takes the views of {@code head}, {@code body} and the end octet for the
     * gathering write, and commits to nothing. Token holder (CALLER); {@code body} stays the caller's. A caller that
     * must do something between a body known to be writable and its first byte on the wire (spend its confirm
     * number) does it next, then calls {@link #writeGathered}.
     *
     * @throws RuntimeException when {@code body} cannot be written (released, no NIO view): the token is given back
     */
    public void gatherDirect(ByteBuf head, ByteBuf body) {
        ByteBuffer[] g = gather;
        try {
            g[0] = head.internalNioBuffer(head.readerIndex(), head.readableBytes());
            // internalNioBuffer is the buffer's own, reused view: only for a body no other owner or thread can touch
            // meanwhile (a derived buffer's is its parent's, which another slice's writer may be using)
            g[1] = body.refCnt() == 1 && body.unwrap() == null
                    ? body.internalNioBuffer(body.readerIndex(), body.readableBytes())
                    : body.nioBuffer(body.readerIndex(), body.readableBytes());
            g[2] = callerEnd.clear();
        } catch (RuntimeException e) {
            g[0] = g[1] = g[2] = null;
            releaseCaller(); // a body that throws here (released, say) must not keep the token
            throw e;
        }
    }

    /**
     * The second half of {@link #writeDirect}: the gathering write of what {@link #gatherDirect} took, with
     * {@link #writeDirect}'s outcomes (the token given back or kept for {@link #handOver}, {@code body} taken unless
     * the socket refuses it). Token holder (CALLER).
     *
     * @throws IOException when the socket refused it (or a RuntimeException from it): nothing was written, the token
     *                     is given back and {@code body} stays the caller's
     */
    public boolean writeGathered(ByteBuf head, ByteBuf body) throws IOException {
        int headLength = head.readableBytes();
        int bodyLength = body.readableBytes();
        ByteBuffer[] g = gather;
        long written;
        try {
            written = socket.write(g, 0, 3);
        } catch (IOException | RuntimeException e) {
            g[0] = g[1] = g[2] = null;
            releaseCaller();
            throw e;
        }
        g[0] = g[1] = g[2] = null;
        if (counter != null) {
            counter.wroteDirect(written); // the rest of a partial write is counted in the pipeline
        }
        writtenSinceCheck = true;
        long now = System.nanoTime();
        burstWrites = inBurst(now) ? burstWrites + 1 : 1;
        lastWriteNanos = now;
        callerWrites++;
        if (written == headLength + bodyLength + 1) {
            releaseCaller(); // first: nothing after the write may keep the token
            body.release();
            return true;
        }
        // A partial write: the socket's buffer is full. The loop writes the rest through Netty, which waits for
        // the socket (OP_WRITE); callers stay away until Netty's buffer is empty again.
        if (written < headLength) {
            // buffer(), not directBuffer(): on a publishing thread the connection's allocator answers with a heap
            // buffer (NIO writes it as is), so a rare partial write does not tie that thread to a pool arena
            handedHead = ctx.alloc()
                    .buffer(headLength - (int) written)
                    .writeBytes(head, head.readerIndex() + (int) written, headLength - (int) written);
        }
        long bodyWritten = Math.max(0, written - headLength);
        if (bodyWritten < bodyLength) {
            handedBody = body.refCnt() == 1
                    ? body.skipBytes((int) bodyWritten)
                    : shared(body, body.readerIndex() + (int) bodyWritten, bodyLength - (int) bodyWritten);
        } else {
            body.release();
        }
        return false;
    }

    /**
     * Hands the rest of a partly written message ({@link #writeDirect} returned false) and the token to the event
     * loop; {@code listener} (or null) hears on the loop when the message is written whole. Token holder (CALLER).
     */
    public void handOver(WriteListener listener) {
        handedListener = listener;
        handOvers++;
        owner = HANDED; // publishes the handed fields to the loop
        scheduleDrain();
    }

    /** The connection's Netty channel (tests set socket options through it). */
    public io.netty.channel.Channel channel() {
        return ctx.channel();
    }

    /** For tests: {@code 0} lets callers write whenever the path is idle, however close behind the last write. */
    public void callerWriteGap(long nanos) {
        callerWriteGapNanos = nanos;
    }

    /** Messages written on callers' threads so far, and how many of them were handed over; read when all is quiet. */
    public long[] callerWriteCounts() {
        return new long[] {callerWrites, handOvers};
    }

    /** A slice of {@code body} with indices of its own, for a buffer another owner references; takes its reference. */
    private static ByteBuf shared(ByteBuf body, int index, int length) {
        try {
            return body.retainedSlice(index, length);
        } finally {
            body.release();
        }
    }

    /** A single-frame publish the loop wrote while a caller held the token: written in queue order after it. */
    private final class DeferredContent implements DiscardableTask {
        private final ByteBuf head;
        private final ByteBuf body;
        private final WriteListener listener;

        DeferredContent(ByteBuf head, ByteBuf body, WriteListener listener) {
            this.head = head;
            this.body = body;
            this.listener = listener;
        }

        @Override
        public void run() {
            writeContent(head, body, listener);
        }

        @Override
        public void discard(Throwable cause) {
            head.release();
            body.release();
            if (listener != null) {
                listener.written(cause);
            }
        }
    }

    private record PendingWrite(ByteBuf frames, WriteListener listener) {}

    /**
     * A caller's handed rest as {@link #takeHandedRest} takes it: one per partial socket write (rare), never kept
     * past the method that took it.
     */
    private record HandedRest(ByteBuf head, ByteBuf body, WriteListener listener) {}
}
