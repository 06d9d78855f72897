package io.warren.impl.recovery;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpException;
import io.warren.ChannelLostException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionLostException;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.ReturnListener;
import io.warren.WritabilityListener;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.consume.ChannelConsumers;
import io.warren.impl.publish.PublishCarryOver;
import io.warren.impl.publish.Publisher;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * What one channel needs to survive the loss of its connection: the modes to restore (qos, tx, confirm), the
 * listeners to move to each new {@link Publisher}, what the application calls on it while it is being recovered, and
 * the consumers of the lost states, which wait to be moved to the new one. One per {@link RecoverableChannel}, for
 * its whole life.
 *
 * <h2>What the channel holds while it recovers</h2>
 * Publishes ({@link HeldPublishes}, under {@link RecoveryOptions.PublishDuringRecovery#WAIT}) and synchronous methods
 * ({@link HeldCalls}) made while the channel recovers are held, each in its place in one order, the order in which
 * they reach the event loop: from one thread, the order of the calls. Once the channel, its modes, the topology and
 * the consumers are back they go to the channel in that order, publishes to its publisher and methods to its RPC
 * queue, so they reach the wire as they would have on an open channel: a publish made after a declare goes after it.
 * What is called while they go (from the completions they run) is held too and goes behind them; then the channel
 * holds nothing any more and calls go straight to it. Each fails when its own wait is over, and all fail when the
 * channel will not be recovered or the event loop shuts down.
 *
 * <p>Publishes the lost channel had accepted but not written (held by its confirm window or a blocked connection,
 * or still queued for the event loop) are {@linkplain #carry carried} over under {@code WAIT}, each taking its place
 * as the event loop hands it over: those the channel held at the loss, those still queued when their turn comes, so
 * each goes before what its thread called after it. A transactional
 * channel (tx.select) holds and carries no publish: the broker rolled its transaction back with the connection, so
 * its publishes fail as not written and the application publishes and commits again once the channel is back
 * (written after recovery they would join a transaction the application did not mean).
 */
public final class ChannelRecovery implements PublishCarryOver {

    private record Qos(int prefetchSize, int prefetchCount, boolean global) {}

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
     * From the loss until what the channel held is sent (or failed): what is called meanwhile is held. Written on
     * the event loop, after {@code recovering} at a loss, so that a caller who sees it set sees the loss.
     */
    private volatile boolean holding;
    /**
     * The highest delivery tag the application has seen on any of this channel's lost states: a recovered
     * channel's tags start above it ({@code ChannelConsumers}' tag offset). Written at each loss on the event
     * loop, read when the next state is made.
     */
    private volatile long tagsExposed;

    // guarded by this
    private CompletableFuture<Void> recovered;

    /** Publishes made while the channel recovers and those carried over from the lost channel (any thread). */
    private final HeldPublishes publishes;

    // event loop only
    /** Synchronous methods the application called while the channel recovers. */
    private final HeldCalls calls;
    /** The next place in the order of what is held (publishes and methods share it). */
    private long nextPlace;
    /** Recovery's event loop: its clock and timers bound what is held. */
    private EventExecutor loop;
    /** A queue's current name after the recovery (a server-named one declared again has a new one). */
    private UnaryOperator<String> queueNames = UnaryOperator.identity();

    // event loop only: the states lost since the last recovery (a recovery interrupted by another loss adds
    // one); the consumers of each wait in it to be moved to the recovered state
    private final List<ChannelConsumers> lostConsumers = new ArrayList<>(1);

    public ChannelRecovery(RecoverableChannel channel) {
        this.channel = channel;
        this.publishes = new HeldPublishes(channel, this::place);
        this.calls = new HeldCalls(channel::channelNumber);
    }

    public boolean isRecovering() {
        return recovering;
    }

    /** Whether what is called on the channel now is held (see the class comment). Any thread. */
    public boolean isHolding() {
        return holding;
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

    @Override
    public boolean wouldCarry() {
        RecoveryOptions o = channel.recoveryOptions();
        return o.enabled() && !txMode && o.publishDuringRecovery() == RecoveryOptions.PublishDuringRecovery.WAIT;
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

    // ---- what is held (see the class comment) -------------------------------------------------------------------

    /** The next place in the order of what is held, or -1 when the channel holds nothing any more. Event loop. */
    private long place() {
        return holding ? nextPlace++ : -1;
    }

    /**
     * Holds a synchronous method the application called while the channel holds ({@link HeldCalls}): {@code send}
     * queues it on the channel once it is back, in its place among the held publishes and methods; {@code fail} fails
     * it unsent. Returns false when the channel holds nothing: the caller sends it now. Event loop.
     *
     * @param methodKey the method's class and method ids, for the timeout's message
     * @param queue the queue the method names, or null (a server-named one renamed by recovery fails it)
     * @param timeoutNanos how long it may wait for the channel (the connection's RPC timeout)
     */
    public boolean holdCall(
            int methodKey, String queue, long timeoutNanos, Runnable send, Consumer<AmqpException> fail) {
        OutboundPath outbound = channel.state().outbound();
        assert outbound.inEventLoop() : "channel recovery off the event loop";
        if (!holding) {
            return false;
        }
        if (outbound.defersLoopWrites()) {
            // behind what the loop queued before it (a publish made inside the loss): its place after theirs
            outbound.deferBehindCaller(new OutboundPath.DiscardableTask() {
                @Override
                public void run() {
                    long place = place();
                    if (place < 0) {
                        send.run(); // the channel holds nothing any more: sent now, as it would have been
                    } else {
                        calls.hold(loop, place, timeoutNanos, methodKey, queue, send, fail);
                    }
                }

                @Override
                public void discard(Throwable cause) {
                    fail.accept(new ConnectionClosedException(
                            "the connection's event loop shut down while the channel was being recovered", cause));
                }
            });
            return true;
        }
        calls.hold(loop, place(), timeoutNanos, methodKey, queue, send, fail);
        return true;
    }

    /**
     * Holds a publish made while the channel holds ({@link HeldPublishes#hold}). Returns {@code null} when it holds
     * nothing (the caller publishes normally), else the publish's stage, failed at once when refused ({@code
     * FAIL_FAST}, a transactional channel, the bound). Takes the body unless it returns null. Any thread.
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
        if (!holding) {
            return null;
        }
        String refusal = null;
        if (recovering) {
            if (channel.recoveryOptions().publishDuringRecovery() == RecoveryOptions.PublishDuringRecovery.FAIL_FAST) {
                refusal = "is being recovered (RecoveryOptions.publishDuringRecovery FAIL_FAST)";
            } else if (txMode) {
                // the broker rolled the transaction back with the connection: the application starts it again once
                // the channel is back, and a publish held for it now would be written into that one unasked
                refusal = "is transactional and being recovered (its transaction was rolled back)";
            }
        }
        return publishes.hold(exchange, routingKey, mandatory, properties, body, outcome, refusal);
    }

    /**
     * Takes over a publish the lost channel had accepted but not written (see the class comment): returns true
     * when it is held to be written after recovery, and then owns {@code body}; false when it is not (the channel
     * is not being recovered, is transactional, or {@code FAIL_FAST}): the caller still owns it and fails the
     * publish. Event loop.
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
        if (!recovering
                || txMode // the lost transaction was rolled back: written after recovery it would join the next
                || channel.recoveryOptions().publishDuringRecovery() != RecoveryOptions.PublishDuringRecovery.WAIT) {
            return false;
        }
        publishes.carry(exchange, routingKey, mandatory, properties, body, future, bytes);
        return true;
    }

    /** Completes when the channel is back (for {@code whenWritable}); fails when it never will be. Any thread. */
    public synchronized CompletionStage<Void> whenRecovered() {
        return recovered == null ? CompletableFuture.completedFuture(null) : recovered;
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
        loop = connection.eventLoop();
        publishes.lost(cause, loop);
        synchronized (this) {
            recovering = true;
            if (recovered == null || recovered.isDone()) {
                recovered = new CompletableFuture<>();
            }
        }
        holding = true;
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

    /** Adds the queues of the lost consumers that will start again to {@code into}. */
    public void lostQueues(java.util.Collection<String> into) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        for (ChannelConsumers old : lostConsumers) {
            old.lostQueues(into);
        }
    }

    /** Before the topology is declared again: the lost consumers that will not start again end. */
    public void settleConsumers() {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        for (ChannelConsumers old : lostConsumers) {
            old.settleLost();
        }
    }

    /** Everything is back: what the channel held goes out in its order, then calls go straight to the channel. */
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
        synchronized (this) {
            recovering = false;
            done = recovered;
            recovered = null; // a loss while the held ones go out (their completions run user code) starts afresh
        }
        // before anything waiting for the recovery runs (a whenWritable callback calling a method would overtake them)
        sendHeld();
        if (done != null) {
            done.complete(null);
        }
    }

    /**
     * Sends what the channel holds, publishes and methods by their places, those held while this runs (from the
     * completions it runs) included: they go behind. A loss meanwhile stops it: the rest waits for that recovery.
     */
    private void sendHeld() {
        while (!recovering) {
            long p = publishes.nextPlace();
            long c = calls.nextPlace();
            if (p < c) {
                publishes.sendNext();
            } else if (c < p) {
                calls.sendNext(queueNames, (send, left) -> channel.state().callWithin(left, send));
            } else {
                holding = false; // both empty
                return;
            }
        }
    }

    /** Recovery gave up, or the application closed the channel or connection meanwhile. */
    public void abandon(AmqpException cause) {
        assert channel.state().outbound().inEventLoop() : "channel recovery off the event loop";
        List<ChannelConsumers> olds = new ArrayList<>(lostConsumers);
        lostConsumers.clear();
        CompletableFuture<Void> done;
        synchronized (this) {
            recovering = false;
            done = recovered;
        }
        holding = false;
        publishes.failAll(cause, "will not be recovered");
        for (ChannelConsumers old : olds) {
            old.endLost(cause);
        }
        calls.failAll(cause);
        if (done != null) {
            done.completeExceptionally(cause);
        }
    }
}
