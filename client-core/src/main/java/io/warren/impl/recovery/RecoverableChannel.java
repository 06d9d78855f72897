package io.warren.impl.recovery;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.RecoveryOptions;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.consume.ChannelConsumers;
import io.warren.impl.publish.Publisher;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * What recovery needs of the channel the application holds, which lives on across connections: its state,
 * publisher and consumers of the moment, and a way to open it again. Implemented by the client room's channel
 * handle.
 */
public interface RecoverableChannel extends Channel {

    /** What the channel needs to survive a connection loss. */
    ChannelRecovery recovery();

    /** The channel's state on its current connection. */
    ChannelState state();

    /** The channel's publisher on its current connection. */
    Publisher publisher();

    /** The channel's consumers on its current connection. */
    ChannelConsumers consumers();

    /** The recovery options of the connection; defaults when recovery is off. */
    RecoveryOptions recoveryOptions();

    /** The connection's bound on publish bytes not yet written (also bounds publishes held during recovery). */
    long maxPendingBytes();

    /**
     * This channel is recovery's own, for declaring the topology again: its declares, binds and deletes are not
     * recorded, and it is not recovered when its connection goes.
     */
    void recoverysOwn();

    /**
     * basic.qos as recovery restores it on the re-opened channel: sent at once, where the application's own would
     * be held until the end of recovery.
     */
    CompletionStage<Void> restoreQos(int prefetchSize, int prefetchCount, boolean global);

    /** Everything is back after a recovery. Event loop. */
    void recovered();

    /** This channel will not be recovered. Event loop. */
    void abandon(AmqpException cause);

    /**
     * Opens this channel again, with its number, on {@code handler}'s connection: a new state takes it over;
     * {@code result} completes on channel.open-ok. Event loop.
     */
    void reopen(ConnectionHandler handler, CompletableFuture<Channel> result);
}
