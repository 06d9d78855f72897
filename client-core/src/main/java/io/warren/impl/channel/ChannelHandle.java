package io.warren.impl.channel;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ChannelClosedException;

/**
 * What a {@link ChannelState} tells the channel the application holds (which outlives the state when recovery
 * re-opens the channel on a new connection), and asks of it. Implemented by the client room's channel handle.
 * Event loop.
 */
public interface ChannelHandle extends Channel {

    /** channel.open-ok came. */
    void markOpen();

    /**
     * The channel stops being open; returns whether it was the application's until now (open, or being recovered).
     * Called before anything waiting on the channel is failed.
     */
    boolean stopOpen();

    /** After {@link #stopOpen()} and the failing of what waited: recovery takes over, or the channel ends. */
    void markClosed(AmqpException cause, boolean wasOpen);

    /** The broker closed this open channel: the cause its state closes with. */
    AmqpException brokerCloseCause(ChannelClosedException cause);

    /**
     * Writes the acknowledgements the consumers of this state hold back, so that they go before what is written
     * next (a tx.commit must cover them; the broker would requeue their messages after a channel.close).
     */
    void flushAcknowledgements();
}
