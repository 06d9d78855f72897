/**
 * Warren for Vert.x 5: {@link io.warren.vertx.VertxAmqp} wraps connections and channels with Vert.x futures
 * completed on the caller's context, and {@link io.warren.vertx.DeliveryStream} is a consumer as a
 * {@link io.vertx.core.streams.ReadStream} whose pause / resume / fetch are the consumer's demand. Needs
 * {@code vertx-core}, an optional dependency of Warren.
 */
package io.warren.vertx;
