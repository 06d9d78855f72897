package io.warren.impl.connection;

import io.warren.AmqpException;
import io.warren.codec.Frame;

/**
 * A channel as its connection sees it: a number in the {@link ChannelTable}, the frames read for it, and the
 * connection's end. Implemented by the channel room's per-channel state; the connection knows nothing else of
 * channels. Event loop only.
 */
public interface InboundChannel {

    /** The channel number. */
    int number();

    /** One frame for this channel (ownership taken). */
    void onFrame(Frame frame);

    /** The connection is gone: everything on the channel fails with {@code cause}; nothing is written. */
    void onConnectionClosed(AmqpException cause);
}
