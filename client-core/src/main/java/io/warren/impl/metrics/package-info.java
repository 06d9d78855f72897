/**
 * The client's counters: {@link io.warren.impl.metrics.MetricsCollector}, which the hot paths call, and
 * {@link io.warren.impl.metrics.CountingMetrics}, the {@code ClientMetrics} it fills.
 *
 * <p>A leaf room: uses no other room. A consumer's unacknowledged age is read through
 * {@link io.warren.impl.metrics.UnacknowledgedAge}.
 */
package io.warren.impl.metrics;
