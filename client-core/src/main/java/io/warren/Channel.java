package io.warren;

import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * An AMQP channel. Thread-safe and non-blocking: synchronous methods (declare, bind, purge, ...) are
 * queued first in, first out on the channel and answered by futures that fail after the RPC timeout;
 * any number may be in flight from any number of threads.
 *
 * <p>Failures: caller input that cannot be sent (a null name, a name over 255 UTF-8 bytes, a value a
 * field table cannot carry) fails the returned stage with {@link IllegalArgumentException} before
 * anything is written. When the broker closes the channel (404 NOT_FOUND, 406 PRECONDITION_FAILED,
 * ...) every pending operation fails with a {@link ChannelClosedException} carrying the broker's reply
 * code, text, class and method; the connection goes on working. After {@link #close()} is called,
 * pending operations fail with the close's cause at once.
 */
public interface Channel {

    /** The channel number, 1..channel-max. */
    int channelNumber();

    Connection connection();

    /** True until the channel starts closing. */
    boolean isOpen();

    /**
     * Completes (normally) once the channel is closed, with the reason: a {@link ChannelClosedException}
     * (the broker's or the application's close) or a {@link ConnectionClosedException}.
     */
    CompletionStage<AmqpException> closeFuture();

    /** Closes the channel with 200 OK and completes on close-ok. Closing a closed channel completes at once. */
    CompletionStage<Void> close();

    CompletionStage<Void> close(int replyCode, String replyText);

    // exchange class

    /** exchange.declare of a non-durable exchange. */
    CompletionStage<Void> exchangeDeclare(String exchange, String type);

    CompletionStage<Void> exchangeDeclare(ExchangeSpec declare);

    CompletionStage<Void> exchangeDelete(String exchange);

    /** exchange.delete; {@code ifUnused} refuses (406) when the exchange has bindings. */
    CompletionStage<Void> exchangeDelete(String exchange, boolean ifUnused, boolean noWait);

    /** exchange.bind: messages routed by {@code source} with {@code routingKey} go to {@code destination}. */
    CompletionStage<Void> exchangeBind(String destination, String source, String routingKey);

    CompletionStage<Void> exchangeBind(
            String destination, String source, String routingKey, Map<String, ?> arguments, boolean noWait);

    CompletionStage<Void> exchangeUnbind(String destination, String source, String routingKey);

    CompletionStage<Void> exchangeUnbind(
            String destination, String source, String routingKey, Map<String, ?> arguments, boolean noWait);

    // queue class

    /** queue.declare of a non-durable, non-exclusive, non-auto-delete queue. */
    CompletionStage<DeclaredQueue> queueDeclare(String queue);

    CompletionStage<DeclaredQueue> queueDeclare(QueueSpec declare);

    CompletionStage<Void> queueBind(String queue, String exchange, String routingKey);

    CompletionStage<Void> queueBind(
            String queue, String exchange, String routingKey, Map<String, ?> arguments, boolean noWait);

    /** queue.unbind (the spec gives it no nowait). */
    CompletionStage<Void> queueUnbind(String queue, String exchange, String routingKey);

    CompletionStage<Void> queueUnbind(String queue, String exchange, String routingKey, Map<String, ?> arguments);

    /** queue.purge; completes with the number of messages purged. */
    CompletionStage<Long> queuePurge(String queue);

    /** queue.purge with nowait: completes once written. */
    CompletionStage<Void> queuePurgeNoWait(String queue);

    /** queue.delete; completes with the number of messages deleted with the queue. */
    CompletionStage<Long> queueDelete(String queue);

    /** queue.delete; {@code ifUnused}/{@code ifEmpty} refuse (406) a queue with consumers / messages. */
    CompletionStage<Long> queueDelete(String queue, boolean ifUnused, boolean ifEmpty);

    /** queue.delete with nowait: completes once written. */
    CompletionStage<Void> queueDeleteNoWait(String queue, boolean ifUnused, boolean ifEmpty);

    // basic class

    /** basic.qos per consumer (RabbitMQ's reading of {@code global=false}). */
    CompletionStage<Void> basicQos(int prefetchCount);

    /**
     * basic.qos. RabbitMQ reads {@code global=false} as a limit per new consumer and {@code global=true}
     * as a limit shared by the channel's consumers; {@code prefetchSize} must be 0 for RabbitMQ. Once called,
     * consumers of this channel that set no prefetch of their own get none ({@link ConsumeOptions#DEFAULT_PREFETCH}
     * is for channels without basic.qos): this one applies. A basic.qos that failed (refused, timed out, cut off by a
     * connection loss) does not count: consumers made after it get the default again.
     */
    CompletionStage<Void> basicQos(int prefetchSize, int prefetchCount, boolean global);

    /**
     * basic.get: completes with the message, or with {@code null} when the queue is empty (basic.get-empty).
     * The caller owns the returned {@link GetResponse} (a {@link Delivery}, with the same accessors and
     * settlement as a consumer's) and must {@link GetResponse#release() release} it.
     */
    CompletionStage<GetResponse> basicGet(String queue, boolean autoAck);

    /**
     * basic.ack, fire and forget (the spec has no reply). Like {@link Delivery#ack()}, it goes through the
     * channel's acknowledgement coalescing: acks may be merged into one basic.ack with {@code multiple=true}
     * where every lower tag is settled, and a tag that is already settled is dropped (with a warning) rather
     * than sent for the broker to close the channel over. Settlements go out before any synchronous method or
     * close called after them.
     *
     * <p>After automatic recovery ({@link RecoveryOptions}) the channel is a new one on the broker, which numbers
     * its deliveries from 1 again. So that a tag from before the loss can never name another message, the tags this
     * channel hands out ({@link Delivery#deliveryTag()}, {@link GetResponse}) continue above every tag it handed out
     * before, as the official Java client's do, and this method takes them as handed out: a tag at or below the
     * highest one seen before the recovery (or any tag while the channel is being recovered) is refused with a
     * {@link StaleDeliveryException} and nothing is sent, since the broker has requeued that message and redelivers
     * it. With {@code multiple=true} a newer tag covers only the recovered channel's deliveries; tag 0 with
     * {@code multiple=true} (every outstanding delivery) covers every delivery this channel has received so far, and
     * is sent as the highest of them (one the broker sent and the channel had not read yet is left unsettled); when
     * none is outstanding nothing is sent, and nothing is logged as a warning.
     * A tag whose delivery {@link #basicRecover} requeued is refused the same way.
     *
     * @throws StaleDeliveryException the tag is from before a connection loss, or its delivery was requeued by
     *         {@link #basicRecover}; nothing is sent
     * @throws ChannelClosedException the channel is closed (the broker requeued its unsettled deliveries with the
     *         close, and carries why it closed); nothing is sent
     * @throws IllegalArgumentException a negative tag, 0 without {@code multiple}, or a tag above the highest this
     *         channel handed out (none of which names a delivery, and the broker would close the channel with 406
     *         PRECONDITION_FAILED); nothing is sent
     */
    void basicAck(long deliveryTag, boolean multiple);

    /**
     * basic.nack, fire and forget; see {@link #basicAck}.
     *
     * @throws StaleDeliveryException the tag is from before a connection loss or a {@link #basicRecover}
     * @throws ChannelClosedException the channel is closed
     * @throws IllegalArgumentException as for {@link #basicAck}
     */
    void basicNack(long deliveryTag, boolean multiple, boolean requeue);

    /**
     * basic.reject, fire and forget; see {@link #basicAck}.
     *
     * @throws StaleDeliveryException the tag is from before a connection loss or a {@link #basicRecover}
     * @throws ChannelClosedException the channel is closed
     * @throws IllegalArgumentException as for {@link #basicAck}
     */
    void basicReject(long deliveryTag, boolean requeue);

    /**
     * basic.recover: the broker requeues every delivery of this channel not yet settled when it reads the method
     * (acknowledged, nacked or rejected), and delivers them again, flagged redelivered, with new delivery tags; the
     * stage completes at recover-ok. Settlements made before this call go ahead of it, also those waiting in the
     * acknowledgement coalescing, and on a transactional channel those waiting with its publishes or for a commit-ok
     * (see {@link #txSelect}): there it waits with them.
     *
     * <p>The broker forgets the tags of what it requeues, and would close the channel (406 PRECONDITION_FAILED
     * unknown delivery tag) for a settlement of one. So once basic.recover is written, a settlement of a manual-ack
     * delivery received before its recover-ok (those that arrive between the two were sent before the broker read
     * it, and are requeued too) is refused and nothing is sent: {@link Delivery#ack()} and friends, and
     * {@link #basicAck} and friends with such a tag, throw {@link StaleDeliveryException}; a settlement made on
     * another thread at the same moment may instead be dropped silently. The channel stays open, and its message
     * comes again: settle the redelivery. A {@code multiple=true} settlement with a tag received after recover-ok
     * covers the redeliveries and later deliveries only (the broker's unsettled ones up to it). Deliveries waiting
     * in a consumer's queue for its handler, or for its demand, are dropped before the handler (counted in
     * {@link ClientMetrics#staleDeliveriesDropped()}): they take none of the consumer's demand and do not count
     * against its prefetch, and the consumer gets the redeliveries instead. noAck deliveries are not affected.
     *
     * <p>{@code requeue} must be true: RabbitMQ answers {@code requeue=false} with 540 NOT_IMPLEMENTED, which closes
     * the connection; the stage fails with {@link IllegalArgumentException} instead and nothing is sent.
     */
    CompletionStage<Void> basicRecover(boolean requeue);

    // consuming

    /**
     * Starts a consumer on {@code queue} (basic.qos first when the options have a prefetch, or for a manual-ack
     * consumer on a channel without {@link #basicQos} the default {@value ConsumeOptions#DEFAULT_PREFETCH}; then
     * basic.consume). Completes with the consumer once the broker answered consume-ok, before any delivery
     * reaches the handler; fails with {@link IllegalArgumentException} for bad options (nothing is sent), or
     * with a {@link ChannelClosedException} when the broker refuses (404 no such queue, 403 exclusive, ...).
     *
     * <p>{@code handler} runs on the consumer's context ({@link ConsumeOptions#executor()}, by default the
     * connection's event loop) and borrows each {@link Delivery}: see {@link DeliveryHandler} for ownership and
     * {@link ConsumerHandle} for flow control and how the consumer ends. The stage completes on the event loop.
     */
    CompletionStage<ConsumerHandle> consume(String queue, ConsumeOptions options, DeliveryHandler handler);

    /** {@link #consume(String, ConsumeOptions, DeliveryHandler)} with the default {@link ConsumeOptions}. */
    default CompletionStage<ConsumerHandle> consume(String queue, DeliveryHandler handler) {
        return consume(queue, new ConsumeOptions(), handler);
    }

    /**
     * As {@link #consume(String, ConsumeOptions, DeliveryHandler)} with a handler that returns a stage: each
     * delivery is borrowed until its stage completes, and up to {@link ConsumeOptions#concurrency()} are in
     * flight at once (see {@link AsyncDeliveryHandler}).
     */
    CompletionStage<ConsumerHandle> consumeAsync(String queue, ConsumeOptions options, AsyncDeliveryHandler handler);

    // tx class

    /**
     * tx.select: puts the channel in transaction mode. Like tx.commit and tx.rollback it reaches the broker in call
     * order with this channel's publishes from the same thread: after the publishes made before it, even those held
     * (connection blocked, socket full), and before those made after it, which wait while it waits for its turn. Its
     * reply is timed ({@link ConnectionOptions#rpcTimeout}) from when it goes to the channel's queue of synchronous
     * methods, so not while it waits behind held publishes (a blocked connection, say).
     *
     * <p>Settlements (acks, nacks, rejects) on a transactional channel keep the same order with its publishes and tx
     * methods, so a commit covers the settlements made before it and none made after. Publishes and settlements made
     * after a tx.commit are written once its commit-ok has come: RabbitMQ closes the whole connection (504) over any
     * command on a channel while it commits. So an application may publish, settle and commit without waiting for
     * each commit's stage.
     *
     * <p>A connection loss rolls the transaction back: a transactional channel that is recovered holds no publish
     * across it (those not yet written, and those made while it recovers, fail as not written), and the application
     * publishes and commits again once it is back.
     */
    CompletionStage<Void> txSelect();

    /**
     * tx.commit: commits the publishes and settlements made on this channel before it and none made after; those wait
     * for its commit-ok (see {@link #txSelect}). A commit that times out once written may still be committing at the
     * broker, which accepts nothing on the channel but its close until it answers: the channel is closed, the stage
     * fails with {@link RpcTimeoutException}, and what waited fails as not written. Whether the transaction committed
     * is unknown.
     */
    CompletionStage<Void> txCommit();

    /** tx.rollback: discards the publishes made on this channel since the last commit or rollback. */
    CompletionStage<Void> txRollback();

    // confirm class

    /**
     * confirm.select: puts the channel in publisher-confirm mode. From then on every publish's stage completes
     * on the broker's basic.ack ({@link PublishOutcome#CONFIRMED}, or {@link PublishOutcome.Status#RETURNED}
     * for a mandatory publish the broker returned), fails on basic.nack ({@link PublishNackedException}) or
     * when the channel or connection closes first ({@link PublishNotConfirmedException}, retryable).
     * Publishes made after this call are held until the broker answers, so their sequence numbers match the
     * broker's. At most {@link PublishOptions#maxOutstandingConfirms()} are on the wire unconfirmed; the
     * rest wait in the client ({@link #isWritable()} is false meanwhile).
     */
    CompletionStage<Void> confirmSelect();

    CompletionStage<Void> confirmSelect(boolean noWait);

    // publishing

    /**
     * basic.publish of {@code body} to {@code exchange} with {@code routingKey}, from any thread, without
     * blocking and without copying the body.
     *
     * <p><b>Ownership of {@code body}:</b> the caller's reference passes to Warren at the call, whatever
     * happens. Warren releases it once its bytes are written to the socket, or when the publish fails (refused,
     * channel closed, connection lost). Do not modify, reuse or release it afterwards; to publish the same bytes
     * again pass {@code body.retainedSlice()} (not a duplicate: a handler such as TLS may append the next write
     * into a buffer's spare capacity, which a duplicate shares with its origin). The buffer object itself may be
     * written to the socket (its reader index moves). A pooled buffer allocated on a Netty thread costs no
     * garbage (on other threads Netty's pooled allocator recycles nothing).
     *
     * <p>Order: publishes from one thread reach the broker in call order; the frames of one message are never
     * interleaved with another's. Writes from many threads are handed to the event loop in batches and
     * flushed once per batch.
     *
     * <p>The stage completes on the event loop: without confirm mode with {@link PublishOutcome#SENT} once the
     * frames are written to the socket; in confirm mode see {@link #confirmSelect()}. A publish the calling thread
     * wrote to the socket itself (the connection idle, nothing queued before it) completes {@code SENT} on that thread
     * before {@code publish} returns, so a callback attached to it runs at once on the caller's thread. It fails with
     * {@link IllegalArgumentException} (an exchange or routing key over 255 bytes, a body already released),
     * {@link BackPressureException}
     * (over {@link PublishOptions#maxPendingBytes()}), {@link ConnectionBlockedException} (blocked, policy
     * FAIL), {@link ChannelClosedException} (the channel is closed, or closed before the publish was written
     * without confirms), or {@link PublishNotConfirmedException} (confirm mode: the channel closed before the
     * confirm).
     *
     * @param exchange the exchange, "" for the default exchange; a {@code String}, or a
     *                 {@link io.warren.codec.content.ShortString} encoded once for a hot path
     * @param routingKey the routing key, as {@code exchange}
     * @param mandatory ask the broker to return the message (basic.return) when no queue takes it; see
     *                  {@link #addReturnListener}
     * @param properties the message properties; {@code null} for none
     * @param body the body; ownership passes to Warren (see above)
     */
    CompletionStage<PublishOutcome> publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            io.warren.codec.content.BasicProperties properties,
            io.netty.buffer.ByteBuf body);

    /**
     * As {@link #publish(CharSequence, CharSequence, boolean, io.warren.codec.content.BasicProperties,
     * io.netty.buffer.ByteBuf)} with the array wrapped, not copied. The array may still be read after this method
     * returns (while the message waits for the event loop, a full socket, or a held confirm window): do not modify
     * it until the stage completes. A caller that fills one array again for each message must pass a copy (or wait
     * for the stage first).
     */
    CompletionStage<PublishOutcome> publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            io.warren.codec.content.BasicProperties properties,
            byte[] body);

    /**
     * As {@link #publish(CharSequence, CharSequence, boolean, io.warren.codec.content.BasicProperties,
     * io.netty.buffer.ByteBuf)} with the buffer's remaining bytes wrapped, not copied (its position does not
     * move): do not modify them until the stage completes.
     */
    CompletionStage<PublishOutcome> publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            io.warren.codec.content.BasicProperties properties,
            java.nio.ByteBuffer body);

    /**
     * Fire and forget: as {@link #publish(CharSequence, CharSequence, boolean, io.warren.codec.content.BasicProperties,
     * io.netty.buffer.ByteBuf)} (same ownership of {@code body}) without an outcome, so nothing is allocated per
     * message. In confirm mode the publish still counts in the confirm window; a nack or a lost confirm is only
     * logged (debug). A refusal is thrown on the caller's thread, the body released: the exceptions the stage
     * of {@code publish} would fail with.
     */
    void publishNoOutcome(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            io.warren.codec.content.BasicProperties properties,
            io.netty.buffer.ByteBuf body);

    /**
     * True when a publish now is written at once: the socket's outbound buffer and the client's queue of
     * publishes are below Netty's write-buffer high-water mark, the broker has not blocked the connection, and
     * in confirm mode the confirm window has room. Publishing while false is allowed (the message is queued or
     * held, within {@link PublishOptions#maxPendingBytes()}); a publisher that waits for {@link #whenWritable()}
     * instead keeps memory at a few high-water marks. Any thread, never blocks.
     */
    boolean isWritable();

    /**
     * Completes (on the event loop) once {@link #isWritable()} is true, at once when it is true at the call. Fails if
     * the channel closes. A stage already waiting may complete some time after the channel turned writable: when
     * several channels of one connection wait, the connection wakes them in turns, as many as its room for their
     * publishes holds, so that large publishers do not all wake to find it unwritable again. Stages of one channel
     * are not completed in the order they were asked for.
     */
    CompletionStage<Void> whenWritable();

    /** Adds a listener told (on the event loop) when {@link #isWritable()} changes. */
    void addWritabilityListener(WritabilityListener listener);

    void removeWritabilityListener(WritabilityListener listener);

    /** Adds a listener for messages the broker returns (basic.return of mandatory publishes no queue took). */
    void addReturnListener(ReturnListener listener);

    void removeReturnListener(ReturnListener listener);
}
