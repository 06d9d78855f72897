/**
 * The inbound message queue between a connection's event loop and a consumer's context.
 *
 * <p>{@link io.warren.impl.queue.InboundMessageQueue} is what the consumer dispatcher uses: it takes
 * messages on the producer loop, delivers them in the consumer context under demand
 * ({@code pause/resume/fetch}), tells the producer loop to stop and start reading at the water marks,
 * and disposes of what is still queued on close. {@link io.warren.impl.queue.HandoffQueue} is the
 * lock-free engine under it, returning bit sets and calling no executor, for callers that schedule
 * drains themselves.
 *
 * <p>A leaf room: uses no other room.
 */
package io.warren.impl.queue;
