package io.warren.impl.publish;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.util.AttributeKey;
import io.warren.BlockedListener;
import io.warren.PublishOptions;
import io.warren.impl.connection.ConnectionEvents;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.connection.PublishBuffers;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.function.BooleanSupplier;
import org.jctools.queues.SpmcArrayQueue;

/**
 * A connection's publishing back-pressure: what every channel's {@link Publisher} asks before it accepts,
 * writes or holds a publish. One per connection, made when its {@link ConnectionHandler} joins the pipeline.
 *
 * <p>Three sources, folded into one answer:
 * <ul>
 *   <li>Netty's writability: its outbound buffer above the write-buffer high-water mark
 *       ({@link PublishOptions#writeBufferHighWaterMark()}, 256 KiB by default, set by {@link WriteBufferMark}; the
 *       default is raised to {@link #LARGE_MESSAGE_MARK} at the connection's first large publish, see there);</li>
 *   <li>bytes of publishes accepted but not yet handed to Netty ({@code queuedBytes}, in the outbound path's
 *       queue, which Netty does not count): above the same high-water mark the connection reads unwritable too,
 *       so publishers from other threads cannot outrun the event loop (half the mark);</li>
 *   <li>connection.blocked from the broker.</li>
 * </ul>
 * Memory is bounded by {@link PublishOptions#maxPendingBytes()} over queued + held + Netty's pending bytes:
 * {@link #tryReserve} refuses past it.
 *
 * <p>Threads waiting in {@link Publisher#whenWritable} are woken in turns when the connection turns writable: as many
 * publishers' as the room under the high-water mark holds, judged by each one's last publish ({@link #mayWake}),
 * at least one; more at each later change, and all by a check a millisecond later when no change came while the
 * connection is writable ({@link WakeTurns}).
 *
 * <p>Threads: {@link #tryReserve}, {@link #isWritable} and {@link #isBlocked} on any thread; the rest on the
 * event loop. The event loop tells publishers of changes ({@link Publisher#onFlowChanged()}) when Netty's
 * writability flips, when queued bytes fall below the mark, and on blocked / unblocked.
 */
public final class PublishFlow implements BlockedListener {

    /** Tasks kept for reuse per connection: more than the queue holds below its mark (~130 small publishes). */
    private static final int TASK_POOL_SIZE = 1024;

    /**
     * Bytes of publishes queued for the event loop above which the connection reads unwritable: half the write-buffer
     * high-water mark. A publish counts its wire size plus {@link Publisher#TASK_OVERHEAD} (512), so with the default
     * mark (256 KiB; not raised on a connection of small messages) ~225 small publishes fill it: under the 256 slots of
     * a chunk of the outbound path's queue, so a publisher that waits when unwritable never makes the queue link a
     * new chunk (garbage). A publish of 64 KiB or more raises the mark ({@link WriteBufferMark}): two of them filled
     * the queue at the default and stopped their publisher every other message.
     */
    private static final AtomicLongFieldUpdater<PublishFlow> QUEUED =
            AtomicLongFieldUpdater.newUpdater(PublishFlow.class, "queuedBytes");

    private static final AtomicLongFieldUpdater<PublishFlow> HELD =
            AtomicLongFieldUpdater.newUpdater(PublishFlow.class, "heldBytes");

    /** The high-water mark a connection left at the default takes at its first large publish ({@link WriteBufferMark}). */
    public static final int LARGE_MESSAGE_MARK = WriteBufferMark.LARGE_MESSAGE_MARK;

    private final ChannelHandlerContext ctx;
    private final OutboundPath outbound;
    private final PublishOptions options;
    private final long maxPendingBytes;
    /** The write-buffer high-water mark, and the queue mark and flush threshold that follow from it. */
    private final WriteBufferMark mark;

