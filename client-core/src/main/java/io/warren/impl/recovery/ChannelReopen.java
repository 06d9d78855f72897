package io.warren.impl.recovery;

import io.netty.channel.EventLoop;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ChannelLostException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionLostException;
import io.warren.RecoveryListener;
import io.warren.RecoveryOptions;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.method.MethodIds;
import io.warren.impl.connection.ConnectionHandler;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The recovery of one channel on a connection that is still running: RabbitMQ closed it for the delivery
 * acknowledgement timeout ({@code consumer_timeout}: 406 PRECONDITION_FAILED), and it is re-opened with its number,
 * its modes, the auto-delete queues its consumers read and its consumers, as after a connection loss. A restored
 * consumer's refused basic.consume closes the channel again, and the next round re-opens it without that consumer.
 *
 * <p>{@link ConnectionRecovery} owns it and calls it; it reads the connection's recovery only through {@link Owner}:
 * the phase, the channels lost with the connection, the topology restore and the listeners. A connection lost while a
 * channel is re-opened here hands the channel over to the connection's recovery. The restore of one closed channel
 * ({@link #restore}) is the connection's recovery's too, for the channels a refused consumer closed while it restores.
 * Event loop only.
 */
final class ChannelReopen {

    // under the connection's recovery's name, as before this class was split from it: log settings keep applying
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionRecovery.class);

    /** What the re-opens need of the connection's recovery, which owns the phase and the lost channels. Event loop. */
    interface Owner {

        /** Whether the connection runs: it was not lost, or it is recovered. */
        boolean isRunning();

        /**
         * Whether the connection is closed for good: the application closed it, its event loop shut down, or its
         * recovery gave up.
         */
        boolean isClosed();

        /** Whether {@code channel} waits among the channels lost with the connection. */
        boolean isLost(RecoverableChannel channel);

        /** {@code channel} is the connection's recovery's now: lost with the connection, to be re-opened by it. */
        void channelLost(RecoverableChannel channel);

        /**
         * A restore of the recorded topology on {@code handler}'s connection that waits for nothing the lost
         * connection held exclusively.
         */
        TopologyRestore topologyRestore(ConnectionHandler handler);

        /** Tells each listener {@code event}; one that throws is logged and the others are still told. */
        void tellListeners(Consumer<RecoveryListener> event);
    }

    private final Owner owner;
    private final RecoverableConnection connection;
    private final EventLoop loop;
    private final RecoveryOptions recovery;
    private final TopologyRecorder topology;

    // event loop only
    /**
     * Channels being re-opened on the running connection ({@link #recover}), and the round: a restored consumer's
     * refused basic.consume closes the channel again, and the next round re-opens it without that consumer.
     */
    private final Map<RecoverableChannel, Integer> reopening = new IdentityHashMap<>();
    /** The last channel's {@link #autoDeleteQueuesGone}: the next one waits for it. */
    private CompletableFuture<Void> declaringAgain = CompletableFuture.completedFuture(null);

    ChannelReopen(
            Owner owner,
            RecoverableConnection connection,
            EventLoop loop,
            RecoveryOptions recovery,
            TopologyRecorder topology) {
        this.owner = owner;
        this.connection = connection;
        this.loop = loop;
        this.recovery = recovery;
        this.topology = topology;
    }

    // ---- which closes are repaired -------------------------------------------------------------------------

    /**
     * Whether the broker's close of {@code channel} on the running connection is one this class repairs: the
     * delivery acknowledgement timeout, or a refused basic.consume of the restore of {@code channel}, re-opened here.
     */
    boolean recoversAfter(RecoverableChannel channel, ChannelClosedException close) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        return isConsumerTimeout(close) || (reopening.containsKey(channel) && isRefusedConsume(close));
    }

    /**
     * 403 (the queue in exclusive use), 404 (the queue gone: deleted while the connection was down, and not in the
     * recorded topology) or 405 (an exclusive queue another connection holds: declared by it, or the lost connection's
     * not yet dropped) to basic.consume. While restoring, every basic.consume on the application's channels is
     * recovery's: what the application calls meanwhile is held until the end.
     */
    static boolean isRefusedConsume(ChannelClosedException close) {
        int code = close.replyCode();
        return close.initiatedByBroker()
                && (code == ReplyCode.ACCESS_REFUSED
                        || code == ReplyCode.NOT_FOUND
                        || code == ReplyCode.RESOURCE_LOCKED)
                && close.classId() == MethodIds.CLASS_BASIC
                && close.methodId() == MethodIds.methodId(MethodIds.BASIC_CONSUME);
    }

    static boolean isConsumerTimeout(ChannelClosedException close) {
        String text = close.replyText();
        return close.initiatedByBroker()
                && close.replyCode() == ReplyCode.PRECONDITION_FAILED
                && text != null
                && text.contains("acknowledgement")
                && text.contains("timed out");
    }

    // ---- the re-open, by rounds ----------------------------------------------------------------------------

    /**
     * The broker closed {@code channel} on the running connection (its state is closed, its consumers wait in its
     * {@link ChannelRecovery}): re-open it with its number once the close is done with, then restore its modes and
     * consumers, as after a connection loss. A connection lost meanwhile takes the channel over.
     */
    void recover(RecoverableChannel channel, ChannelLostException cause) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        Integer last = reopening.get(channel);
        if (last == null) { // else a consumer of its restore was refused: the listener heard of this recovery
            owner.tellListeners(l -> l.channelRecoveryStarted(channel, cause));
        }
        int round = last == null ? 1 : last + 1;
        reopening.put(channel, round);
        // after the close: its number is freed once the broker's channel.close is answered
        loop.execute(() -> reopen(channel, round));
    }

    private void reopen(RecoverableChannel channel, int round) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        if (!channel.recovery().isRecovering()) {
            reopening.remove(channel);
            return; // the application closed it meanwhile
        }
        ConnectionHandler handler = connection.handler();
        if (!owner.isRunning() || !handler.isOpen()) {
            reopening.remove(channel);
            // the connection went before the channel was re-opened: the connection's recovery restores it, or
            // ends it with the rest
            if (owner.isClosed()) {
                channel.abandon(closedMeanwhile(channel));
            } else {
                owner.channelLost(channel);
            }
            return;
        }
        restore(channel, handler).whenComplete((v, e) -> {
            assert loop.inEventLoop() : "connection recovery off the event loop";
            // a refused consumer closed it again and the next round has it, or the connection's recovery has
            Integer now = reopening.get(channel);
            if (now == null || now != round) {
                return;
            }
            if (!channel.recovery().isRecovering()) {
                reopening.remove(channel);
                return; // closed by the application
            }
            if (channelTakenOver(channel, handler)) {
                // the connection went meanwhile, and its channels are failed before it learns whether it
                // recovers: left here, the channel is taken over by its recovery or ended by its end (onClosed)
                return;
            }
            reopening.remove(channel);
            if (e != null) {
                channelNotRecovered(channel, e);
                return;
            }
            if (!channel.state().isUsable()) {
                // the broker closed it meanwhile for a reason recovery does not repair: its consumers' restore
                // ended with their failure, not the channel's
                channelNotRecovered(channel, channel.state().closedError());
                return;
            }
            channel.recovered();
            LOG.info("channel {} on {} recovered", channel.channelNumber(), connection.address());
            owner.tellListeners(l -> l.channelRecoverySucceeded(channel));
        });
    }

    // ---- the restore of one closed channel (also the connection's recovery's) --------------------------------

    /**
     * Re-opens {@code channel}, closed on {@code handler}'s live connection, with its modes, then declares again the
     * auto-delete queues that went with its consumers ({@link #autoDeleteQueuesGone}), then restores the consumers.
     */
    CompletableFuture<Void> restore(RecoverableChannel channel, ConnectionHandler handler) {
        return reopenWithModes(channel, handler)
                .thenCompose(v -> autoDeleteQueuesGone(channel, handler))
                .thenCompose(
                        v -> afterClose(channel, channel.recovery().restoreConsumers(topology::currentName, false)));
    }

    /** Opens {@code ch} again with its number on {@code handler}, then restores its qos, confirm and tx modes. */
    static CompletableFuture<Void> reopenWithModes(RecoverableChannel ch, ConnectionHandler handler) {
        CompletableFuture<Channel> f = new CompletableFuture<>();
        ch.reopen(handler, f);
        return f.thenCompose(c -> ch.recovery().restoreModes()).toCompletableFuture();
    }

    /**
     * {@code consumers}, the restore of {@code ch}'s consumers; when a close of the channel failed them, only once that
     * close has run to its end: it fails them before it reaches recovery, which learns then whether to re-open the
     * channel ({@link ConnectionRecovery#recoverChannel}).
     */
    CompletableFuture<Void> afterClose(RecoverableChannel ch, CompletionStage<Void> consumers) {
        return consumers
                .toCompletableFuture()
                .thenCompose(v -> ch.state().isUsable()
                        ? CompletableFuture.completedFuture(null)
                        : CompletableFuture.runAsync(() -> {}, loop));
    }

    /**
     * The broker's close of {@code channel} ended its consumers, and an auto-delete queue whose last consumers they were
     * went with them: declared again (with its bindings) before they start again, as a connection's recovery would.
     * One channel's at a time: two channels whose consumers share a server-named queue must not each declare a new one.
     */
    private CompletionStage<Void> autoDeleteQueuesGone(RecoverableChannel channel, ConnectionHandler handler) {
        if (!recovery.topologyRecovery()) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> done = declaringAgain
                .handle((v, e) -> (Void) null)
                .thenCompose(v -> {
                    Set<String> read = new LinkedHashSet<>(); // once, however many consumers
                    channel.recovery().lostQueues(read);
                    if (!handler.isOpen()) { // lost meanwhile: the restore stops here, the connection's recovery has it
                        return CompletableFuture.failedFuture(
                                new ConnectionLostException("connection to " + connection.address() + " lost", null));
                    }
                    if (read.isEmpty()) {
                        return CompletableFuture.completedFuture(null);
                    }
                    return owner.topologyRestore(handler).declareIfGone(read, channel.recovery()::settleConsumers);
                });
        declaringAgain = done;
        return done;
    }

    // ---- the end -------------------------------------------------------------------------------------------

    /** The channel was re-opened (or not) but could not be restored on a live connection: it ends for good. */
    private void channelNotRecovered(RecoverableChannel channel, Throwable failure) {
        Throwable why = ConnectionRecovery.cause(failure);
        LOG.warn(
                "channel {} on {} could not be recovered: {}",
                channel.channelNumber(),
                connection.address(),
                ConnectionRecovery.describe(why));
        channel.abandon(
                why instanceof AmqpException a
                        ? a
                        : new AmqpException(
                                "channel " + channel.channelNumber() + " could not be recovered: "
                                        + ConnectionRecovery.describe(why),
                                why));
        if (channel.state().isUsable()) {
            channel.close(); // opened, but a mode was refused: not left half restored
        }
        owner.tellListeners(l -> l.channelRecoveryFailed(channel, why));
    }

    private ConnectionClosedException closedMeanwhile(RecoverableChannel channel) {
        return new ConnectionClosedException(
                "connection to " + connection.address() + " closed before channel " + channel.channelNumber()
                        + " was recovered",
                null);
    }

    /** Whether the connection was lost while {@code channel} was being restored on {@code handler}. */
    private boolean channelTakenOver(RecoverableChannel channel, ConnectionHandler handler) {
        return connection.handler() != handler || !handler.isOpen() || !owner.isRunning() || owner.isLost(channel);
    }

    /**
     * The running connection closed for good (the application closed it, or its event loop shut down) while channels
     * were being re-opened on it alone ({@link #recover}): they end with {@code cause}, as the channels of a
     * connection's recovery that gives up, and so do {@code metTheClose}, those handed to the connection's recovery
     * when they met the closing connection before their channel.open ({@link #reopen}); the listeners hear it unless
     * the application closed it ({@code tell}).
     */
    void endChannelsReopened(
            ConnectionClosedException cause, boolean tell, Collection<RecoverableChannel> metTheClose) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        Set<RecoverableChannel> ending = Collections.newSetFromMap(new IdentityHashMap<>());
        ending.addAll(reopening.keySet());
        ending.addAll(metTheClose);
        reopening.clear();
        for (RecoverableChannel ch : ending) {
            if (tell) {
                channelNotRecovered(ch, cause);
            } else {
                ch.abandon(cause);
            }
        }
    }

    /** The application closed a channel that was waiting for recovery. */
    void forget(RecoverableChannel channel) {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        reopening.remove(channel);
    }

    /**
     * The connection's recovery has every channel re-opened here, among its lost channels: it restores them (the
     * connection was lost), or ends them (it gave up).
     */
    void forgetAll() {
        assert loop.inEventLoop() : "connection recovery off the event loop";
        reopening.clear();
    }
}
