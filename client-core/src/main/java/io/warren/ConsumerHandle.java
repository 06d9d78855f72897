package io.warren;

import java.util.concurrent.CompletionStage;

/**
 * A consumer started with {@link Channel#consume}: its tag, its flow control and its end. Thread-safe; nothing
 * here blocks.
 *
 * <h2>Flow control</h2>
 * Deliveries wait in the consumer's queue until its handler takes them. {@link #pause()} stops handing them
 * over (the one being handled finishes), {@link #resume()} hands them over again, {@link #fetch(long)} hands
 * over a given number more. Whatever the acknowledgement mode, when the queue reaches its high-water mark
 * ({@link ConsumeOptions#waterMarks}) the connection stops reading from the socket until every such queue
 * of the connection is below its low-water mark again, so memory stays bounded whatever the consumer's speed and
 * whatever the broker sends; the other consumers of the connection wait meanwhile. How often that happens depends
 * on the acknowledgement mode:
 * <ul>
 *   <li>manual acknowledgement with a prefetch ({@link ConsumeOptions#prefetch}, by default
 *       {@value ConsumeOptions#DEFAULT_PREFETCH}): the broker stops at the prefetch, below the default marks, so
 *       reading never stops and the other consumers go on. A broker that sends more is not trusted: it is stopped
 *       at the mark, logged once, and counted ({@link ClientMetrics#deliveriesBeyondPrefetch()});</li>
 *   <li>noAck (or {@code prefetch(0)}): the broker sends as fast as it can; when the queue reaches its high-water
 *       mark the connection stops reading from the socket until every such queue of the connection is below its
 *       low-water mark again, so memory stays bounded whatever the consumer's speed; the other consumers of the
 *       connection, and the replies to every channel's methods, wait meanwhile. A short wait is back-pressure; a
 *       long one is not: RabbitMQ closes a connection whose socket it cannot write to for long (seen here after
 *       about 20 s), and with noAck what it had sent and the client had not read is lost. Recovery then
 *       reconnects. Do not leave a noAck consumer paused: use manual acknowledgement with a prefetch for a
 *       consumer that pauses, or {@link ConsumeOptions#dropOverflow(boolean)}, with which a full queue drops what
 *       arrives (counted in {@link ClientMetrics#overflowDeliveriesDropped()}) and the connection goes on reading.</li>
 * </ul>
 *
 * <h2>End</h2>
 * {@link #endFuture()} completes once, when the consumer ends: {@link #cancel()} (completes with
 * {@code null}), a broker-sent basic.cancel ({@link ConsumerCancelledException}: queue deleted, ...), the
 * channel's close ({@link ChannelClosedException}), the connection's ({@link ConnectionClosedException}), or
 * the consumer's executor refusing to run its deliveries ({@link AmqpException}: the consumer is cancelled).
 * Deliveries still queued then are released without reaching the handler; on an open channel, with manual
 * acknowledgement, they are rejected with requeue so that the broker delivers them again. With noAck they are
 * lost: the broker forgot them when it sent them.
 *
 * <h2>Recovery</h2>
 * A consumer survives the loss of its connection, and the broker's close of its channel for the consumer
 * acknowledgement timeout ({@link RecoveryListener#channelRecoveryStarted}): the same handle goes on, with its tag
 * and options. Manual-ack deliveries still queued from before are dropped, not handed to the handler: the broker
 * requeued them and delivers them again. A consumer whose basic.consume the broker refuses then with 403 ACCESS_REFUSED
 * (its queue in another connection's exclusive use) or 404 NOT_FOUND (its queue deleted meanwhile, and not declared
 * again by recovery) ends with the refusal; its channel is opened again without it. The broker deletes an auto-delete
 * queue whose consumers were all on a channel it closed for the acknowledgement timeout: with topology recovery on,
 * the channel's recovery declares it again (with its bindings; a server-named one under a new name, told to
 * {@link RecoveryListener#queueRenamed}) before its consumers start again; its messages went with it.
 */
public interface ConsumerHandle {

    /** The consumer tag: the one asked for, or the one the broker generated. */
    String consumerTag();

    /** The queue consumed from. */
    String queue();

    Channel channel();

    /** True until the consumer ends. */
    boolean isActive();

    /** Stops handing deliveries to the handler after the ones already handed over. Any thread. */
    void pause();

    /** Hands deliveries to the handler again, without limit. Any thread. */
    void resume();

    /** Hands {@code count} more deliveries to the handler (added to what is left; {@code Long.MAX_VALUE} = no limit). */
    void fetch(long count);

    /**
     * The number of deliveries received and waiting for the handler. Exact when called by the handler (unless a
     * synchronous handler runs in parallel, {@code concurrency > 1}), where the delivery in hand is not counted, so
     * with manual acknowledgement it never exceeds a prefetch the broker keeps to; from other threads a snapshot.
     */
    long queued();

    /**
     * Cancels the consumer (basic.cancel); completes on cancel-ok. Deliveries that arrive before cancel-ok
     * are handed to the handler as usual. Cancelling an ended consumer completes at once.
     */
    CompletionStage<Void> cancel();

    /**
     * Completes (normally, never exceptionally) when the consumer ends, with the reason: {@code null} after
     * {@link #cancel()}, else the exception that ended it.
     */
    CompletionStage<AmqpException> endFuture();
}
