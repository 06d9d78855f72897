/**
 * Publishing: the {@link io.warren.impl.publish.Publisher} of each channel, its tasks and frames, the
 * connection's {@link io.warren.impl.publish.PublishFlow} (back-pressure), publisher confirms and returns, and the
 * order of the tx methods with the publishes ({@code TxSequencer}).
 *
 * <p>Uses {@code impl.channel}, {@code impl.connection} and {@code impl.metrics}. Publishes a lost channel did not
 * write go to its recovery through {@link io.warren.impl.publish.PublishCarryOver}.
 */
package io.warren.impl.publish;
