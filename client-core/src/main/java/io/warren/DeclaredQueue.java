package io.warren;

/**
 * The broker's answer to queue.declare: the queue's name (chosen by the broker for a server-named
 * queue), and how many messages are ready and how many consumers it has.
 */
public record DeclaredQueue(String queue, long messageCount, long consumerCount) {}
