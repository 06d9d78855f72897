package io.warren.impl.channel;

import io.warren.codec.Frame;

/**
 * Handles one kind of inbound method on one channel: the extension seam through which publishing
 * (basic.ack, basic.nack, basic.return) and consuming (basic.deliver, basic.cancel) plug into a channel
 * without changing {@link ChannelState}. Register with {@link ChannelState#register(int, MethodHandler)}.
 *
 * <p>Runs on the connection's event loop and must not block. The handler owns {@code frame} and
 * releases it exactly once (or hands it on, e.g. to {@link ChannelState#beginContent} for a method that
 * carries content).
 */
@FunctionalInterface
public interface MethodHandler {

    void onMethod(ChannelState channel, Frame frame);
}
