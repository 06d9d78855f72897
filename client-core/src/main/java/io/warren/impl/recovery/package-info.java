/**
 * Automatic recovery: of a connection ({@link io.warren.impl.recovery.ConnectionRecovery}), of each channel
 * ({@link io.warren.impl.recovery.ChannelRecovery}), and of the recorded topology.
 *
 * <p>Uses {@code impl.publish}, {@code impl.consume}, {@code impl.channel}, {@code impl.connection} and
 * {@code impl.metrics}. What it needs of the handles the application holds is
 * {@link io.warren.impl.recovery.RecoverableConnection} and {@link io.warren.impl.recovery.RecoverableChannel}.
 */
package io.warren.impl.recovery;