    // any thread (volatile, updated atomically)
    private volatile long queuedBytes;
    private volatile long heldBytes;
    // any thread (volatile, written by the event loop)
    private volatile boolean blocked;
    private volatile String blockedReason;
    // any thread (volatile): set by a publisher whose publish filled the queue, cleared at half (see isWritable)
    private volatile boolean queueFull;
    /**
     * Set with {@link #queueFull} when a publish fills the queue, cleared only by the loop's drain when it tells the
     * publishers (any thread writes true, the loop false): a caller's {@link #isWritable} may clear queueFull first,
     * and the threads waiting meanwhile must still hear that the queue drained.
     */
    private volatile boolean fullUntold;

    /**
     * Pooled tasks: taken by publishing threads, returned by the event loop (single producer, many consumers).
     * Made by the event loop when the first task comes back: a connection that never publishes does not pay its
     * 4 KiB array. Any thread reads it (volatile), the event loop writes it.
     */
    private volatile SpmcArrayQueue<PublishTask> taskPool;
    /** Head and end-octet buffers of the connection's publishes (event loop only). */
    private final PublishBuffers buffers;

    // event loop only
    private final ArrayList<Publisher> publishers = new ArrayList<>();
    /** {@link #changed} tells publishers from a different one each time, in a copy it reuses. */
    private Publisher[] toTell = new Publisher[4];

    private int firstToTell;
    /** Publishers are being told of a change; another came meanwhile: they are told again after this round. */
    private boolean telling;

    private boolean changedWhileTelling;

    /** Which threads waiting for writability each round of telling wakes. */
    private final WakeTurns turns;
    /** Tells this flow of a writability change: the outbound path's listener, and the wake turns' retelling. */
    private final Runnable writabilityChanged = new WritabilityListener(this);

    /** {@link PublishOptions#maxMessagesPerFlush()}: 1 flushes after every publish. */
    private final int maxMessagesPerFlush;

    private long unflushedBytes;
    private int unflushedMessages;
    /** True while a publisher writes the buffers of one message: nothing else may be written then. */
    private boolean writing;
    /** A change came while {@code writing}: publishers are told when the message is complete. */
    private boolean changedWhileWriting;

    /** Where each connection keeps its flow: on its Netty channel, next to the pipeline the flow watches. */
    private static final AttributeKey<PublishFlow> FLOW = AttributeKey.valueOf(PublishFlow.class, "flow");

    /**
     * Makes the flow of the connection {@code handler} runs, when the handler joins its pipeline (the handle's
     * {@link ConnectionEvents#outboundReady}): it then watches the outbound path's writability. The handle tells it
     * of connection.blocked ({@link #blocked}); it is not one of the connection's blocked listeners, which would
     * keep every flow (and its Netty channel) a recovering connection ever made.
     */
    public static void attach(ConnectionHandler handler) {
        assert handler.outbound().inEventLoop() : "publish flow attached off the event loop";
        ChannelHandlerContext ctx = handler.context();
        PublishFlow flow =
                new PublishFlow(ctx, handler.outbound(), handler.options().publishOptions());
        handler.outbound().addWritabilityListener(flow.writabilityChanged);
        ctx.channel().attr(FLOW).set(flow);
    }

    /**
     * Tells a flow of a writability change. A class, not a method reference: a fresh JVM generates
     * a class for each method reference at its first use, here the first connect.
     */
    private static final class WritabilityListener implements Runnable {
        private final PublishFlow flow;

        WritabilityListener(PublishFlow flow) {
            this.flow = flow;
        }

        @Override
        public void run() {
            flow.onWritabilityChanged();
        }
    }

    /**
     * {@link #isWritable} for {@link WakeTurns}' check (a named class: a method reference is one more class a fresh
     * JVM makes).
     */
    private static final class WritableNow implements BooleanSupplier {
        private final PublishFlow flow;

        WritableNow(PublishFlow flow) {
            this.flow = flow;
        }

        @Override
        public boolean getAsBoolean() {
            return flow.isWritable();
        }
    }

