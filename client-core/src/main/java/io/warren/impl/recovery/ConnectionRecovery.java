package io.warren.impl.recovery;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.AmqpException;
import io.warren.AuthenticationException;
import io.warren.ChannelClosedException;
import io.warren.ChannelLostException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionLostException;
import io.warren.ConnectionOptions;
import io.warren.RecoveryListener;
import io.warren.RecoveryOptions;
import io.warren.codec.base.ReplyCode;
import io.warren.impl.connection.ConnectionHandler;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Automatic recovery of one connection, driven on its event loop without blocking: after a loss, reconnect
 * (with {@link Backoff} across the addresses), re-open the channels with their numbers, restore their modes,
 * declare the recorded topology again, restart the consumers, then let held publishes go.
 *
 * <h2>Phases</h2>
 * <pre>
 *  RUNNING --loss--> CONNECTING --open-ok--> RESTORING --all restored--> RUNNING
 *                      ^   |  attempt failed: backoff    |
 *                      |---+-----------------------------+ lost again while restoring
 *  any phase --application close / gave up--> CLOSED
 * </pre>
 * Every step of a restore belongs to the generation of the loss it answers: a step completing after the new
 * connection was lost in turn finds a newer generation and does nothing.
 *
 * <h2>What is not recovered</h2>
 * An application's close; a refusal that a retry cannot change (403 ACCESS_REFUSED: credentials; 530 NOT_ALLOWED
 * for the virtual host: not found, no access): recovery gives up at once and says why. A 530 that says it will pass
 * (a connection limit, an authorisation backend that did not answer) is retried within
 * {@link RecoveryOptions#maxAttempts} and {@link RecoveryOptions#maxDuration}, as is any other close (541 for a
 * virtual host down on the node). Nor is a connection whose event loop shuts down meanwhile: recovery gives up as
 * when its attempts run out.
 */
