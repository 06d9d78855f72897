package io.warren.impl.publish;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCountUtil;
import io.warren.AmqpException;
import io.warren.BackPressureException;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ChannelLostException;
import io.warren.ConnectionBlockedException;
import io.warren.ConnectionLostException;
import io.warren.MessageTooLargeException;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.ReturnListener;
import io.warren.RpcTimeoutException;
import io.warren.WritabilityListener;
import io.warren.codec.Frame;
import io.warren.codec.Frames;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.content.SequenceHeader;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicAck;
import io.warren.codec.method.BasicNack;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.AssembledContent;
import io.warren.impl.channel.ChannelRpc;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.channel.ContentAssembler;
import io.warren.impl.channel.RepeatedName;
import io.warren.impl.channel.TxGate;
import io.warren.impl.connection.DirectNioSocketChannel;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.connection.Replies;
import io.warren.impl.connection.Requests;
import io.warren.impl.metrics.MetricsCollector;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One channel's publishing: the publish call, publisher confirms ({@link ConfirmTracker}), basic.return and
 * back-pressure (the confirm window, the connection's {@link PublishFlow}, writability).
 *
 * <p>An idle connection's publish is written by its caller under the {@link OutboundPath}'s writer token: no hop to
 * the event loop. Otherwise a pooled {@link PublishTask} goes through the path's queue and {@link #onTask} writes it
 * on the loop, or holds it (in order) while the confirm window is full, confirm.select is in flight or the broker
 * blocks us. In confirm mode a publish gets its sequence number when it is written, by whoever holds the token (a
 * caller, or the loop, which queues its publish behind a caller's token instead of numbering it), so confirm order is
 * wire order; a caller records its publish for the {@link ConfirmTracker} before it writes it. {@link #confirmSelect}
 * holds what reaches the loop after it until select-ok, which keeps the numbering exact.
 *
 * <p>tx.select, tx.commit and tx.rollback come through here too, so that they reach the wire in call order with the
 * publishes: one that finds publishes held waits among them ({@code held}); when they are written its
 * {@link TxSequencer} hands it to the channel's RPC queue, and while it waits there for its turn, what is published
 * is held. A commit then covers exactly the publishes made before it.
 *
 * <p>On close nothing more is written. Held publishes go to the channel's {@link PublishCarryOver recovery} when the
 * connection was lost with recovery to follow, else fail as not written ({@link ChannelClosedException}, or
 * {@link PublishNotConfirmedException} in confirm mode). Unconfirmed ones fail at once when the broker closed the
 * channel; after the application's close they still take acks until close-ok, since RabbitMQ confirms what it read
 * first.
 */
public final class Publisher {

    private static final Logger LOG = LoggerFactory.getLogger(Publisher.class);

    /**
     * Bytes a publish counts beyond its frames against the connection's bounds: its task, queue slot and Netty's
     * outbound entries, rounded up so that the queue's mark (half the write-buffer high-water mark) holds fewer
     * small publishes than a chunk of the outbound queue (see PublishFlow), and a flood of empty messages is bounded.
     */
    static final int TASK_OVERHEAD = 512;

    /**
     * The largest heap body its caller writes to the socket; a larger one goes the event loop's way. The JDK copies a
     * heap buffer into a temporary direct buffer to write it, and keeps that buffer cached per thread, sized to the
     * largest write the thread made (sun.nio.ch.Util): 16 publishing threads x 1 MiB would keep 16 MiB of direct
     * memory for good, and one thread's 64 KiB bodies kept 64 KiB beside the loop's staging buffer. A body the
     * channel would stage ({@link DirectNioSocketChannel#STAGE_FROM} or more) goes through that buffer instead, each
     * byte copied once into memory the connection already holds, at the cost of the hop to the loop; a smaller one
     * skips the hop.
     */
    static final int MAX_CALLER_HEAP_BODY = DirectNioSocketChannel.STAGE_FROM - 1;

    private static final CompletionStage<Void> WRITABLE = CompletableFuture.completedStage(null);

    /**
     * The header a mandatory publish carries in confirm mode (unless {@link PublishOptions#correlateReturns} is off):
     * its publish sequence number, which basic.return gives back with the message, so the return completes exactly
     * its own publish's outcome (see {@link ConfirmTracker}).
     */
    public static final SequenceHeader SEQUENCE_HEADER = new SequenceHeader("x-warren-pub-seq-no");

    /**
     * Refuses properties whose content header would not fit one frame of {@code frameMax} (0: no limit), with room
     * for the {@link #SEQUENCE_HEADER} when the publish may be {@code stamped} (mandatory, returns correlated: the
     * confirm mode is the loop's to know). Any thread; what a publish is checked with before it is taken, here or
     * while its channel recovers.
     *
     * @throws IllegalArgumentException when it would not fit
     */
    public static void checkHeaderFits(int channel, BasicProperties props, boolean stamped, int frameMax) {
        PublishFrames.checkHeaderFits(
                channel, ContentHeaderEncoder.encodedLength(props, stamped ? SEQUENCE_HEADER : null), frameMax);
    }

    private final ChannelState state;
    private final Channel channel;
    /** Takes the publishes this publisher could not write when its channel was lost with recovery to follow. */
    private final PublishCarryOver carryOver;

    private final int number;
    private final OutboundPath outbound;
    private final PublishFlow flow;
    private final PublishOptions options;
    private final MetricsCollector metrics;
    /** tx methods' turns: publishes wait while one waits in the channel's RPC queue. */
    private final TxSequencer txs;

    // any thread
    private final CopyOnWriteArrayList<ReturnListener> returnListeners = new CopyOnWriteArrayList<>();
    /** whenWritable's waiters and the writability listeners. */
    private final WritabilityWaiters writability;
    /** The names this channel publishes to, encoded once when they repeat. */
    private final RepeatedName exchangeName = new RepeatedName();

    private final RepeatedName routingKeyName = new RepeatedName();
    /** Written by the event loop when it changes: publishes are held, or the confirm window is full. */
    private volatile boolean windowFull;
    /**
     * Written by the event loop: a publish may be written on its caller's thread (see {@link OutboundPath}): no select
     * in flight, nothing held, not closed. Cleared before the loop writes whatever such a publish must not pass.
     */
    private volatile boolean direct = true;
    /**
     * The confirm tracker, for callers: set at select-ok before {@code direct} is set again, so a caller that reads
     * {@code direct} true under the token, then this, sees the mode that holds until it gives the token back.
     */
    private volatile ConfirmTracker callerConfirms;

    // event loop only
    /** Publishes waiting to be written, in order, and the tx methods called between them ({@link TxTask}). */
    private final ArrayDeque<OutboundPath.DiscardableTask> held = new ArrayDeque<>();
    /**
     * The socket refused a caller's write: the connection is going, nothing more is written on it; what is published
     * meanwhile, the refused publish first, is held until the close.
     */
    private boolean connectionGoing;

    private final BasicAck ackView = new BasicAck();
    private final BasicNack nackView = new BasicNack();
    private final ContentAssembler.Listener returnAssembly = new ReturnAssembly();
    /** A basic.return was dropped for its size: the acks that come through the close confirm nothing. Event loop. */
    private boolean returnDropped;

    private final PublishFrames.MessageBuffers buffers = new PublishFrames.MessageBuffers();

    private ConfirmTracker confirms;
    private int selecting;
    /** The broker stopped this channel's content (channel.flow active=false): publishes wait until it starts it. */
    private boolean flowStopped;

    private boolean closed;
    private AmqpException closeCause;
    /** The confirm window filled up and has not drained to half yet: reads unwritable (hysteresis). */
    private boolean windowClosed;
    /** A retry of the held publishes is queued behind a caller's token ({@link #tokenToNumber}). */
    private boolean retryQueued;
    /** Publishes from the loop queued behind a caller's token and not yet run again ({@link #onTask}). */
    private int deferredBehindCaller;

    private final Runnable retryHeld = this::retryHeld;

    /** Created with its channel, on the event loop: registers basic.ack, basic.nack and basic.return. */
    public Publisher(ChannelState state, Channel channel, PublishCarryOver carryOver) {
        this.state = state;
        this.channel = channel;
        this.carryOver = carryOver;
        this.number = state.number();
        this.outbound = state.outbound();
        this.flow = PublishFlow.of(state.connection());
        this.options = flow.options();
        this.metrics = state.connection().metrics();
        this.txs = new TxSequencer(this, state, carryOver);
        this.writability = new WritabilityWaiters(channel, flow);
        state.txGate(new SettlementGate());
        flow.add(this);
        // through the close: RabbitMQ confirms (and returns) what it read before our channel.close
        state.registerThroughClose(60, 80, (ch, frame) -> onAck(frame));
        state.registerThroughClose(60, 120, (ch, frame) -> onNack(frame));
        state.registerThroughClose(60, 50, (ch, frame) -> ch.beginContent(frame, returnAssembly));
        state.register(20, 20, (ch, frame) -> onChannelFlow(frame));
        state.onClose(this::onClosed);
        state.afterClose(this::failUnconfirmed);
    }

    // ---- any thread --------------------------------------------------------------------------------------

    /** See {@link io.warren.Channel#publish(CharSequence, CharSequence, boolean, BasicProperties, ByteBuf)}. */
    public CompletableFuture<PublishOutcome> publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body) {
        PublishFuture future = new PublishFuture(number);
        RuntimeException refused = submit(exchange, routingKey, mandatory, properties, body, future);
        if (refused != null) {
            metrics.publishFailed();
            future.completeExceptionally(refused);
        }
        return future;
    }

    /** See {@link io.warren.Channel#publishNoOutcome}. */
    public void publishNoOutcome(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body) {
        RuntimeException refused = submit(exchange, routingKey, mandatory, properties, body, null);
        if (refused != null) {
            metrics.publishFailed();
            throw refused;
        }
    }

    /** Frames, counts and queues a publish; returns why it was refused (body released), or null. */
    private RuntimeException submit(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            PublishFuture future) {
        if (body == null) {
            return new IllegalArgumentException("body must not be null");
        }
        if (body.refCnt() == 0) {
            // not released again (that would throw); refused before its bytes are read by anyone
            return new IllegalArgumentException("channel " + number + ": body was already released (refCnt 0)");
        }
        boolean toLoop = false;
        if (!channel.isOpen()) {
            CompletableFuture<AmqpException> closing = channel.closeFuture().toCompletableFuture();
            AmqpException cause = state.closeCause();
            if (closing.isDone()
                    || !(cause instanceof ConnectionLostException || cause instanceof ChannelLostException)
                    || !carryOver.wouldCarry()) {
                body.release();
                // refused, not "unconfirmed": nothing was attempted, whatever the confirm mode. While the channel's
                // close is still failing what waited (a callback publishing), its close-future is not complete yet:
                // the state has the cause already
                AmqpException closed = closing.getNow(null);
                return closedError(closed != null ? closed : state.closeCause());
            }
            // The event loop is closing the channel for a loss at this moment and has not decided yet whether recovery
            // takes it over (the channel then holds what is published) or it ends. Queued, the publish meets the
            // decision there, as one queued just before the loss does: carried over, or failed. Only where it would
            // be carried over: a refusal (FAIL_FAST, a transactional channel, no recovery) stays the caller's to see.
            // On the loop itself (a callback of what the close fails) it is queued too, not run at once: the close
            // makes the decision after its callbacks return
            toLoop = true;
        }
        if (flow.isBlocked() && options.blockedPolicy() == PublishOptions.BlockedPolicy.FAIL) {
            body.release();
            return new ConnectionBlockedException(
                    "channel " + number + ": the broker blocked the connection (" + flow.blockedReason()
                            + "); publish refused (PublishOptions.blockedPolicy FAIL)",
                    flow.blockedReason(),
                    number);
        }
        BasicProperties props = properties == null ? BasicProperties.EMPTY : properties;
        long bytes;
        int frameMax;
        try {
            // checked here so that bad input fails the caller at once; framed on the event loop (PublishFrames)
            exchange = exchangeName.of(exchange);
            routingKey = routingKeyName.of(routingKey);
            int exchangeLength = ShortString.checkedLength("exchange", exchange);
            int routingKeyLength = ShortString.checkedLength("routing-key", routingKey);
            exchange = ShortString.immutable(exchange);
            routingKey = ShortString.immutable(routingKey);
            frameMax = state.connection().facade().frameMax();
            checkHeaderFits(number, props, mandatory && options.correlateReturns(), frameMax);
            bytes = PublishFrames.wireLength(exchangeLength, routingKeyLength, props, body.readableBytes(), frameMax)
                    + TASK_OVERHEAD;
        } catch (RuntimeException e) {
            body.release();
            return e;
        }
        if (direct
                && !toLoop
                && body.isReadable()
                && (frameMax == 0 || body.readableBytes() <= frameMax - Frames.FRAME_OVERHEAD)
                && body.nioBufferCount() == 1
                && (body.isDirect() || body.readableBytes() <= MAX_CALLER_HEAP_BODY)
                && outbound.tryTakeForCaller()) {
            // The connection is idle: written on this thread, no hand-over. Looked at again under the token: the loop
            // clears `direct` before it writes anything that this publish must not pass (confirm.select, a held
            // publish, the channel's close), and it cannot write while this thread holds the token.
            ByteBuf head = outbound.callerHead();
            boolean mayWrite = direct && !flow.holdsWhileBlocked();
            ConfirmTracker c = mayWrite ? callerConfirms : null; // after `direct`: see callerConfirms
            long sequence = c == null ? 0 : c.callerSequence();
            SequenceHeader stamp = c != null && mandatory && options.correlateReturns() ? SEQUENCE_HEADER : null;
            if (!(mayWrite
                    && (c == null || sequence > 0)
                    && PublishFrames.frameHead(
                            head,
                            number,
                            exchange,
                            routingKey,
                            mandatory,
                            props,
                            stamp,
                            sequence,
                            body.readableBytes()))) {
                // the window is full (held on the loop, in order), or a head too large for the caller's buffer
                outbound.releaseCaller();
            } else if (c != null) {
                return writeConfirmed(c, sequence, head, exchange, routingKey, mandatory, props, body, bytes, future);
            } else {
                try {
                    if (writeDirect(head, body, future)) {
                        return null;
                    }
                } catch (RuntimeException e) {
                    // not the socket: the body itself could not be written (the token is given back). Not a lost
                    // connection's case, so not the loop's way: this publish fails rather than queue a broken body.
                    ReferenceCountUtil.safeRelease(body);
                    return e;
                }
                // the socket refused it (the connection is going): not written, as one held at the close is
                handRefused(0, exchange, routingKey, mandatory, props, body, bytes, future);
                return null;
            }
        }
        if (!flow.tryReserve(bytes)) {
            body.release();
            return new BackPressureException(
                    "channel " + number + ": publish of " + bytes + " bytes refused: the"
                            + " connection holds " + flow.pendingBytes() + " bytes not yet written (PublishOptions"
                            + ".maxPendingBytes " + options.maxPendingBytes() + "); wait for Channel.whenWritable()",
                    number);
        }
        PublishTask task = flow.acquireTask();
        task.set(this, exchange, routingKey, mandatory, props, body, bytes, future);
        if (toLoop && outbound.inEventLoop()) {
            outbound.deferBehindCaller(task); // behind the close that runs now: see toLoop
        } else {
            outbound.execute(task);
        }
        return null;
    }

    /**
     * Writes a framed publish on the caller's thread under the outbound path's token (held on entry, given back or
     * handed to the loop on return). Outside confirm mode only ({@code direct}). False when the socket refused it:
     * nothing written, {@code body} still the caller's. A RuntimeException (the body, not the socket, failed) is
     * thrown on, also with nothing written, the token given back and {@code body} the caller's.
     */
    private boolean writeDirect(ByteBuf head, ByteBuf body, PublishFuture future) {
        boolean whole;
        try {
            whole = outbound.writeDirect(head, body);
        } catch (java.io.IOException e) {
            LOG.debug(
                    "channel {}: the socket refused a publish ({}); it goes through the event loop",
                    number,
                    e.toString());
            return false;
        }
        metrics.messagePublished();
        if (whole) {
            if (future != null) {
                future.complete(PublishOutcome.SENT);
            }
        } else {
            outbound.handOver(future); // the future listens to its write itself: no listener allocated
        }
        return true;
    }

    /**
     * Writes a framed publish in confirm mode on the caller's thread under the token (held on entry, given back or
     * handed to the loop on return). Its number is spent before the write: recorded for the tracker first, so that
     * the ack always finds it. A socket that refuses it (nothing written) is a connection going: it is closed, as
     * Netty closes one whose write fails, and the publish, never written, is carried over or failed as not written at
     * the close ({@link #handRefused}). Takes {@code body} in every case: written (released once written), handed over
     * with the rest, handed to the loop with the refusal, or released when it cannot be written at all.
     */
    private RuntimeException writeConfirmed(
            ConfirmTracker c,
            long sequence,
            ByteBuf head,
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties props,
            ByteBuf body,
            long bytes,
            PublishFuture future) {
        try {
            outbound.gatherDirect(head, body);
        } catch (RuntimeException e) {
            // the body, not the socket, cannot be written (the token is given back): its number is not spent yet,
            // so this publish fails alone, as outside confirm mode
            ReferenceCountUtil.safeRelease(body);
            return e;
        }
        // counted before the record: the loop may settle it from then on (as the loop's own writes count before they
        // write; one the socket refuses fails unconfirmed with the connection)
        metrics.messagePublished();
        metrics.awaitingConfirm();
        c.recordCaller(sequence, future, mandatory, metrics.timesConfirms() ? System.nanoTime() : 0);
        try {
            if (!outbound.writeGathered(head, body)) {
                outbound.handOver(null);
            }
        } catch (java.io.IOException | RuntimeException e) {
            // Nothing of it was written (an interrupted caller's write closes the socket, say): not a publish that may
            // have reached the broker, but one accepted and not written. Its number is spent on a connection that is
            // going, so it is not sent again here: its task takes it out of the tracker, and the close carries it
            // over to the recovered channel or fails it as not written (onRefused)
            LOG.debug("channel {}: the socket refused publish {} ({}); closing the connection", number, sequence, e);
            c.refusedByCaller(sequence);
            handRefused(sequence, exchange, routingKey, mandatory, props, body, bytes, future);
        }
        if (!direct) {
            // The loop cleared `direct` (a close, say) and may have taken the records before this one: it takes
            // this one too. Record, then read `direct`; the loop writes `direct`, then takes: one of the two sees
            // the other (volatile accesses are totally ordered). A loop that has ended takes nothing: the task is
            // discarded, and fails this publish itself (a no-op when the loop took and settled it first).
            outbound.execute(new TakeCallers(sequence, future));
        }
        return null;
    }

    /**
     * Sends a publish the socket refused on its caller's thread (nothing written; {@code sequence} its confirm number,
     * or 0) to the event loop ({@link #onRefused}), and closes the connection, which is going. Takes {@code body}.
     */
    private void handRefused(
            long sequence,
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties props,
            ByteBuf body,
            long bytes,
            PublishFuture future) {
        flow.reserveAnyway(bytes); // accepted already: counted whatever the bound, as it is held until the close
        PublishTask task = flow.acquireTask();
        task.set(this, exchange, routingKey, mandatory, props, body, bytes, future);
        task.refused = true;
        task.refusedSequence = sequence;
        outbound.execute(task);
        outbound.channel().close();
    }

    /** True when a publish now would be written at once; see {@link io.warren.Channel#isWritable()}. */
    public boolean isWritable() {
        ConfirmTracker c = callerConfirms;
        return !windowFull && (c == null || !c.windowFullForCallers()) && channel.isOpen() && flow.isWritable();
    }

    /** Completes (on the event loop) when {@link #isWritable()}; at once when it is already. */
    public CompletionStage<Void> whenWritable() {
        if (isWritable()) {
            return WRITABLE;
        }
        CompletableFuture<Void> f = new CompletableFuture<>();
        // Behind this thread's queued publishes: they are counted by the time the event loop looks.
        outbound.execute(new AddWaiter(f));
        return f;
    }

    public void addWritabilityListener(WritabilityListener listener) {
        writability.addListener(listener);
    }

    public void removeWritabilityListener(WritabilityListener listener) {
        writability.removeListener(listener);
    }

    public void addReturnListener(ReturnListener listener) {
        returnListeners.add(Objects.requireNonNull(listener, "listener"));
    }

    public void removeReturnListener(ReturnListener listener) {
        returnListeners.remove(listener);
    }

    /**
     * confirm.select through the channel's RPC queue. Publishes reaching the event loop after this call are
     * held until the select is answered (see the class comment).
     */
    public CompletionStage<Void> confirmSelect(boolean noWait) {
        CompletableFuture<Void> result = new CompletableFuture<>();
        ByteBuf frame = Requests.confirmSelect(state.alloc(), number, noWait);
        CompletableFuture<Void> selected = new CompletableFuture<>();
        ChannelRpc.Request<Void> request = noWait
                ? ChannelRpc.Request.noWait(MethodIds.CONFIRM_SELECT, frame, null, selected)
                : ChannelRpc.Request.of(
                        MethodIds.CONFIRM_SELECT,
                        MethodIds.CONFIRM_SELECT_OK,
                        -1,
                        frame,
                        (reply, f) -> f.complete(null),
                        selected);
        outbound.execute(new SelectTask(frame, request, selected, result));
        return result;
    }

    /** tx.select, in order with this channel's publishes (see {@link TxSequencer}). */
    public CompletionStage<Void> txSelect() {
        state.transactional(); // before the select is queued: a settlement made after this call is ordered with it
        return txs.select();
    }

    /** tx.commit: commits the publishes made before it on this channel, and no later one. */
    public CompletionStage<Void> txCommit() {
        return txs.commit();
    }

    /** tx.rollback: rolls back the publishes made before it on this channel, and no later one. */
    public CompletionStage<Void> txRollback() {
        return txs.rollback();
    }

    /**
     * A transactional channel's settlement made while its publishes wait (behind a tx method, or anything held before
     * it) waits with them, in its place: a commit covers the settlements made before it and no later one.
     */
    private final class SettlementGate implements TxGate {
        @Override
        public boolean holdSettlement(TxGate.Settlement settlement) {
            assert outbound.inEventLoop() : "publisher state off the event loop";
            if (closed || (held.isEmpty() && !txs.holdsPublishes())) {
                return false;
            }
            held.add(settlement);
            return true;
        }
    }

    /** confirm.select on the loop; discarded (frame released, caller failed) when the loop has ended. */
    private final class SelectTask implements OutboundPath.DiscardableTask {
        private final ByteBuf frame;
        private final ChannelRpc.Request<Void> request;
        private final CompletableFuture<Void> selected;
        private final CompletableFuture<Void> result;
        /** Event loop only: the select went to the outbound path, so the broker may have acted on it. */
        private boolean sent;

        SelectTask(
                ByteBuf frame,
                ChannelRpc.Request<Void> request,
                CompletableFuture<Void> selected,
                CompletableFuture<Void> result) {
            this.frame = frame;
            this.request = request;
            this.selected = selected;
            this.result = result;
            request.onSend(() -> sent = true);
        }

        @Override
        public void run() {
            boolean entering = confirms == null;
            if (entering) {
                selecting++;
                updateWritability();
            }
            // The only dependent of `selected`: confirm mode is on before the caller's code sees the result.
            selected.whenComplete((v, e) -> onSelected(entering, sent, e, result));
            state.call(request);
        }

        @Override
        public void discard(Throwable cause) {
            frame.release(); // never handed to the channel's RPC queue
            result.completeExceptionally(closedError(cause));
        }
    }

    /** Adds a {@link #whenWritable} waiter on the loop; fails it when the loop has ended. */
    private final class AddWaiter implements OutboundPath.DiscardableTask {
        private final CompletableFuture<Void> waiter;

        AddWaiter(CompletableFuture<Void> waiter) {
            this.waiter = waiter;
        }

        @Override
        public void run() {
            addWaiter(waiter);
        }

        @Override
        public void discard(Throwable cause) {
            waiter.completeExceptionally(closedError(cause));
        }
    }

    /**
     * Takes callers' records on the loop, for a caller that saw {@code direct} cleared after its record. When the
     * loop has ended nothing will take that record: its publish fails here (any thread; a completed future is left
     * as it is).
     */
    private final class TakeCallers implements OutboundPath.DiscardableTask {
        private final long sequence;
        private final CompletableFuture<PublishOutcome> future;

        TakeCallers(long sequence, CompletableFuture<PublishOutcome> future) {
            this.sequence = sequence;
            this.future = future;
        }

        @Override
        public void run() {
            takeCallers();
        }

        @Override
        public void discard(Throwable cause) {
            if (future != null) {
                future.completeExceptionally(new PublishNotConfirmedException(
                        "publish " + sequence + " on channel " + number + " was not confirmed: " + cause.getMessage(),
                        cause,
                        number,
                        true));
            }
        }
    }

    // ---- event loop --------------------------------------------------------------------------------------

    /** A publish from the outbound path's queue. */
    void onTask(PublishTask task) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        if (task.refused) {
            onRefused(task);
            return;
        }
        long bytes = task.bytes;
        writability.lastTaskBytes(bytes);
        if (task.deferred) {
            task.deferred = false; // its turn behind the caller came
            deferredBehindCaller--;
        } else if (deferredBehindCaller > 0) {
            // an earlier publish from the loop waits behind a caller's write: this one goes behind it, in call order
            // (held here, it would be sent before the earlier one, which finds it held when its turn comes)
            deferBehindCaller(task);
            return;
        }
        if (closed) {
            // queued before the loss, reached here after it (the connection's end runs what is still queued)
            flow.dequeued(bytes);
            endNotWritten(task);
            return;
        }
        if (mustHold() || heldForTheSocket(task) || flow.isWriting()) {
            // isWriting: called back in the middle of another message's writes; never interleave, hold it
            if (flow.isWriting()) {
                flow.retryAfterMessage();
            }
            held.add(task);
            flow.hold(bytes);
            updateWritability();
            return;
        }
        if (confirms != null && !outbound.takeForLoop()) {
            // a caller holds the writer token (or the loop's writes queue behind one): numbered when its turn in the
            // queue comes, under the token, so that numbering order stays wire order; still counted as queued
            deferBehindCaller(task);
            return;
        }
        send(task);
        flow.dequeued(bytes);
        updateWritability();
    }

    /**
     * A publish whose caller's write the socket refused ({@link #handRefused}): in confirm mode out of the tracker
     * first; then at the close carried over or failed as not written, like the publishes held then. One that a close
     * failed before its caller marked it is settled already: only its body is left to release.
     */
    private void onRefused(PublishTask task) {
        ConfirmTracker c = callerConfirms;
        boolean settles = task.refusedSequence == 0 || c != null && c.forgetRefused(task.refusedSequence);
        if (!settles) {
            flow.dequeued(task.bytes);
            task.releaseBody();
            flow.releaseTask(task);
        } else if (closed) {
            flow.dequeued(task.bytes);
            endNotWritten(task);
        } else {
            // The connection is going: nothing more is written on it, by callers or the loop. This one and what
            // follows are held (mustHold, and releaseHeld lets none go) until the close carries them over or fails
            // them as not written, in call order
            connectionGoing = true;
            held.add(task);
            flow.hold(task.bytes);
            updateWritability();
            outbound.channel().close();
        }
    }

    private void deferBehindCaller(PublishTask task) {
        task.deferred = true;
        deferredBehindCaller++;
        outbound.deferBehindCaller(task);
    }

    /**
     * A tx method from the outbound path's queue takes its place among the publishes: to its {@link TxSequencer} now,
     * or held behind the publishes held before it.
     */
    void onTx(TxTask tx) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        if (tx.deferred) {
            tx.deferred = false;
            deferredBehindCaller--;
        } else if (deferredBehindCaller > 0) {
            // an earlier publish waits behind a caller's write: this goes behind it, as a publish would (onTask)
            tx.deferred = true;
            deferredBehindCaller++;
            outbound.deferBehindCaller(tx);
            return;
        }
        if (held.isEmpty() || closed) {
            txs.queue(tx); // closed: the channel's state fails it
        } else {
            held.add(tx);
            updateWritability();
        }
    }

    /**
     * A synchronous method of a transactional channel that must not pass the settlements made before it (basic.recover:
     * the broker requeues what is unsettled when it reads it, so a held ack written after it is lost): it takes its
     * place among what the publisher holds as a tx method does. {@code frame} is {@code request}'s, owned by it. Event
     * loop.
     */
    public void callInTurn(int method, ByteBuf frame, ChannelRpc.Request<Void> request) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        // the request completes its own future: the task's result is that future, completed once
        onTx(new TxTask(this, txs, method, frame, request, request.future()));
    }

    /** A mode switch timed out after it was sent: the channel's mode at the broker is unknown, so the channel goes. */
    void closeUnknown(String method, RpcTimeoutException timeout) {
        if (!closed) {
            LOG.warn("channel {}: {} timed out; closing the channel, whose mode is unknown", number, method);
            state.close(ReplyCode.REPLY_SUCCESS, method + " timed out", timeout);
        }
    }

    /** The event loop refused the task (the client's event loop group is shut down). Any thread. */
    void onDiscarded(PublishTask task, Throwable cause) {
        flow.dequeued(task.bytes);
        metrics.publishFailed();
        CompletableFuture<PublishOutcome> future = task.future;
        task.releaseBody();
        task.clear(); // not pooled: only the event loop returns tasks to the pool
        if (future != null) {
            future.completeExceptionally(new PublishNotConfirmedException(
                    "channel " + number
                            + ": the client's event loop refused the publish (shut down); the message was not published",
                    cause,
                    number,
                    false));
        }
    }

    /** The connection's back-pressure changed (writability, blocked, queued bytes). */
    void onFlowChanged() {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        releaseHeld();
        updateWritability();
    }

    /** No publish is written on a caller's thread until {@link #updateWritability} allows it again. Event loop. */
    void stopCallerWrites() {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        direct = false;
    }

    /** A tx method left the channel's RPC queue (sent, or failed there): the publishes held for it may go. */
    void onTxTurnOver() {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        releaseHeld();
        updateWritability();
    }

    private boolean mustHold() {
        return !held.isEmpty()
                || connectionGoing
                || selecting > 0
                || txs.holdsPublishes()
                || flowStopped
                || flow.holdsWhileBlocked()
                || (confirms != null && confirms.isFull());
    }

    /**
     * Whether {@code task} waits for the socket: a large body on the heap while Netty's outbound buffer is above its
     * high-water mark. Under TLS and on the native transports Netty copies a heap buffer into direct memory when it
     * is written to the pipeline, so written now, every publishing thread's body would be copied before the socket
     * takes any; held, it is copied when the socket has room. (On NIO the connection's allocator lets heap buffers
     * through and copies them into its staging buffer as the socket takes them; holding them there keeps Netty's buffer
     * as short.) A direct
     * body is not copied (holding it saves nothing), nor is a small one worth a stop: they are written as before.
     */
    private boolean heldForTheSocket(PublishTask task) {
        ByteBuf body = task.body;
        return body != null
                && !body.isDirect()
                && body.readableBytes() >= flow.largeHeapBody()
                && !flow.isSocketWritable();
    }

    private void releaseHeld() {
        if (flow.isWriting()) {
            flow.retryAfterMessage(); // in the middle of a message's writes: once it is complete
            return;
        }
        OutboundPath.DiscardableTask next;
        // isUsable: nothing after our channel.close (a select or tx method failed by the close comes here first)
        while ((next = held.peek()) != null && !closed && !connectionGoing && state.isUsable() && selecting == 0) {
            if (next instanceof TxTask tx) {
                held.poll();
                txs.queue(tx); // behind a tx method queued before it, if any: the RPC queue keeps their order
                continue;
            }
            if (next instanceof TxGate.Settlement settlement) {
                if (txs.holdsPublishes()) {
                    return; // behind a tx method not yet sent, or a commit not yet answered
                }
                held.poll();
                settlement.run();
                continue;
            }
            PublishTask task = (PublishTask) next;
            if (txs.holdsPublishes()
                    || flowStopped
                    || flow.holdsWhileBlocked()
                    || (confirms != null && confirms.isFull())
                    || heldForTheSocket(task)
                    || !tokenToNumber()) {
                return;
            }
            held.poll();
            long bytes = task.bytes;
            send(task);
            flow.unhold(bytes);
        }
    }

    /**
     * In confirm mode the loop numbers a publish only under the writer token (a caller numbers meanwhile otherwise):
     * takes it, the publish being written next; false when a caller holds it, and a retry is queued behind it.
     */
    private boolean tokenToNumber() {
        if (confirms == null || outbound.takeForLoop()) {
            return true;
        }
        if (!retryQueued) {
            retryQueued = true;
            outbound.deferBehindCaller(retryHeld);
        }
        return false;
    }

    private void retryHeld() {
        retryQueued = false;
        onFlowChanged();
    }

    private void takeCallers() {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        if (confirms != null) {
            confirms.takeCallers();
        }
        updateWritability();
    }

    /** Frames and writes a publish (one event-loop step: nothing comes between its buffers); pools its task. */
    private void send(PublishTask task) {
        CompletableFuture<PublishOutcome> future = task.future;
        long bytes = task.bytes;
        boolean mandatory = task.mandatory;
        ByteBuf message = task.body;
        task.body = null; // the framing takes it
        PublishFrames.MessageBuffers m = buffers;
        // In confirm mode a mandatory publish carries its sequence number for basic.return to give back. The few
        // bytes it adds are not in the task's count (the caller's thread does not know the mode): flow accounting
        // stays consistent, as every step counts task.bytes.
        SequenceHeader stamp = confirms != null && mandatory && options.correlateReturns() ? SEQUENCE_HEADER : null;
        long sequence = confirms == null ? 0 : confirms.nextSequenceNumber();
        try {
            PublishFrames.frame(
                    flow.buffers(),
                    number,
                    state.connection().facade().frameMax(),
                    task.exchange,
                    task.routingKey,
                    mandatory,
                    task.properties,
                    stamp,
                    sequence,
                    message,
                    m);
        } catch (RuntimeException e) {
            // not expected: the caller's thread checked the arguments; the framing released the body
            LOG.warn("channel {}: publish could not be framed", number, e);
            flow.releaseTask(task);
            metrics.publishFailed();
            if (future != null) {
                future.completeExceptionally(e);
            }
            return;
        }
        flow.releaseTask(task);
        ByteBuf head = m.head;
        ByteBuf body = m.body;
        m.head = null;
        m.body = null;
        OutboundPath.WriteListener whenWritten = null;
        metrics.messagePublished();
        if (confirms != null) {
            // the clock only when someone records confirm latencies (NOOP answers false: no read at all)
            confirms.add(future, mandatory, metrics.timesConfirms() ? System.nanoTime() : 0);
            metrics.awaitingConfirm();
        } else if (future != null) {
            // a publish's own future listens to its write: no listener allocated (a carried-over one's is plain)
            whenWritten = future instanceof PublishFuture own ? own : cause -> written(future, cause);
        }
        flow.beginMessage();
        try {
            if (body == null) {
                outbound.write(head, whenWritten);
            } else {
                outbound.writeContent(head, body, whenWritten);
            }
        } finally {
            flow.endMessage();
        }
        flow.written(bytes); // flushes per PublishOptions.maxMessagesPerFlush
    }

    private void written(CompletableFuture<PublishOutcome> future, Throwable cause) {
        PublishFuture.completeWritten(future, number, cause);
    }

    private void onSelected(boolean entering, boolean sent, Throwable error, CompletableFuture<Void> result) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        if (entering) {
            if (sent && error instanceof RpcTimeoutException timeout) {
                // Its select-ok may yet come: whether the broker numbers what follows is unknown, and a publish one
                // side counts and the other not makes every later ack name the wrong publish. Closed before anything
                // held could go out; the held publishes fail as not confirmed.
                closeUnknown("confirm.select", timeout);
            }
            selecting--;
            if (error == null && confirms == null && !closed) {
                confirms = new ConfirmTracker(number, options.maxOutstandingConfirms(), metrics);
                callerConfirms = confirms; // before updateWritability sets `direct` again
            }
            releaseHeld();
            updateWritability();
        }
        if (error == null) {
            result.complete(null);
        } else {
            result.completeExceptionally(error);
        }
    }

    /**
     * channel.flow from the broker (RabbitMQ no longer sends it; other brokers may): while it is off, publishes are
     * held as while the connection is blocked. flow-ok goes after {@code direct} is cleared, so behind any publish a
     * caller is writing now and before any later one, as the spec asks: the current content finished, then flow-ok.
     */
    private void onChannelFlow(Frame frame) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        boolean active = Replies.channelFlowActive(frame);
        frame.release();
        flowStopped = !active;
        updateWritability();
        outbound.write(Requests.channelFlowOk(state.alloc(), number, active));
        if (active) {
            releaseHeld();
            updateWritability();
        }
    }

    private void onAck(Frame frame) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        long tag;
        boolean multiple;
        try {
            ByteBuf p = frame.payload();
            ackView.wrap(p, p.readerIndex());
            tag = ackView.deliveryTag();
            multiple = ackView.multiple();
        } finally {
            frame.release();
        }
        if (confirms == null) {
            LOG.warn(
                    "channel {}: basic.ack {} from the broker but the channel is not in confirm mode; ignored",
                    number,
                    tag);
            return;
        }
        confirms.ack(tag, multiple); // counts each publish before completing its future
        releaseHeld();
        updateWritability();
    }

    private void onNack(Frame frame) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        long tag;
        boolean multiple;
        try {
            ByteBuf p = frame.payload();
            nackView.wrap(p, p.readerIndex());
            tag = nackView.deliveryTag();
            multiple = nackView.multiple();
        } finally {
            frame.release();
        }
        if (confirms == null) {
            LOG.warn(
                    "channel {}: basic.nack {} from the broker but the channel is not in confirm mode; ignored",
                    number,
                    tag);
            return;
        }
        confirms.nack(tag, multiple); // counts each publish before completing its future
        releaseHeld();
        updateWritability();
    }

    /** basic.return assembled: tell the tracker (confirm mode) and the listeners, then release it. */
    private final class ReturnAssembly implements ContentAssembler.Listener {
        @Override
        public boolean throughClose() {
            return true; // its publish's ack comes through the close, and must not make it CONFIRMED
        }

        /**
         * A return over the inbound size limit is dropped, and the channel closes (311): which publish it returned is
         * not known, so no outstanding one may count as confirmed by an ack that comes through that close. Dropped
         * after the application's close (its content read through it), the close has come already: they fail now.
         */
        @Override
        public void onAbort(Throwable cause) {
            assert outbound.inEventLoop() : "publisher state off the event loop";
            if (cause instanceof MessageTooLargeException tooLarge) {
                returnDropped = true;
                if (closed) {
                    failUnconfirmed(tooLarge);
                }
            }
        }

        @Override
        public void onContent(AssembledContent content) {
            assert outbound.inEventLoop() : "publisher state off the event loop";
            try {
                ReturnedMessageImpl message = new ReturnedMessageImpl(channel, content);
                metrics.messageReturned();
                if (confirms != null) {
                    if (options.correlateReturns()) {
                        confirms.returnedStamped(
                                message.replyCode(), message.replyText(), SEQUENCE_HEADER.find(message.header(), -1));
                    } else {
                        confirms.returned(message.replyCode(), message.replyText());
                    }
                }
                if (returnListeners.isEmpty()) {
                    LOG.debug("channel {}: {} with no return listener", number, message);
                }
                for (ReturnListener l : returnListeners) {
                    try {
                        l.onReturn(message);
                    } catch (RuntimeException e) {
                        LOG.warn("channel {}: return listener failed", number, e);
                    }
                }
            } finally {
                content.release();
            }
        }
    }

    private void onClosed(AmqpException cause) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        closed = true;
        direct = false;
        closeCause = cause;
        flow.remove(this);
        if (!state.isAwaitingCloseOk() || returnDropped) {
            failUnconfirmed(cause); // before the held ones (a refused one's confirm number may be lower: it is not
            // failed with these but carried over or failed as not written, below)
        }
        OutboundPath.DiscardableTask next;
        while ((next = held.poll()) != null) {
            if (next instanceof PublishTask task) {
                flow.unhold(task.bytes);
                endNotWritten(task);
            } else if (next instanceof TxTask tx) {
                txs.failHeld(tx);
            } // a held settlement is dropped: the broker requeues the channel's unsettled deliveries with its close
        }
        windowFull = false;
        writability.failAll(() -> closedError(cause));
    }

    /** Nothing more will be confirmed: what is still outstanding fails, retryably. */
    private void failUnconfirmed(AmqpException cause) {
        assert outbound.inEventLoop() : "publisher state off the event loop";
        if (confirms != null) {
            confirms.failAll(cause); // counts them first (not the refused ones: never written)
        }
    }

    private void addWaiter(CompletableFuture<Void> f) {
        updateWritability(); // callers may have filled the window since the loop last looked
        if (closed) {
            f.completeExceptionally(closedError(closeCause));
            return;
        }
        if (!windowFull && flow.isWritable()) {
            f.complete(null);
            return;
        }
        writability.add(f);
    }

    /**
     * Refreshes {@code windowFull}; tells listeners of a change and completes waiters when writable, unless the flow's
     * round of telling has woken enough publishers' threads already ({@link PublishFlow#mayWake}).
     */
    void updateWritability() {
        // read once: runs for every publish the loop writes, and the write to `direct` would force a second read
        boolean txWaits = txs.holdsPublishes();
        boolean mayWriteDirect =
                selecting == 0 && !txWaits && !flowStopped && held.isEmpty() && !closed && !connectionGoing;
        if (mayWriteDirect != direct) {
            direct = mayWriteDirect;
        }
        boolean full = !held.isEmpty() || selecting > 0 || txWaits || flowStopped || connectionGoing || windowClosed();
        if (full != windowFull) {
            windowFull = full;
        }
        if (!writability.isEmpty()) {
            writability.changed(!full && !closed && flow.isWritable());
        }
    }

    /**
     * Whether publishers should wait for confirms: true from the moment the window is full until it has drained
     * to half. Without this the first ack of a full window would wake a waiting publisher for a single slot, and
     * it would wait again at once: a wake-up (two context switches) per message instead of one per half window.
     * Held publishes still go out as soon as any slot frees ({@link #releaseHeld}); this is only the signal.
     */
    private boolean windowClosed() {
        if (confirms == null) {
            return false;
        }
        long span = confirms.span();
        if (windowClosed) {
            windowClosed = span > options.maxOutstandingConfirms() / 2;
        } else {
            windowClosed = span >= options.maxOutstandingConfirms();
        }
        return windowClosed;
    }

    /**
     * A publish accepted but not written when the channel closed: carried over to the recovered channel when the
     * connection or the channel was lost with recovery to follow, else failed as not written.
     */
    private void endNotWritten(PublishTask task) {
        // the recovery decides: it takes them while it recovers under WAIT, after a connection loss or after the
        // channel alone was lost (RabbitMQ's consumer acknowledgement timeout)
        if (carryOver.carry(
                task.exchange, task.routingKey, task.mandatory, task.properties, task.body, task.future, task.bytes)) {
            task.body = null; // recovery owns it now
            flow.releaseTask(task);
            return;
        }
        failNotWritten(task, closeCause);
    }

    private void failNotWritten(PublishTask task, Throwable cause) {
        metrics.publishFailed();
        CompletableFuture<PublishOutcome> future = task.future;
        task.releaseBody();
        flow.releaseTask(task);
        if (future != null) {
            future.completeExceptionally(notWritten(cause));
        }
    }

    /**
     * Why a publish accepted earlier was never written. In confirm mode (or entering it) the application waits for
     * a confirm, so it learns that none will come ({@link PublishNotConfirmedException}, not reached the broker);
     * without confirms there was never a confirm to miss: the channel is closed. Event loop, or a discarded task.
     */
    private AmqpException notWritten(Throwable cause) {
        if (confirms == null && selecting == 0) {
            return closedError(cause);
        }
        return new PublishNotConfirmedException(
                "channel " + number + " is closed; the message was not published"
                        + (cause == null ? "" : ": " + cause.getMessage()),
                cause,
                number,
                false);
    }

    /**
     * A {@link ChannelClosedException} for an operation refused because the channel is closed: it carries the
     * close's reply code and text, and who closed it, from {@code cause} (the channel's own close) when it has them.
     */
    ChannelClosedException closedError(Throwable cause) {
        if (cause instanceof ChannelClosedException c && c.channelNumber() == number) {
            return new ChannelClosedException(
                    "channel " + number + " is closed: " + c.getMessage(),
                    c,
                    c.replyCode(),
                    c.replyText(),
                    c.classId(),
                    c.methodId(),
                    number,
                    c.initiatedByBroker());
        }
        AmqpException a = cause instanceof AmqpException e ? e : null;
        return new ChannelClosedException(
                "channel " + number + " is closed" + (cause == null ? "" : ": " + cause.getMessage()),
                cause,
                a == null ? 0 : a.replyCode(),
                a == null ? null : a.replyText(),
                0,
                0,
                number,
                false);
    }
}
