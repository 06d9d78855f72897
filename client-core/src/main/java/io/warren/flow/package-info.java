/**
 * Reactive Streams without a dependency: {@link io.warren.flow.DeliveryPublisher} is a consumer as a
 * {@link java.util.concurrent.Flow.Publisher} whose {@code request(n)} is the consumer's demand, bounded towards
 * the broker by its prefetch. Reactor ({@code JdkFlowAdapter}), Mutiny and Akka Streams take a
 * {@code Flow.Publisher} as it is.
 */
package io.warren.flow;
