/**
 * One AMQP connection on its event loop: transport, handshake and SASL ({@code sasl}), heartbeats, secret refresh,
 * the {@link io.warren.impl.connection.ConnectionHandler} that demultiplexes frames to channels by number (the
 * channel table), method names, requests and replies, and the {@link io.warren.impl.connection.OutboundPath},
 * the connection's single writer, with its publish buffers.
 *
 * <p>The bottom room: uses the codec, {@code impl.metrics} and {@code impl.queue} only. What it needs of a channel
 * is {@link io.warren.impl.connection.InboundChannel}; of the connection the application holds,
 * {@link io.warren.impl.connection.ConnectionEvents}.
 */
package io.warren.impl.connection;
