/**
 * Consuming: each channel's {@link io.warren.impl.consume.ChannelConsumers}, the consumers, deliveries, their
 * settlement and acknowledgement coalescing, and basic.get.
 *
 * <p>Uses {@code impl.channel}, {@code impl.connection}, {@code impl.metrics} and {@code impl.queue}. What it needs
 * of the channel the application holds is {@link io.warren.impl.consume.ConsumerHost}; topology recovery counts
 * consumers through {@link io.warren.impl.consume.QueueConsumerCounts}.
 */
package io.warren.impl.consume;
