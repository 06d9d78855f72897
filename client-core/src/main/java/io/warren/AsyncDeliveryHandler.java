package io.warren;

import java.util.concurrent.CompletionStage;

/**
 * Receives a consumer's deliveries and processes them asynchronously: the returned stage says when the
 * delivery is done. Up to {@link ConsumeOptions#concurrency()} deliveries are in flight at once (called but
 * their stage not yet complete); the next one is handed over when one completes. The method itself runs on the
 * consumer's context, one call at a time and in delivery order (also on an executor with many threads), and should
 * only start the work.
 *
 * <p>Ownership: the delivery is borrowed until the returned stage completes (normally or not); Warren releases
 * it then, unless the handler {@link Delivery#retain() retained} it. A {@code null} stage counts as completed.
 * Settle it ({@link Delivery#ack()}, ...) from any thread, before or after the stage completes.
 *
 * <p>An exception thrown here or a failed stage is logged; the delivery is released and, with manual
 * acknowledgement, left unsettled.
 */
@FunctionalInterface
public interface AsyncDeliveryHandler {

    CompletionStage<?> handle(Delivery delivery);
}
