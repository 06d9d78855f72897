/**
 * One channel's plumbing on its connection's event loop: the {@link io.warren.impl.channel.ChannelState}
 * (dispatch, close handshake), its RPC queue, content assembly and the names publishes repeat.
 *
 * <p>Uses {@code impl.connection} and {@code impl.metrics}. What it needs of the channel the application holds is
 * {@link io.warren.impl.channel.ChannelHandle}; publishing and consuming plug in through
 * {@link io.warren.impl.channel.MethodHandler} and the close hooks.
 */
package io.warren.impl.channel;