    /** The flow {@link #attach} made for the connection {@code handler} runs. */
    public static PublishFlow of(ConnectionHandler handler) {
        return handler.context().channel().attr(FLOW).get();
    }

    private PublishFlow(ChannelHandlerContext ctx, OutboundPath outbound, PublishOptions options) {
        this.ctx = ctx;
        this.outbound = outbound;
        this.options = new PublishOptions(options);
        this.maxPendingBytes = options.maxPendingBytes();
        this.buffers = outbound.publishBuffers();
        this.turns = new WakeTurns(ctx.executor(), new WritableNow(this), writabilityChanged);
        this.mark = new WriteBufferMark(ctx.channel().config(), options, outbound.stagesHeapBodies());
        this.maxMessagesPerFlush = options.maxMessagesPerFlush();
    }

    PublishOptions options() {
        return options;
    }

    /** The connection's head and end-octet buffers for framing publishes. Event loop. */
    PublishBuffers buffers() {
        return buffers;
    }

    // ---- any thread --------------------------------------------------------------------------------------

    /**
     * Counts {@code bytes} of a new publish as queued, unless that would take the connection past
     * {@link PublishOptions#maxPendingBytes()}: then false and nothing counted. A connection that holds
     * nothing accepts any size, so one message over the bound can still be sent.
     */
    boolean tryReserve(long bytes) {
        mark.publishing(bytes);
        long before = QUEUED.getAndAdd(this, bytes);
        long others = before + heldBytes + nettyPendingBytes();
        if (others > 0 && others + bytes > maxPendingBytes) {
            QUEUED.getAndAdd(this, -bytes);
            return false;
        }
        if (before + bytes >= queueMark() && !queueFull) {
            fullUntold = true; // first: whoever reads queueFull set can count on a drain telling of it
            queueFull = true;
        }
        return true;
    }

    /**
     * Counts {@code bytes} as queued whatever the bound: a publish accepted already, which the socket refused on its
     * caller's thread, on its way to the event loop (see {@link #tryReserve}).
     */
    void reserveAnyway(long bytes) {
        QUEUED.getAndAdd(this, bytes);
    }

    /**
     * True when the socket takes more without waiting: Netty writable, the queue not full, not blocked. The queue
     * reads full from its mark down to half of it (hysteresis, like Netty's water marks): a publisher that waits
     * is woken once per half a queue, not once per message taken. The flag is cleared by whoever sees the queue
     * at or below half (any thread: clearing when that holds is always right), so a flag set late by a publisher
     * that raced the event loop's drain cannot stay set.
     */
    boolean isWritable() {
        if (blocked) {
            return false;
        }
        if (queueFull) {
            if (queuedBytes > queueMark() / 2) {
                return false;
            }
            queueFull = false;
        }
        return ctx.channel().isWritable();
    }

    /** A task for a new publish: a pooled one, or a new one when the pool is empty. Any thread. */
    PublishTask acquireTask() {
        SpmcArrayQueue<PublishTask> pool = taskPool;
        PublishTask t = pool == null ? null : pool.relaxedPoll();
        return t != null ? t : new PublishTask();
    }

    /** Clears a task and returns it to the pool (dropped when the pool is full). Event loop. */
    void releaseTask(PublishTask task) {
        assert ctx.executor().inEventLoop() : "the pool has one producer, the event loop";
        task.clear();
        SpmcArrayQueue<PublishTask> pool = taskPool;
        if (pool == null) {
            taskPool = pool = new SpmcArrayQueue<>(TASK_POOL_SIZE);
        }
        pool.relaxedOffer(task);
    }

    /** Tasks kept for reuse, for tests. */
    public int pooledTasks() {
        SpmcArrayQueue<PublishTask> pool = taskPool;
        return pool == null ? -1 : pool.size();
    }

    boolean isBlocked() {
        return blocked;
    }