public final class ConnectionRecovery {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionRecovery.class);

    /** How far ahead {@link #loopWatch} is armed: it is there to be cancelled, not to run. */
    private static final long LOOP_WATCH_NANOS = TimeUnit.HOURS.toNanos(1);

    /** Opens a new connection for the same facade, on the same event loop. */
    @FunctionalInterface
    public interface Reconnector {
        CompletionStage<? extends RecoverableConnection> reconnect(ConnectionOptions options, EventLoop loop);
    }

    enum Phase {
        RUNNING,
        CONNECTING,
        RESTORING,
        CLOSED
    }

    private final RecoverableConnection connection;
    private final ConnectionOptions options;
    private final RecoveryOptions recovery;
    private final Reconnector reconnector;
    private final EventLoop loop;
    private final Backoff backoff;
    private final TopologyRecorder topology = new TopologyRecorder();
    private final CopyOnWriteArrayList<RecoveryListener> listeners = new CopyOnWriteArrayList<>();

    // any thread (volatile)
    private volatile Phase phase = Phase.RUNNING;

    // event loop only
    private int generation;
    private int attempts;
    private long lostAtNanos;
    /** When the connection was lost, on the event loop's clock (what recovery's timers read). */
    private long lostAtTicks;

    private ConnectionLostException lossCause;
    private Throwable lastFailure;
    /** The backoff's wait for the next attempt. */
    private ScheduledFuture<?> timer;
    /**
     * Armed from the loss until recovery ends, in every phase: a loop that shuts down cancels it, and recovery gives
     * up then. Not the loop closing its sockets: Netty's loop may end without doing so (a shutdown with no quiet
     * period that comes in the middle of a loop round), but it always cancels its timers.
     */
    private final DeadlineTimer loopWatch = new DeadlineTimer(this::watchAgain, this::loopShutDown);

    private final TreeMap<Integer, RecoverableChannel> lost = new TreeMap<>();
    /** Channels a refused basic.consume closed while restoring ({@link #recoversChannelAfter}): re-opened then. */
    private final List<RecoverableChannel> refused = new ArrayList<>();
    /** Channels the broker closed on the running connection, re-opened alone ({@link #recoverChannel}). */
    private final ChannelReopen reopens;

    private final List<Runnable> afterRecovery = new ArrayList<>();

    public ConnectionRecovery(
            RecoverableConnection connection, ConnectionOptions options, Reconnector reconnector, EventLoop loop) {
        this.connection = connection;
        this.options = options;
        this.recovery = options.recovery();
        this.reconnector = reconnector;
        this.loop = loop;
        this.backoff = new Backoff(
                recovery.initialDelay().toNanos(),
                recovery.maxDelay().toNanos(),
                recovery.multiplier(),
                recovery.jitter());
        this.reopens = new ChannelReopen(new ReopenOwner(), connection, loop, recovery, topology);
    }

    public RecoveryOptions options() {
        return recovery;
    }

    /** The event loop recovery runs on; its clock and timers bound the publishes held meanwhile. */
    EventLoop eventLoop() {
        return loop;
    }

    public TopologyRecorder topology() {
        return topology;
    }

    public boolean isRecovering() {
        Phase p = phase;
        return p == Phase.CONNECTING || p == Phase.RESTORING;
    }

    public void addListener(RecoveryListener l) {
        listeners.add(l);
    }

    public void removeListener(RecoveryListener l) {
        listeners.remove(l);
    }

    // ---- loss (event loop) ---------------------------------------------------------------------------------

    /**
     * Whether a close with {@code cause} will be recovered: the connection had opened, the application did not
     * close it, and the client is not shutting down.
     */
    public boolean willRecover(boolean closeRequested) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        return phase != Phase.CLOSED && !closeRequested && !loop.isShuttingDown();
    }

    /** The cause given to channels when the connection is lost with recovery to follow. */
    public ConnectionLostException lossCause(AmqpException cause) {
        if (cause instanceof ConnectionLostException c) {
            return c;
        }
        return new ConnectionLostException(
                "connection to " + connection.address() + " lost; recovering: " + cause.getMessage(), cause);
    }

    /** A channel lost with the connection, to be re-opened. */
    void channelLost(RecoverableChannel channel) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        lost.put(channel.channelNumber(), channel);
    }

    // ---- one channel closed by the broker (event loop) --------------------------------------------------------

    /**
     * Whether the broker's close of a channel is one recovery repairs on the same connection: RabbitMQ's delivery
     * acknowledgement timeout ({@code consumer_timeout}: 406 PRECONDITION_FAILED "delivery acknowledgement on
     * channel N timed out"), after which the application's consumers would otherwise just end; and, while restoring,
     * 403 ACCESS_REFUSED (its queue in another connection's exclusive use, or the lost one's the broker has not dropped
     * yet), 404 NOT_FOUND (its queue gone) or 405 RESOURCE_LOCKED (another connection's exclusive queue) to a
     * consumer's basic.consume: that consumer ends, and the channel is
     * re-opened without it. The same refusal while {@code channel} alone is restored (after the timeout) does the same.
     */
    public boolean recoversChannelAfter(RecoverableChannel channel, ChannelClosedException close) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        if (loop.isShuttingDown()) {
            return false;
        }
        return switch (phase) {
            case RUNNING -> reopens.recoversAfter(channel, close);
            case RESTORING -> ChannelReopen.isRefusedConsume(close);
            default -> false;
        };
    }

    /**
     * The broker closed {@code channel} (its state is closed, its consumers wait in its {@link ChannelRecovery}):
     * re-open it with its number on the current connection once the close is done with, then restore its modes and
     * consumers, as after a connection loss: alone on the running connection ({@link ChannelReopen#recover}), or,
     * while restoring, with the connection's other channels once their consumers are done. Event loop.
     */
    void recoverChannel(RecoverableChannel channel, ChannelLostException cause) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        LOG.warn("channel {} on {}: {}", channel.channelNumber(), connection.address(), cause.getMessage());
        if (phase == Phase.RESTORING) {
            refused.add(channel); // part of the connection's recovery, which re-opens it once its consumers are done
            return;
        }
        reopens.recover(channel, cause);
    }

    private void tellListeners(java.util.function.Consumer<RecoveryListener> event) {
        for (RecoveryListener l : listeners) {
            try {
                event.accept(l);
            } catch (RuntimeException e) {
                LOG.warn("recovery listener failed", e);
            }
        }
    }

    /** What {@link ChannelReopen} may see of this recovery, and no more. Event loop. */
    private final class ReopenOwner implements ChannelReopen.Owner {

        @Override
        public boolean isRunning() {
            return phase == Phase.RUNNING;
        }

        @Override
        public boolean isClosed() {
            return phase == Phase.CLOSED;
        }

        @Override
        public boolean isLost(RecoverableChannel channel) {
            return lost.get(channel.channelNumber()) == channel;
        }

        @Override
        public void channelLost(RecoverableChannel channel) {
            ConnectionRecovery.this.channelLost(channel);
        }

        @Override
        public TopologyRestore topologyRestore(ConnectionHandler handler) {
            return new TopologyRestore(ConnectionRecovery.this, topology, connection, handler, loop, 0);
        }

        @Override
        public void tellListeners(java.util.function.Consumer<RecoveryListener> event) {
            ConnectionRecovery.this.tellListeners(event);
        }
    }

    /** The application closed a channel that was waiting for recovery. */
    public void forget(RecoverableChannel channel) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        lost.remove(channel.channelNumber(), channel);
        reopens.forget(channel);
    }

    /**
     * The connection's socket closed (the current handler's end). Returns true when recovery takes it over (the
     * facade stays alive), false when the connection is closed for good.
     */
    public boolean onClosed(ConnectionClosedException cause, boolean closeRequested) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        if (!willRecover(closeRequested)) {
            if (isRecovering()) {
                if (closeRequested) {
                    giveUp(cause, false);
                } else {
                    // the loop shuts down and closes its sockets: an attempt's, or the one being restored
                    loopShutDown(cause);
                }
            } else {
                // the loop's own shutdown closes this socket (ConnectionHandler's watch): no watch of recovery's needed
                List<RecoverableChannel> metTheClose = new ArrayList<>(lost.values());
                lost.clear();
                phase = Phase.CLOSED; // before the channels' ends and the listeners: what they call sees it closed
                reopens.endChannelsReopened(cause, !closeRequested, metTheClose);
            }
            phase = Phase.CLOSED;
            return false;
        }
        switch (phase) {
            case CONNECTING -> {
                return true; // a failed attempt: its own future reports it
            }
            case RUNNING -> {
                lostAtNanos = System.nanoTime();
                lostAtTicks = loop.ticker().nanoTime();
                attempts = 0;
            }
            default -> {
                // the newest loss bounds the wait for what the connection just lost held exclusively
                lostAtTicks = loop.ticker().nanoTime();
                LOG.info("connection to {} lost again while restoring: {}", connection.address(), cause.getMessage());
            }
        }
        generation++;
        lossCause = lossCause(cause);
        phase = Phase.CONNECTING;
        if (attempts == 0) {
            LOG.info("connection to {} lost, recovering: {}", connection.address(), cause.getMessage());
            for (RecoveryListener l : listeners) {
                try {
                    l.recoveryStarted(connection, lossCause);
                } catch (RuntimeException e) {
                    LOG.warn("recovery listener failed", e);
                }
            }
            loopWatch.arm(loop, LOOP_WATCH_NANOS);
        }
        if (phase == Phase.CONNECTING) { // not given up by a loop that refused the watch
            scheduleAttempt(null);
        }
        return true;
    }

    /**
     * Schedules the next attempt, or gives up (attempts or time run out, the loop shuts down). {@code failed}, the
     * attempt that just failed, is told to the listeners as retried only once the next attempt is scheduled: a
     * failure that turns out to be the last is told once, with {@code willRetry=false}.
     */
    private void scheduleAttempt(Throwable failed) {
        attempts++;
        if (recovery.maxAttempts() > 0 && attempts > recovery.maxAttempts()) {
            giveUp(
                    new ConnectionClosedException(
                            "connection to " + connection.address() + " not recovered after "
                                    + recovery.maxAttempts() + " attempts (RecoveryOptions.maxAttempts); last failure: "
                                    + describe(lastFailure),
                            lastFailure),
                    true);
            return;
        }
        long delay = backoff.delayNanos(attempts);
        if (recovery.maxDuration() != null) {
            long left = lostAtNanos + recovery.maxDuration().toNanos() - System.nanoTime();
            if (left <= 0) {
                giveUp(
                        new ConnectionClosedException(
                                "connection to " + connection.address() + " not recovered within "
                                        + recovery.maxDuration() + " (RecoveryOptions.maxDuration) after "
                                        + (attempts - 1)
                                        + " attempts; last failure: " + describe(lastFailure),
                                lastFailure),
                        true);
                return;
            }
            delay = Math.min(delay, left);
        }
        if (loop.isShuttingDown()) {
            // it cancels its timers as it goes, and may drop this one unrun
            loopShutDown(null);
            return;
        }
        int gen = generation;
        try {
            // a loop that cancels it as it shuts down cancels loopWatch too
            timer = loop.schedule(() -> attempt(gen), delay, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            loopShutDown(e);
            return;
        }
        if (failed != null) {
            tell(failed, true); // on the loop: before the attempt it scheduled can run
        }
    }

    /** {@link #loopWatch} ran (an hour of recovery): armed again while recovery goes on. */
    private void watchAgain() {
        loopWatch.fired();
        if (isRecovering()) {
            loopWatch.arm(loop, LOOP_WATCH_NANOS);
        }
    }

    /**
     * The event loop shuts down: nothing will make the next attempt or finish the restore. Recovery gives up, as when
     * its attempts run out.
     *
     * @param why the loop's refusal, or the close of the socket it closed, or null
     */
    private void loopShutDown(Throwable why) {
        // what is being restored, or an attempt's connection opened meanwhile: the loop may leave it open
        ConnectionHandler current = connection.handler();
        if (current != null && current.isOpen()) {
            current.context().close();
        }
        giveUp(
                new ConnectionClosedException(
                        "connection to " + connection.address() + " not recovered: its event loop shut down"
                                + " while it was being recovered (was the client or its event loop group closed?);"
                                + " last failure: " + describe(lastFailure),
                        why == null ? lastFailure : why),
                true);
    }

    private void attempt(int gen) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        timer = null;
        if (gen != generation || phase != Phase.CONNECTING) {
            return;
        }
        LOG.debug("recovery of the connection to {}: attempt {}", connection.address(), attempts);
        reconnector
                .reconnect(options, loop)
                .whenComplete((c, error) -> loop.execute(() -> {
                    if (gen != generation || phase != Phase.CONNECTING) {
                        if (error == null) {
                            c.handler().closeQuietly(); // closed meanwhile: this connection is not wanted
                        }
                        return;
                    }
                    if (error != null) {
                        attemptFailed(error);
                    } else {
                        restore(gen, c.handler());
                    }
                }));
    }

    private void attemptFailed(Throwable failure) {
        // the connector's stage is a dependent one: its failure comes wrapped
        Throwable error = cause(failure);
        lastFailure = error;
        boolean fatal = isFatal(error);
        LOG.info(
                "recovery of the connection to {}: attempt {} failed{}: {}",
                connection.address(),
                attempts,
                fatal ? " (not retried)" : "",
                describe(error));
        if (fatal) {
            giveUp(error instanceof AmqpException a ? a : new ConnectionClosedException(describe(error), error), true);
            return;
        }
        scheduleAttempt(error);
    }

    /**
     * A refusal a retry cannot change: the broker refused the credentials (403) or does not offer the mechanism, or
     * refused the virtual host (530 NOT_ALLOWED: not found, no access for the user). A 530 whose text says it will
     * pass is retried: RabbitMQ's "...: connection limit (N) is reached" and "..., backend X returned an error"
     * (an authorisation backend, HTTP or LDAP, that did not answer). A virtual host down on this node while it
     * restarts is 541 INTERNAL_ERROR, retried like any close but 403 and 530. Not a credentials provider's failure
     * either (its token endpoint may be down for the same reason the broker was).
     */
    static boolean isFatal(Throwable error) {
        if (error instanceof AuthenticationException) {
            return true;
        }
        if (!(error instanceof ConnectionClosedException c) || !c.initiatedByBroker()) {
            return false;
        }
        if (c.replyCode() == ReplyCode.ACCESS_REFUSED) {
            return true;
        }
        if (c.replyCode() == ReplyCode.NOT_ALLOWED) {
            String text = c.replyText() == null ? "" : c.replyText();
            return !(text.contains(": connection limit (") || text.contains(" returned an error"));
        }
        return false;
    }

    // ---- restore (event loop) ------------------------------------------------------------------------------

    private void restore(int gen, ConnectionHandler handler) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        phase = Phase.RESTORING;
        refused.clear(); // closed on a connection since lost: re-opened with the others
        reopens.forgetAll(); // the same: the connection's recovery has them
        handler.restoring(true);
        LOG.debug(
                "recovery of the connection to {}: connected; restoring {} channels and {}",
                connection.address(),
                lost.size(),
                topology);
        List<RecoverableChannel> channels = new ArrayList<>(lost.values());
        // consumers cancelled while the connection was down end first: the broker deleted an auto-delete queue whose
        // last consumer they were, and the topology restore must not declare it again
        for (RecoverableChannel ch : channels) {
            ch.recovery().settleConsumers();
        }
        List<CompletableFuture<?>> reopened = new ArrayList<>();
        for (RecoverableChannel ch : channels) {
            reopened.add(ChannelReopen.reopenWithModes(ch, handler).exceptionally(e -> channelFailed(gen, ch, e)));
        }
        CompletableFuture.allOf(reopened.toArray(CompletableFuture[]::new))
                .thenCompose(v -> step(
                        gen,
                        () -> recovery.topologyRecovery()
                                ? new TopologyRestore(this, topology, connection, handler, loop, exclusiveDeadline())
                                        .run()
                                : CompletableFuture.completedFuture(null)))
                .thenCompose(v -> step(gen, () -> exclusiveConsumersGone(handler, channels)))
                // consumers holding reading paused last: their deliveries start only when nothing of the
                // restore is left to read but their own consume-oks, and reading stops with the restore
                .thenCompose(v -> step(gen, () -> restoreConsumers(gen, channels, true)))
                .thenCompose(v -> step(gen, () -> restoreConsumers(gen, channels, false)))
                .thenCompose(v -> step(gen, () -> reopenRefused(gen, handler)))
                .whenComplete((v, e) -> {
                    assert loop.inEventLoop() : "connection recovery off the event loop";
                    // consumers still over their high-water mark stop the reading now, not while restoring
                    handler.restoring(false);
                    // not open: lost while restoring, and the loss itself failed the last steps (a consumer's
                    // basic.consume); the handler's close, which runs after its channels', starts the next attempt
                    if (gen != generation || phase != Phase.RESTORING || !handler.isOpen()) {
                        return;
                    }
                    if (e != null) {
                        // the new connection failed under us: its close starts the next attempt
                        LOG.debug(
                                "recovery of the connection to {} interrupted: {}", connection.address(), describe(e));
                        return;
                    }
                    succeeded(channels);
                });
    }

    private CompletionStage<Void> step(int gen, java.util.function.Supplier<CompletionStage<Void>> next) {
        if (gen != generation || phase != Phase.RESTORING) {
            return CompletableFuture.failedFuture(new IllegalStateException("recovery generation " + gen + " is over"));
        }
        return next.get();
    }

    private Void channelFailed(int gen, RecoverableChannel ch, Throwable e) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        if (gen == generation
                && phase == Phase.RESTORING
                && connection.handler().isOpen()) {
            // the connection is fine but this channel could not be restored (its number is over the new
            // channel-max, a mode was refused): it is closed for good, the others go on
            LOG.warn("recovery: channel {} could not be restored: {}", ch.channelNumber(), describe(e));
            lost.remove(ch.channelNumber(), ch);
            AmqpException cause = e instanceof AmqpException a
                    ? a
                    : new AmqpException("channel " + ch.channelNumber() + " could not be recovered: " + describe(e), e);
            ch.abandon(cause);
        }
        return null;
    }

    /**
     * Before exclusive consumers start again: their queues' consumers of the lost connection are gone (see {@link
     * TopologyRestore#consumersGone}), or a basic.consume refused with 403 would end the consumer.
     */
    private CompletionStage<Void> exclusiveConsumersGone(ConnectionHandler handler, List<RecoverableChannel> channels) {
        long deadline = exclusiveDeadline();
        if (deadline == 0) {
            return CompletableFuture.completedFuture(null);
        }
        Set<String> queues = new LinkedHashSet<>();
        for (RecoverableChannel ch : channels) {
            if (lost.get(ch.channelNumber()) == ch && ch.state().isUsable()) {
                ch.recovery().lostExclusiveQueues(queues);
            }
        }
        if (queues.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        // a server-named queue declared again has a new name: nothing of the lost connection consumes from it
        List<String> same =
                queues.stream().filter(q -> topology.currentName(q).equals(q)).toList();
        if (same.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        return new TopologyRestore(this, topology, connection, handler, loop, deadline).consumersGone(same);
    }

    /**
     * Until when, on the event loop's clock, the restore waits for what the lost connection held exclusively
     * ({@link RecoveryOptions#awaitExclusiveRelease}): three heartbeat intervals and a second after the loss, by which
     * the broker's heartbeat check has given up on the old connection. 0: no wait (off, or no heartbeats).
     */
    private long exclusiveDeadline() {
        int heartbeat = connection.heartbeat();
        if (!recovery.awaitExclusiveRelease() || heartbeat <= 0) {
            return 0;
        }
        long deadline = lostAtTicks + TimeUnit.SECONDS.toNanos(3L * heartbeat + 1);
        return deadline == 0 ? 1 : deadline;
    }

    private CompletionStage<Void> restoreConsumers(int gen, List<RecoverableChannel> channels, boolean unpausedOnly) {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (RecoverableChannel ch : channels) {
            if (lost.get(ch.channelNumber()) != ch || !ch.state().isUsable()) {
                continue;
            }
            all.add(reopens.afterClose(ch, ch.recovery().restoreConsumers(topology::currentName, unpausedOnly))
                    .exceptionally(e -> {
                        topologyFailed("consumers of channel " + ch.channelNumber(), e);
                        return null;
                    }));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    }

    /**
     * Re-opens the channels a refused basic.consume closed ({@link #recoversChannelAfter}), with their modes and
     * their other consumers (the refused one has ended), until none is refused: each round ends a consumer. As one
     * re-opened alone ({@link ChannelReopen#restore}): the declares of their auto-delete queues take turns with its.
     */
    private CompletionStage<Void> reopenRefused(int gen, ConnectionHandler handler) {
        if (refused.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        List<RecoverableChannel> again = new ArrayList<>(refused);
        refused.clear();
        List<CompletableFuture<?>> reopened = new ArrayList<>();
        for (RecoverableChannel ch : again) {
            if (lost.get(ch.channelNumber()) != ch) {
                continue; // closed by the application meanwhile
            }
            reopened.add(reopens.restore(ch, handler).exceptionally(e -> channelFailed(gen, ch, e)));
        }
        return CompletableFuture.allOf(reopened.toArray(CompletableFuture[]::new))
                .thenCompose(v -> step(gen, () -> reopenRefused(gen, handler)));
    }

    private void succeeded(List<RecoverableChannel> channels) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        phase = Phase.RUNNING;
        loopWatch.cancel();
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lostAtNanos);
        int tries = attempts;
        attempts = 0;
        lastFailure = null;
        for (RecoverableChannel ch : channels) {
            if (lost.remove(ch.channelNumber(), ch)) {
                ch.recovered();
            }
        }
        connection.recovered();
        LOG.info(
                "connection to {} recovered after {} ms ({} attempt{})",
                connection.address(),
                millis,
                tries,
                tries == 1 ? "" : "s");
        for (RecoveryListener l : listeners) {
            try {
                l.recoverySucceeded(connection);
            } catch (RuntimeException e) {
                LOG.warn("recovery listener failed", e);
            }
        }
        List<Runnable> waiting = new ArrayList<>(afterRecovery);
        afterRecovery.clear();
        waiting.forEach(Runnable::run);
    }

    /** Runs {@code task} once the connection is back (at once when it is not recovering). */
    public void afterRecovery(Runnable task) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        if (isRecovering()) {
            afterRecovery.add(task);
        } else {
            task.run();
        }
    }

    void queueRenamed(String oldName, String newName) {
        tellListeners(l -> l.queueRenamed(connection, oldName, newName));
    }

    void topologyFailed(String entity, Throwable e) {
        LOG.warn(
                "recovery of the connection to {}: {} could not be restored: {}",
                connection.address(),
                entity,
                describe(e));
        tellListeners(l -> l.topologyRecoveryFailed(connection, entity, e));
    }

    // ---- the end -------------------------------------------------------------------------------------------

    /**
     * The application closes the connection while it is being recovered. Returns true when there is no live
     * connection to close (the caller completes the close itself).
     */
    public boolean closeWhileRecovering(ConnectionClosedException cause) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        if (!isRecovering()) {
            return false;
        }
        boolean connecting = phase == Phase.CONNECTING;
        giveUp(cause, false);
        return connecting;
    }

    private void giveUp(AmqpException cause, boolean tell) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        generation++;
        phase = Phase.CLOSED;
        loopWatch.cancel();
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
        List<RecoverableChannel> channels = new ArrayList<>(lost.values());
        lost.clear();
        refused.clear();
        reopens.forgetAll(); // re-opened alone when the connection was lost: in lost too
        for (RecoverableChannel ch : channels) {
            ch.abandon(cause);
        }
        if (tell) {
            LOG.warn("connection to {}: recovery gave up: {}", connection.address(), cause.getMessage());
            tell(cause, false);
            connection.gaveUp(
                    cause instanceof ConnectionClosedException c
                            ? c
                            : new ConnectionClosedException(cause.getMessage(), cause));
        }
        List<Runnable> waiting = new ArrayList<>(afterRecovery);
        afterRecovery.clear();
        waiting.forEach(Runnable::run); // they find the connection closed
    }

    private void tell(Throwable cause, boolean willRetry) {
        for (RecoveryListener l : listeners) {
            try {
                l.recoveryFailed(connection, cause, willRetry);
            } catch (RuntimeException e) {
                LOG.warn("recovery listener failed", e);
            }
        }
    }

    static String describe(Throwable t) {
        if (t == null) {
            return "none";
        }
        Throwable c = cause(t);
        return c.getMessage() == null ? c.toString() : c.getMessage();
    }

    /** What a stage failed with: the cause a dependent stage wraps in a {@code CompletionException}, or itself. */
    static Throwable cause(Throwable failure) {
        return failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause()
                : failure;
    }
}
