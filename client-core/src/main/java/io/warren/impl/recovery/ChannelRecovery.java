package io.warren.impl.recovery;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.AmqpException;
import io.warren.BackPressureException;
import io.warren.ChannelLostException;
import io.warren.ConnectionLostException;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.ReturnListener;
import io.warren.WritabilityListener;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.consume.ChannelConsumers;
import io.warren.impl.metrics.MetricsCollector;
import io.warren.impl.publish.PublishCarryOver;
import io.warren.impl.publish.Publisher;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one channel needs to survive the loss of its connection: the modes to restore (qos, tx, confirm), the
 * listeners to move to each new {@link Publisher}, the publishes made while it is being recovered, and the
 * consumers of the lost states, which wait to be moved to the new one. One per {@link RecoverableChannel}, for its
 * whole life.
 *
 * <h2>Publishing during recovery</h2>
 * A publish made while the channel is recovering is held here ({@link RecoveryOptions.PublishDuringRecovery#WAIT},
 * bounded by {@code PublishOptions.maxPendingBytes} and {@link RecoveryOptions#publishWaitTimeout()}) or refused
 * ({@code FAIL_FAST}). Held publishes are sent in order, before any later publish, once the channel, its modes and
 * the topology are back; they fail (not written, retryable) when the wait times out or recovery gives up. The
 * hold is guarded by this object's monitor: publishers on any thread, the event loop replays; it is used only
 * while recovering, never on the normal path.
 *
 * <p>Publishes the lost channel had accepted but not written (held by its confirm window or a blocked connection,
 * or still queued for the event loop) are {@linkplain #carry carried} over under {@code WAIT}: they never reached
 * the broker, so writing them after recovery cannot duplicate anything. They are written first, in the order they
 * were accepted, before anything published during recovery (a separate queue: a publisher thread may already
 * have had a later publish held while the event loop was still handing them over), and the same bound and wait
 * timeout apply to them. Their bodies move from task to task, never copied.
 *
 * <p>A transactional channel (tx.select) holds and carries nothing: the broker rolled its transaction back with the
 * connection, so its publishes fail as not written and the application publishes and commits again once the channel
 * is back (written after recovery they would join a transaction the application did not mean).
 *
 * <p>Each publish waits at most the timeout from when it was made, not from the loss: a publish made late in a
 * long recovery gets its whole wait. Deadlines are read on recovery's event-loop clock when the publish is
 * queued under the monitor, so they rise in queue order and one timer, armed for the oldest, is enough: it
 * fails the expired head of the queue and re-arms for the next.
 */
public final class ChannelRecovery implements PublishCarryOver {

    private static final Logger LOG = LoggerFactory.getLogger(ChannelRecovery.class);

    private record Qos(int prefetchSize, int prefetchCount, boolean global) {}

    private record Held(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            CompletableFuture<PublishOutcome> future,
            long bytes,
            long deadlineNanos) {}

    private final RecoverableChannel channel;

    // any thread
    private final CopyOnWriteArrayList<ReturnListener> returnListeners = new CopyOnWriteArrayList<>();
    private final CopyOnWriteArrayList<WritabilityListener> writabilityListeners = new CopyOnWriteArrayList<>();
    /** Recorded when the broker accepted them; restored in this order: qos, tx.select, confirm.select. */
    private volatile Qos qos;

    private volatile boolean txMode;
    private volatile boolean confirmMode;
    private volatile boolean recovering;
    /**
     * The highest delivery tag the application has seen on any of this channel's lost states: a recovered
     * channel's tags start above it ({@code ChannelConsumers}' tag offset). Written at each loss on the event
     * loop, read when the next state is made.
     */
    private volatile long tagsExposed;

    // guarded by this
    /** Accepted by the lost channel before the loss and not written: written first after recovery. */
    private final ArrayDeque<Held> carried = new ArrayDeque<>();
    /** Made during recovery. */
    private final ArrayDeque<Held> held = new ArrayDeque<>();
    /** The bytes of both queues. */
    private long heldBytes;

    private AmqpException lossCause;
    private CompletableFuture<Void> recovered;
    /** Recovery's event loop: its clock dates the held publishes, its timer expires them. */
    private EventExecutor loop;
    /** Armed for the oldest held publish's deadline while any is held. */
    private ScheduledFuture<?> waitTimer;

    // event loop only
    /** Synchronous methods the application called while the channel recovers. */
    private final HeldCalls calls;
    /** A queue's current name after the recovery (a server-named one declared again has a new one). */
    private UnaryOperator<String> queueNames = UnaryOperator.identity();

    // event loop only: the states lost since the last recovery (a recovery interrupted by another loss adds
    // one); the consumers of each wait in it to be moved to the recovered state
    private final List<ChannelConsumers> lostConsumers = new ArrayList<>(1);

    public ChannelRecovery(RecoverableChannel channel) {
        this.channel = channel;
        this.calls = new HeldCalls(channel::channelNumber);
    }

    public boolean isRecovering() {
        return recovering;
    }

    /**
     * The delivery-tag offset for the channel's next state: every tag the application saw before is at or below
     * it. 0 until the channel is lost. Any thread.
     */
    public long tagsExposed() {
        return tagsExposed;
    }

    // ---- recorded modes and listeners (any thread) ------------------------------------------------------------

    public void qosAccepted(int prefetchSize, int prefetchCount, boolean global) {
        qos = new Qos(prefetchSize, prefetchCount, global);
    }

    public void txSelected() {
        txMode = true;
    }

    /** tx.select was sent (before its select-ok): from now on nothing is carried or held (the class comment). */
    @Override
    public void transactional() {
        txMode = true;
    }

    public void confirmSelected() {
        confirmMode = true;
    }

    public void addReturnListener(ReturnListener l) {
        returnListeners.add(l);
    }

    public void removeReturnListener(ReturnListener l) {
        returnListeners.remove(l);
    }

    public void addWritabilityListener(WritabilityListener l) {
        writabilityListeners.add(l);
    }

    public void removeWritabilityListener(WritabilityListener l) {
        writabilityListeners.remove(l);
    }

    /** A new publisher (a recovered channel): it gets the channel's listeners. Event loop. */
    public void publisherReplaced(Publisher publisher) {
        returnListeners.forEach(publisher::addReturnListener);
        writabilityListeners.forEach(publisher::addWritabilityListener);
    }

    // ---- synchronous methods during recovery (event loop) ------------------------------------------------------

    /**
     * Holds a synchronous method the application called while the channel recovers ({@link HeldCalls}): {@code
     * send} queues it on the channel once it is back, after the publishes held meanwhile; {@code fail} fails it
     * unsent. Also while the held ones are being sent, so that one called from their completions goes behind them.
     * Returns false otherwise: the caller sends it now. Event loop.
     *
     * @param methodKey the method's class and method ids, for the timeout's message
     * @param queue the queue the method names, or null (a server-named one renamed by recovery fails it)
     * @param timeoutNanos how long it may wait for the channel (the connection's RPC timeout)
     */
    public boolean holdCall(
            int methodKey, String queue, long timeoutNanos, Runnable send, Consumer<AmqpException> fail) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        if (!recovering && !calls.sending()) {
            return false;
        }
        EventExecutor on;
        synchronized (this) {
            on = loop;
        }
        calls.hold(on, timeoutNanos, methodKey, queue, send, fail);
        return true;
    }

    // ---- loss ----------------------------------------------------------------------------------------------

    /**
     * The connection was lost with recovery to follow: from now on publishes are held (or refused).
     *
     * @param old the channel's consumers on the lost connection; they move to the new state
     */
    public void lost(ConnectionLostException cause, ChannelConsumers old, ConnectionRecovery connection) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        recordLoss(cause, old, connection);
        connection.channelLost(channel);
    }

    /**
     * The broker closed this channel alone for a reason recovery repairs: as {@link #lost(ConnectionLostException,
     * ChannelConsumers, ConnectionRecovery)}, and the channel is re-opened on the same connection.
     */
    public void lost(ChannelLostException cause, ChannelConsumers old, ConnectionRecovery connection) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        recordLoss(cause, old, connection);
        connection.recoverChannel(channel, cause);
    }

    private void recordLoss(AmqpException cause, ChannelConsumers old, ConnectionRecovery connection) {
        queueNames = connection.topology()::currentName;
        lostConsumers.add(old);
        // max: a state lost during an interrupted recovery may have seen nothing above its own offset
        tagsExposed = Math.max(tagsExposed, old.highestTagExposed());
        synchronized (this) {
            recovering = true;
            lossCause = cause;
            loop = connection.eventLoop();
            if (recovered == null || recovered.isDone()) {
                recovered = new CompletableFuture<>();
            }
        }
    }

    /** The wait timer: fails the held publishes whose own wait is over, re-arms for the next. Event loop. */
    private void expireHeld() {
        List<Held> expired = new ArrayList<>();
        AmqpException cause;
        synchronized (this) {
            waitTimer = null;
            long now = loop.ticker().nanoTime();
            expire(carried, now, expired);
            expire(held, now, expired);
            Held next = carried.isEmpty()
                    ? held.peek()
                    : held.isEmpty() || carried.peek().deadlineNanos - held.peek().deadlineNanos <= 0
                            ? carried.peek()
                            : held.peek();
            if (next != null) {
                armWaitTimer(next.deadlineNanos - now);
            }
            cause = lossCause;
        }
        if (!expired.isEmpty()) {
            LOG.debug(
                    "channel {}: {} publishes held during recovery failed: the channel was not back within the "
                            + "publish wait timeout of each",
                    channel.channelNumber(),
                    expired.size());
        }
        for (Held h : expired) {
            fail(h, cause, "was not back within RecoveryOptions.publishWaitTimeout of the publish");
        }
    }

    /** Guarded by this. Moves the expired head of {@code queue} (its deadlines rise) to {@code expired}. */
    private void expire(ArrayDeque<Held> queue, long now, List<Held> expired) {
        Held h;
        while ((h = queue.peek()) != null && h.deadlineNanos - now <= 0) {
            queue.poll();
            heldBytes -= h.bytes;
            expired.add(h);
        }
    }

    /** Guarded by this. Arms the wait timer unless it is armed already (for an older, so earlier, deadline). */
    private void armWaitTimer(long delayNanos) {
        if (waitTimer == null) {
            waitTimer = loop.schedule(this::expireHeld, delayNanos, TimeUnit.NANOSECONDS);
        }
    }

    /**
     * Holds a publish made while the channel recovers. Returns {@code null} when the channel is not recovering
     * (the caller publishes normally), else the publish's stage (failed at once when refused). Takes the body.
     * Any thread.
     *
     * <p>Its arguments are checked and its names copied as the publisher does before it accepts a publish: a bad
     * one fails now with {@link IllegalArgumentException}, not at the replay (where a {@code publishNoOutcome}
     * could only log it), and a {@code StringBuilder} the caller reuses afterwards does not change the route.
     *
     * @param outcome false for {@code publishNoOutcome}: then a refusal is thrown instead
     */
    public CompletionStage<PublishOutcome> hold(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            boolean outcome) {
        if (!recovering) {
            return null;
        }
        if (body.refCnt() == 0) {
            // not released again (that would throw), as the publisher refuses it
            return refuse(
                    new IllegalArgumentException(
                            "channel " + channel.channelNumber() + ": body was already released (refCnt 0)"),
                    null,
                    outcome);
        }
        BasicProperties props = properties == null ? BasicProperties.EMPTY : properties;
        try {
            ShortString.checkedLength("exchange", exchange);
            ShortString.checkedLength("routing-key", routingKey);
            exchange = ShortString.immutable(exchange);
            routingKey = ShortString.immutable(routingKey);
            checkHeaderFits(props, mandatory);
        } catch (RuntimeException e) {
            return refuse(e, body, outcome);
        }
        CompletableFuture<PublishOutcome> future = new CompletableFuture<>();
        RuntimeException refused = null;
        synchronized (this) {
            if (!recovering) {
                return null;
            }
            RecoveryOptions options = channel.recoveryOptions();
            long bytes = body.readableBytes() + 256L;
            if (options.publishDuringRecovery() == RecoveryOptions.PublishDuringRecovery.FAIL_FAST) {
                refused = notWritten(lossCause, "is being recovered (RecoveryOptions.publishDuringRecovery FAIL_FAST)");
            } else if (txMode) {
                // the broker rolled the transaction back with the connection: the application starts it again once
                // the channel is back, and a publish held for it now would be written into that one unasked
                refused =
                        notWritten(lossCause, "is transactional and being recovered (its transaction was rolled back)");
            } else if (heldBytes > 0 && heldBytes + bytes > channel.maxPendingBytes()) {
                refused = new BackPressureException(
                        "channel " + channel.channelNumber() + " is being recovered and "
                                + "already holds " + heldBytes + " bytes of publishes (PublishOptions.maxPendingBytes "
                                + channel.maxPendingBytes() + "); wait for Channel.whenWritable()",
                        channel.channelNumber());
            } else {
                long wait = options.publishWaitTimeout().toNanos();
                held.add(new Held(
                        exchange,
                        routingKey,
                        mandatory,
                        props,
                        body,
                        outcome ? future : null,
                        bytes,
                        loop.ticker().nanoTime() + wait));
                heldBytes += bytes;
                armWaitTimer(wait);
            }
        }
        return refused == null ? future : refuse(refused, body, outcome);
    }

    /**
     * The content header must fit one frame, as the publisher checks it. The frame-max is the last connection's; the
     * replay checks the recovered one's again.
     */
    private void checkHeaderFits(BasicProperties props, boolean mandatory) {
        ConnectionHandler connection = channel.state().connection();
        Publisher.checkHeaderFits(
                channel.channelNumber(),
                props,
                mandatory && connection.options().publishOptions().correlateReturns(),
                connection.facade().frameMax());
    }

    /**
     * A publish made during recovery and refused: counted as the publisher counts its refusals, {@code body}
     * released (null: not the caller's to release), thrown for {@code publishNoOutcome}.
     */
    private CompletionStage<PublishOutcome> refuse(RuntimeException why, ByteBuf body, boolean outcome) {
        metrics().publishFailed();
        if (body != null) {
            body.release();
        }
        if (!outcome) {
            throw why;
        }
        return CompletableFuture.failedFuture(why);
    }

    /** The connection's counters (one collector across its recoveries). */
    private MetricsCollector metrics() {
        return channel.state().connection().metrics();
    }

    /**
     * Takes over a publish the lost channel had accepted but not written (see the class comment): returns true
     * when it is held to be written after recovery, and then owns {@code body}; false when it is not (the channel
     * is not being recovered, or {@code FAIL_FAST}): the caller still owns it and fails the publish. Event loop.
     *
     * @param future its outcome, {@code null} for {@code publishNoOutcome}
     * @param bytes what it counted against the connection's bound; it counts the same against the hold's
     */
    @Override
    public boolean carry(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            CompletableFuture<PublishOutcome> future,
            long bytes) {
        synchronized (this) {
            if (!recovering
                    || txMode // the lost transaction was rolled back: written after recovery it would join the next
                    || channel.recoveryOptions().publishDuringRecovery()
                            != RecoveryOptions.PublishDuringRecovery.WAIT) {
                return false;
            }
            // no bound check: it was within PublishOptions.maxPendingBytes when accepted, and the hold refuses
            // publishes made during recovery while these fill it
            long wait = channel.recoveryOptions().publishWaitTimeout().toNanos();
            carried.add(new Held(
                    exchange,
                    routingKey,
                    mandatory,
                    properties,
                    body,
                    future,
                    bytes,
                    loop.ticker().nanoTime() + wait));
            heldBytes += bytes;
            armWaitTimer(wait);
            return true;
        }
    }

    /** Completes when the channel is back (for {@code whenWritable}); fails when it never will be. Any thread. */
    public synchronized CompletionStage<Void> whenRecovered() {
        return recovered == null ? CompletableFuture.completedFuture(null) : recovered;
    }

    // ---- restore (event loop) ------------------------------------------------------------------------------

    /** qos, tx.select and confirm.select as they were, in that order, on the recovered channel. */
    public CompletionStage<Void> restoreModes() {
        CompletionStage<Void> done = CompletableFuture.completedFuture(null);
        Qos q = qos;
        if (q != null) {
            done = done.thenCompose(v -> channel.restoreQos(q.prefetchSize, q.prefetchCount, q.global));
        }
        if (txMode) {
            done = done.thenCompose(v -> channel.txSelect());
        }
        if (confirmMode) {
            // through the new publisher: it holds publishes until select-ok, so its numbering starts at 1 with
            // the broker's; nothing of the old channel's numbering survives
            done = done.thenCompose(v -> channel.publisher().confirmSelect(false));
        }
        return done;
    }

    /**
     * The consumers of the lost channel start again on the new one, same tags and options.
     *
     * @param unpausedOnly only those that do not hold reading paused; the others wait for a call without it
     */
    public CompletionStage<Void> restoreConsumers(UnaryOperator<String> queueNames, boolean unpausedOnly) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (ChannelConsumers old : lostConsumers) {
            all.add(channel.consumers()
                    .recoverFrom(old, queueNames, unpausedOnly)
                    .toCompletableFuture());
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    }

    /** Adds the queues of the lost consumers that will start again as exclusive consumers to {@code into}. */
    public void lostExclusiveQueues(java.util.Collection<String> into) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        for (ChannelConsumers old : lostConsumers) {
            old.lostExclusiveQueues(into);
        }
    }

    /** Before the topology is declared again: the lost consumers that will not start again end. */
    public void settleConsumers() {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        for (ChannelConsumers old : lostConsumers) {
            old.settleLost();
        }
    }

    /** Everything is back: held publishes go out in order, then publishing is normal again. */
    public void recovered() {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        // Consumers still waiting here were left for the second pass (they held reading paused) and the channel closed
        // before it (a sibling's basic.consume refused): they will not be started, so they end now.
        for (ChannelConsumers old : lostConsumers) {
            old.endLost(
                    channel.state().isUsable()
                            ? new AmqpException(
                                    "channel " + channel.channelNumber() + " was recovered without this consumer")
                            : channel.state().closedError());
        }
        lostConsumers.clear();
        CompletableFuture<Void> done;
        // The replay runs under the monitor: a publisher that arrives meanwhile waits the few microseconds it
        // takes, then finds recovering false and publishes behind the replayed messages, in order.
        synchronized (this) {
            Held h;
            while ((h = carried.poll()) != null) {
                replay(h);
            }
            while ((h = held.poll()) != null) {
                replay(h);
            }
            heldBytes = 0;
            recovering = false;
            cancelWaitTimer();
            done = recovered;
            recovered = null; // a loss while the held calls go out (their completions run user code) starts afresh
        }
        // behind the replayed publishes, and before anything waiting for the recovery runs (a whenWritable callback
        // calling a method would overtake them)
        calls.sendAll(queueNames);
        if (done != null) {
            done.complete(null);
        }
    }

    private void replay(Held h) {
        if (h.future == null) {
            try {
                channel.publisher().publishNoOutcome(h.exchange, h.routingKey, h.mandatory, h.properties, h.body);
            } catch (RuntimeException e) {
                LOG.debug(
                        "channel {}: a publish held during recovery was refused: {}",
                        channel.channelNumber(),
                        e.toString());
            }
            return;
        }
        channel.publisher()
                .publish(h.exchange, h.routingKey, h.mandatory, h.properties, h.body)
                .whenComplete((outcome, e) -> {
                    if (e == null) {
                        h.future.complete(outcome);
                    } else {
                        h.future.completeExceptionally(e);
                    }
                });
    }

    /** Recovery gave up, or the application closed the channel or connection meanwhile. */
    public void abandon(AmqpException cause) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        List<ChannelConsumers> olds = new ArrayList<>(lostConsumers);
        lostConsumers.clear();
        List<Held> failed;
        CompletableFuture<Void> done;
        synchronized (this) {
            recovering = false;
            failed = new ArrayList<>(carried);
            failed.addAll(held);
            carried.clear();
            held.clear();
            heldBytes = 0;
            cancelWaitTimer();
            done = recovered;
        }
        for (Held h : failed) {
            fail(h, cause, "will not be recovered");
        }
        for (ChannelConsumers old : olds) {
            old.endLost(cause);
        }
        calls.failAll(cause);
        if (done != null) {
            done.completeExceptionally(cause);
        }
    }

    /** Guarded by this. */
    private void cancelWaitTimer() {
        if (waitTimer != null) {
            waitTimer.cancel(false);
            waitTimer = null;
        }
    }

    /** A held publish that will not be written; counted once here, whether made or carried over. */
    private void fail(Held h, AmqpException cause, String why) {
        // counted before its future fails, as the publisher does: whoever the failure wakes sees it counted
        metrics().publishFailed();
        h.body.release();
        if (h.future != null) {
            h.future.completeExceptionally(notWritten(cause, why));
        }
    }

    private PublishNotConfirmedException notWritten(AmqpException cause, String why) {
        return new PublishNotConfirmedException(
                "channel " + channel.channelNumber() + " " + why + "; the message was not published"
                        + (cause == null ? "" : ": " + cause.getMessage()),
                cause,
                channel.channelNumber(),
                false);
    }
}