    String blockedReason() {
        return blockedReason;
    }

    /** True when publishes wait while blocked (policy HOLD and the broker blocked the connection). */
    boolean holdsWhileBlocked() {
        return blocked && options.blockedPolicy() == PublishOptions.BlockedPolicy.HOLD;
    }

    /** Bytes accepted and not yet written to the socket, Netty's outbound buffer included (diagnostics, tests). */
    long pendingBytes() {
        return queuedBytes + heldBytes + nettyPendingBytes();
    }

    private long nettyPendingBytes() {
        ChannelOutboundBuffer out = ctx.channel().unsafe().outboundBuffer();
        return out == null ? 0 : out.totalPendingWriteBytes();
    }

    /**
     * Whether Netty's outbound buffer is below its high-water mark. While it is not, a publish of a large heap body
     * reaching the event loop is held by its channel instead of written ({@link Publisher}): so what the socket has
     * not taken stays bounded by the mark plus one message, not by the number of publishing threads. Where the
     * transport copies a heap buffer into direct memory at the write (TLS, the native transports; Warren's NIO
     * channel copies one of 16 KiB or more into its staging buffer, at most one staging buffer ahead of the socket,
     * see {@link io.warren.impl.connection.DirectNioSocketChannel}) that bounds the copies too.
     */
    boolean isSocketWritable() {
        return ctx.channel().isWritable();
    }

    /** The size from which a heap body waits for the socket ({@link #isSocketWritable}; {@link WriteBufferMark}). */
    int largeHeapBody() {
        return mark.largeHeapBody();
    }

    private int queueMark() {
        return mark.queueMark();
    }

    // ---- event loop --------------------------------------------------------------------------------------

    void add(Publisher publisher) {
        assert ctx.executor().inEventLoop() : "publish flow off the event loop";
        publishers.add(publisher);
    }

    void remove(Publisher publisher) {
        assert ctx.executor().inEventLoop() : "publish flow off the event loop";
        publishers.remove(publisher);
    }

    /** A queued publish was handed to Netty (or failed before): its bytes leave the queue. */
    void dequeued(long bytes) {
        long after = QUEUED.addAndGet(this, -bytes);
        long half = queueMark() / 2;
        // Told once per filling, whoever cleared queueFull (see fullUntold); a queue that never filled tells nobody,
        // but for one round after a filler that raced this drain set the flags late.
        // Off the loop (a refused task), the loop is ending and its end fails every waiter.
        if (after <= half && (queueFull || fullUntold)) {
            queueFull = false;
            if (ctx.executor().inEventLoop()) {
                fullUntold = false;
                changed();
            }
        }
    }

    /** A queued publish is held by its channel: its bytes move from queued to held. */
    void hold(long bytes) {
        HELD.getAndAdd(this, bytes);
        dequeued(bytes);
    }

    /** A held publish was written or failed: its bytes are no longer held. */
    void unhold(long bytes) {
        HELD.getAndAdd(this, -bytes);
    }

    /** Writes a flush now (the diagnostic flush-per-message mode). */
    void flush() {
        unflushedBytes = 0;
        unflushedMessages = 0;
        outbound.flushNow(); // through the path: a publish's held-back end octet goes out with it
    }

    /**
     * {@code bytes} of a publish were written (not flushed). The outbound path flushes once per batch, at the end
     * of a drain; but a drain lasts as long as publishers keep the queue non-empty, and unflushed bytes count
     * against Netty's high-water mark: without a flush in between, a busy connection would turn unwritable, stop
     * its publishers, flush, and start again (stop-and-go). So a flush also goes out every half high-water mark
     * of publishes: one flush per ~250 small messages under load (per ~4,000 once the mark is raised), never one
     * per message, unless
     * {@link PublishOptions#maxMessagesPerFlush()} asks for fewer messages per flush.
     */
    void written(long bytes) {
        assert ctx.executor().inEventLoop() : "publish flow off the event loop";
        unflushedBytes += bytes;
        if (unflushedBytes >= mark.flushThreshold() || ++unflushedMessages >= maxMessagesPerFlush) {
            flush();
        }
    }

    /**
     * Netty's writability changed ({@code channelWritabilityChanged}). Netty reports it synchronously from inside
     * {@code ctx.write} when a write crosses the high-water mark, that is in the middle of a publish's three
     * writes: a publisher told now would write its frames inside that message's body frame. So publishers are
     * told once the message is written whole ({@link #endMessage}).
     */
    public void onWritabilityChanged() {
        assert ctx.executor().inEventLoop() : "publish flow off the event loop";
        if (writing) {
            changedWhileWriting = true;
        } else {
            changed();
        }
    }

    /** True while a message's buffers are being written: publishing now would interleave frames. */
    boolean isWriting() {
        return writing;
    }

    /** A publisher starts writing the buffers of one message. */
    void beginMessage() {
        writing = true;
    }

    /** The message is written whole: publishers hear now of any change that came meanwhile. */
    void endMessage() {
        writing = false;
        if (changedWhileWriting) {
            changedWhileWriting = false;
            changed();
        }
    }

    /** Something that would write was asked for while {@link #isWriting()}: retry it at {@link #endMessage()}. */
    void retryAfterMessage() {
        changedWhileWriting = true;
    }

    @Override
    public void blocked(String reason) {
        blockedReason = reason;
        blocked = true;
        changed();
    }

    @Override
    public void unblocked() {
        blocked = false;
        blockedReason = null;
        changed();
    }

    private void changed() {
        if (telling) {
            // a publisher told of a change wrote and changed writability again: everyone is told once more after
            // this round, not from inside it
            changedWhileTelling = true;
            return;
        }
        telling = true;
        try {
            do {
                changedWhileTelling = false;
                tellPublishers();
            } while (changedWhileTelling);
        } finally {
            telling = false;
        }
    }

    private void tellPublishers() {
        // From a copy (a publisher told of the change may close a channel and remove a publisher): everyone is told,
        // a removed one at worst once more (harmless). In turns: the one told first sends what it holds until the
        // socket is above its high-water mark again, and the others keep theirs until the next change; the same one
        // first every time would starve the rest. The turn moves on in writable rounds only: the rounds a publish
        // makes while the connection is unwritable (one or two per large message) would otherwise move it by a
        // fixed stride, and with a channel count that shares a factor with it some channels would never come first.
        assert ctx.executor().inEventLoop() : "publish flow off the event loop";
        int n = publishers.size();
        if (n == 0) {
            return;
        }
        Publisher[] tell = toTell.length >= n ? toTell : (toTell = new Publisher[Math.max(n, 2 * toTell.length)]);
        int first = firstToTell % n;
        for (int i = 0; i < n; i++) {
            tell[i] = publishers.get((first + i) % n);
        }
        // a writable round: the next starts after the first publisher it woke (waiting threads are woken in turns), or
        // else one further on
        boolean writable = isWritable();
        int next = writable ? first + 1 : first;
        turns.beginRound(writable, mark.high() - queuedBytes - nettyPendingBytes());
        try {
            for (int i = 0; i < n; i++) {
                int before = turns.woken();
                tell[i].onFlowChanged();
                if (writable && before == 0 && turns.woken() > 0) {
                    next = first + i + 1;
                }
            }
        } finally {
            turns.endRound();
            java.util.Arrays.fill(tell, 0, n, null);
        }
        firstToTell = next % n;
    }

    /**
     * Whether a publisher told of a change wakes its threads waiting for writability, expected to publish
     * {@code expectedBytes} each round ({@link WakeTurns#mayWake}). Event loop.
     */
    boolean mayWake(long expectedBytes) {
        return turns.mayWake(expectedBytes);
    }
}
