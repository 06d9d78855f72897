package io.warren.impl;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.AmqpException;
import io.warren.AsyncDeliveryHandler;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ChannelLostException;
import io.warren.Connection;
import io.warren.ConnectionLostException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.DeclaredQueue;
import io.warren.DeliveryHandler;
import io.warren.ExchangeSpec;
import io.warren.GetResponse;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RecoveryOptions;
import io.warren.ReturnListener;
import io.warren.WritabilityListener;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.base.Utf8;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.ChannelHandle;
import io.warren.impl.channel.ChannelRpc;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.connection.HandOver;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.connection.Replies;
import io.warren.impl.connection.Requests;
import io.warren.impl.consume.ChannelConsumers;
import io.warren.impl.consume.ConsumerHost;
import io.warren.impl.consume.GetRequest;
import io.warren.impl.consume.QueueConsumerCounts;
import io.warren.impl.consume.RecoverRequest;
import io.warren.impl.publish.Publisher;
import io.warren.impl.recovery.ChannelRecovery;
import io.warren.impl.recovery.ConnectionRecovery;
import io.warren.impl.recovery.RecoverableChannel;
import io.warren.impl.recovery.TopologyRecorder;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Supplier;

/**
 * The public face of a channel. Every method may be called from any thread: it validates and encodes the
 * request on the caller's thread (so bad input fails the returned stage before anything is written, and
 * encoding work is spread over the callers), then hands the request to the event loop through the
 * connection's {@link OutboundPath}, which keeps one thread's calls in order. Futures complete on the event
 * loop: code chained to them without an executor must not block.
 */
public final class ChannelImpl implements ChannelHandle, ConsumerHost, RecoverableChannel {

    private final int number;
    /** The connection the application holds: the same across recoveries. */
    private final ConnectionImpl connection;
    /** What the channel needs to survive a connection loss (modes, listeners, publishes made meanwhile). */
    private final ChannelRecovery recovery = new ChannelRecovery(this);

    // any thread (volatile); replaced on the event loop when the channel is recovered on a new connection
    private volatile ChannelState state;
    private volatile Publisher publisher;
    private volatile ChannelConsumers consumers;

    // any thread (volatile)
    private volatile boolean open;
    /**
     * True for the channel recovery declares the topology again on: what it declares is not recorded twice, and it
     * is not recovered itself (nobody else holds it).
     */
    private volatile boolean recoverysOwn;
    /**
     * The broker accepted a basic.qos of the application's, or one is on its way ({@link #qosPending}): consumers then
     * get no default prefetch. One that failed does not count: the channel has none, and recovery restores none.
     */
    private volatile boolean qosAccepted;

    private volatile int qosPending;
    private static final AtomicIntegerFieldUpdater<ChannelImpl> QOS_PENDING =
            AtomicIntegerFieldUpdater.newUpdater(ChannelImpl.class, "qosPending");

    private final CompletableFuture<AmqpException> closeFuture = new CompletableFuture<>();

    private ChannelImpl(ConnectionImpl connection, ChannelState state) {
        this.connection = connection;
        this.state = state;
        this.number = state.number();
        this.publisher = new Publisher(state, this, recovery);
        this.consumers = new ChannelConsumers(state, this, recovery.tagsExposed());
    }

    /**
     * Opens a new channel on a free number of {@code handler}'s connection; {@code result} completes with it on
     * channel.open-ok. Returns the channel, or null when no number was free ({@code result} failed).
     */
    static ChannelImpl open(ConnectionImpl connection, ConnectionHandler handler, CompletableFuture<Channel> result) {
        assert handler.outbound().inEventLoop() : "channel opened off the event loop";
        ChannelImpl[] made = new ChannelImpl[1];
        ChannelState state = handler.allocateChannel(
                n -> new ChannelState(
                        n,
                        handler,
                        handler.rpcTimeoutNanos(),
                        handler.options().maxInboundMessageBodySize(),
                        s -> made[0] = new ChannelImpl(connection, s)),
                result);
        if (state == null) {
            return null;
        }
        state.open(result);
        return made[0];
    }

    /**
     * Recovery: this channel again on {@code handler}'s connection, with its number; {@code result} completes on
     * channel.open-ok.
     */
    @Override
    public void reopen(ConnectionHandler handler, CompletableFuture<Channel> result) {
        assert handler.outbound().inEventLoop() : "channel opened off the event loop";
        ChannelState newState = handler.allocateChannel(
                number,
                k -> new ChannelState(
                        k,
                        handler,
                        handler.rpcTimeoutNanos(),
                        handler.options().maxInboundMessageBodySize(),
                        this::attach),
                result);
        if (newState != null) {
            newState.open(result);
        }
    }

    /**
     * Recovery: {@code newState}, on the new connection, takes this channel over; a new publisher comes with it
     * (its confirm numbering starts again) and gets the channel's listeners, and new consumers whose delivery tags
     * start above those the application saw.
     */
    private ChannelImpl attach(ChannelState newState) {
        assert newState.outbound().inEventLoop() : "channel taken over off the event loop";
        this.state = newState;
        Publisher p = new Publisher(newState, this, recovery);
        this.publisher = p;
        recovery.publisherReplaced(p);
        this.consumers = new ChannelConsumers(newState, this, recovery.tagsExposed());
        return this;
    }

    @Override
    public ChannelRecovery recovery() {
        return recovery;
    }

    /** The recovery options of the connection; defaults when recovery is off. */
    @Override
    public RecoveryOptions recoveryOptions() {
        ConnectionRecovery r = connectionRecovery();
        return r == null ? new RecoveryOptions().enabled(false) : r.options();
    }

    /** The connection's bound on publish bytes not yet written (also bounds publishes held during recovery). */
    @Override
    public long maxPendingBytes() {
        return state.connection().options().publishOptions().maxPendingBytes();
    }

    private ConnectionRecovery connectionRecovery() {
        return connection.recovery();
    }

    @Override
    public void recoverysOwn() {
        this.recoverysOwn = true;
    }

    /**
     * Whether the application asked for the channel's own basic.qos ({@link #basicQos}): then it bounds the
     * consumers that set no prefetch, instead of {@link ConsumeOptions#DEFAULT_PREFETCH}. Any thread.
     */
    @Override
    public boolean hasOwnQos() {
        return qosAccepted || qosPending > 0;
    }

    /** Everything is back after a recovery. */
    @Override
    public void recovered() {
        assert state.outbound().inEventLoop() : "channel state off the event loop";
        recovery.recovered();
    }

    /** This channel will not be recovered (recovery gave up, or the application closed it meanwhile). */
    @Override
    public void abandon(AmqpException cause) {
        assert state.outbound().inEventLoop() : "channel state off the event loop";
        recovery.abandon(cause);
        open = false;
        closeFuture.complete(cause);
    }

    /** Runs {@code record} with the recorder when {@code stage} succeeds, if declarations are recorded. */
    private <T> CompletionStage<T> recorded(
            CompletionStage<T> stage, java.util.function.BiConsumer<TopologyRecorder, T> record) {
        ConnectionRecovery r = recoverysOwn ? null : connectionRecovery();
        if (r == null || !r.options().topologyRecovery()) {
            return stage;
        }
        TopologyRecorder topology = r.topology();
        return stage.whenComplete((v, e) -> {
            if (e == null) {
                record.accept(topology, v);
            }
        });
    }

    /** Publishing, confirms and returns for this channel. */
    @Override
    public Publisher publisher() {
        return publisher;
    }

    /** The consuming side on the current connection. */
    @Override
    public ChannelConsumers consumers() {
        return consumers;
    }

    @Override
    public void flushAcknowledgements() {
        consumers.flush();
    }

    @Override
    public QueueConsumerCounts consumerCounts() {
        ConnectionRecovery r = connectionRecovery();
        return r == null || !r.options().topologyRecovery() ? null : r.topology();
    }

    @Override
    public ChannelState state() {
        return state;
    }

    @Override
    public void markOpen() {
        open = true;
    }

    /**
     * The channel stops being open; returns whether it was the application's until now (open, or being recovered).
     * Called before anything waiting on the channel is failed, so that whoever a failed future wakes finds
     * {@link #isOpen()} false.
     */
    @Override
    public boolean stopOpen() {
        assert state.outbound().inEventLoop() : "channel state off the event loop";
        // a channel lost again while being recovered is still the application's: it waits for the next attempt
        boolean wasOpen = open || recovery.isRecovering();
        open = false;
        return wasOpen;
    }

    /** After {@link #stopOpen()} and the failing of what waited: recovery takes over, or the channel ends. */
    @Override
    public void markClosed(AmqpException cause, boolean wasOpen) {
        assert state.outbound().inEventLoop() : "channel state off the event loop";
        ConnectionRecovery r = recoverysOwn ? null : connectionRecovery();
        if (wasOpen && r != null && cause instanceof ConnectionLostException lost) {
            // recovery follows: the channel lives on (closeFuture stays pending), publishes made meanwhile wait
            recovery.lost(lost, consumers, r);
            return;
        }
        if (wasOpen && r != null && cause instanceof ChannelLostException lost) {
            // the broker closed this channel alone and it is re-opened on the same connection
            recovery.lost(lost, consumers, r);
            return;
        }
        closeFuture.complete(cause);
    }

    /**
     * The broker closed this open channel: the cause its state closes with. A {@link ChannelLostException} when
     * recovery re-opens the channel (the consumer acknowledgement timeout), else {@code cause}.
     */
    @Override
    public AmqpException brokerCloseCause(ChannelClosedException cause) {
        assert state.outbound().inEventLoop() : "channel state off the event loop";
        ConnectionRecovery r = recoverysOwn ? null : connectionRecovery();
        if (!open || r == null || !r.recoversChannelAfter(this, cause)) {
            return cause;
        }
        return new ChannelLostException(cause.getMessage() + "; the channel is being recovered", cause);
    }

    @Override
    public int channelNumber() {
        return number;
    }

    @Override
    public Connection connection() {
        return connection;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public CompletionStage<AmqpException> closeFuture() {
        return closeFuture;
    }

    @Override
    public CompletionStage<Void> close() {
        return close(ReplyCode.REPLY_SUCCESS, "OK");
    }

    @Override
    public CompletionStage<Void> close(int replyCode, String replyText) {
        CompletableFuture<Void> result = new CompletableFuture<>();
        if (replyCode < 0 || replyCode > 0xFFFF || replyText == null) {
            result.completeExceptionally(
                    new IllegalArgumentException("replyCode must be within 0..65535 and replyText not null"));
            return result;
        }
        try {
            Utf8.encodedLength("replyText", replyText); // refused here: the close must not fail half-way on the loop
        } catch (IllegalArgumentException e) {
            result.completeExceptionally(e);
            return result;
        }
        HandOver.run(
                state.outbound(),
                () -> {
                    if (recovery.isRecovering()) {
                        // nothing to close on the wire: the channel only waits for recovery, which forgets it
                        ConnectionRecovery r = connectionRecovery();
                        if (r != null) {
                            r.forget(this);
                        }
                        abandon(new ChannelClosedException(
                                "channel " + number + " closed by the application",
                                null,
                                replyCode,
                                replyText,
                                0,
                                0,
                                number,
                                false));
                        if (state.isUsable()) {
                            // already re-opened on the new connection (recovery was restoring): close it there too
                            state.close(replyCode, replyText, null, result);
                        } else {
                            result.complete(null);
                        }
                        return;
                    }
                    state.close(replyCode, replyText, null, result);
                },
                null,
                result);
        return result;
    }

    // ---- exchange ----------------------------------------------------------------------------------------

    @Override
    public CompletionStage<Void> exchangeDeclare(String exchange, String type) {
        if (exchange == null || type == null) {
            return invalid("exchange and type must not be null");
        }
        return exchangeDeclare(ExchangeSpec.of(exchange, type));
    }

    @Override
    public CompletionStage<Void> exchangeDeclare(ExchangeSpec d) {
        if (d == null) {
            return invalid("declare must not be null");
        }
        if (!d.passive() && d.type().isEmpty()) {
            // the broker answers an empty type with 503 COMMAND_INVALID, which closes the connection
            return invalid("exchange " + d.exchange() + ": the type must not be empty (direct, fanout, topic, ...)");
        }
        ExchangeSpec copy = d.passive()
                ? null
                : ExchangeSpec.of(d.exchange(), d.type())
                        .durable(d.durable())
                        .autoDelete(d.autoDelete())
                        .internal(d.internal())
                        .arguments(d.arguments());
        return recorded(
                voidRpc(
                        MethodIds.EXCHANGE_DECLARE,
                        MethodIds.EXCHANGE_DECLARE_OK,
                        d.noWait(),
                        () -> Requests.exchangeDeclare(state.alloc(), number, d)),
                (t, v) -> {
                    if (copy != null) {
                        t.exchangeDeclared(copy);
                    }
                });
    }

    @Override
    public CompletionStage<Void> exchangeDelete(String exchange) {
        return exchangeDelete(exchange, false, false);
    }

    @Override
    public CompletionStage<Void> exchangeDelete(String exchange, boolean ifUnused, boolean noWait) {
        return recorded(
                voidRpc(
                        MethodIds.EXCHANGE_DELETE,
                        MethodIds.EXCHANGE_DELETE_OK,
                        noWait,
                        () -> Requests.exchangeDelete(state.alloc(), number, exchange, ifUnused, noWait)),
                (t, v) -> t.exchangeDeleted(exchange));
    }

    @Override
    public CompletionStage<Void> exchangeBind(String destination, String source, String routingKey) {
        return exchangeBind(destination, source, routingKey, Map.of(), false);
    }

    @Override
    public CompletionStage<Void> exchangeBind(
            String destination, String source, String routingKey, Map<String, ?> arguments, boolean noWait) {
        return recorded(
                voidRpc(
                        MethodIds.EXCHANGE_BIND,
                        MethodIds.EXCHANGE_BIND_OK,
                        noWait,
                        () -> Requests.exchangeBind(
                                state.alloc(), number, true, destination, source, routingKey, arguments, noWait)),
                (t, v) -> t.bound(true, destination, source, routingKey, arguments));
    }

    @Override
    public CompletionStage<Void> exchangeUnbind(String destination, String source, String routingKey) {
        return exchangeUnbind(destination, source, routingKey, Map.of(), false);
    }

    @Override
    public CompletionStage<Void> exchangeUnbind(
            String destination, String source, String routingKey, Map<String, ?> arguments, boolean noWait) {
        return recorded(
                voidRpc(
                        MethodIds.EXCHANGE_UNBIND,
                        MethodIds.EXCHANGE_UNBIND_OK,
                        noWait,
                        () -> Requests.exchangeBind(
                                state.alloc(), number, false, destination, source, routingKey, arguments, noWait)),
                (t, v) -> t.unbound(true, destination, source, routingKey, arguments));
    }

    // ---- queue -------------------------------------------------------------------------------------------

    @Override
    public CompletionStage<DeclaredQueue> queueDeclare(String queue) {
        if (queue == null) {
            return invalid("queue must not be null");
        }
        return queueDeclare(QueueSpec.named(queue));
    }

    @Override
    public CompletionStage<DeclaredQueue> queueDeclare(QueueSpec d) {
        if (d == null) {
            return invalid("declare must not be null");
        }
        if (d.noWait() && d.queue().isEmpty()) {
            return invalid("a server-named queue cannot be declared with nowait: its name comes in declare-ok");
        }
        // a snapshot: the application may change its QueueSpec before the reply comes
        QueueSpec copy = (d.passive() ? QueueSpec.passive(d.queue()) : QueueSpec.named(d.queue()))
                .durable(d.durable())
                .exclusive(d.exclusive())
                .autoDelete(d.autoDelete())
                .arguments(d.arguments());
        if (d.noWait()) {
            return recorded(
                    rpc(
                            d.queue(),
                            MethodIds.QUEUE_DECLARE,
                            -1,
                            true,
                            new DeclaredQueue(d.queue(), -1, -1),
                            () -> Requests.queueDeclare(state.alloc(), number, d),
                            null),
                    (t, ok) -> t.queueDeclared(copy, ok.queue()));
        }
        return recorded(
                rpc(
                        d.queue(),
                        MethodIds.QUEUE_DECLARE,
                        MethodIds.QUEUE_DECLARE_OK,
                        false,
                        null,
                        () -> Requests.queueDeclare(state.alloc(), number, d),
                        (frame, f) -> f.complete(Replies.queueDeclareOk(frame))),
                (t, ok) -> t.queueDeclared(copy, ok.queue()));
    }

    @Override
    public CompletionStage<Void> queueBind(String queue, String exchange, String routingKey) {
        return queueBind(queue, exchange, routingKey, Map.of(), false);
    }

    @Override
    public CompletionStage<Void> queueBind(
            String queue, String exchange, String routingKey, Map<String, ?> arguments, boolean noWait) {
        return recorded(
                voidRpc(
                        queue,
                        MethodIds.QUEUE_BIND,
                        MethodIds.QUEUE_BIND_OK,
                        noWait,
                        () -> Requests.queueBind(
                                state.alloc(), number, queue, exchange, routingKey, arguments, noWait)),
                (t, v) -> t.bound(false, queue, exchange, routingKey, arguments));
    }

    @Override
    public CompletionStage<Void> queueUnbind(String queue, String exchange, String routingKey) {
        return queueUnbind(queue, exchange, routingKey, Map.of());
    }

    @Override
    public CompletionStage<Void> queueUnbind(
            String queue, String exchange, String routingKey, Map<String, ?> arguments) {
        return recorded(
                voidRpc(
                        queue,
                        MethodIds.QUEUE_UNBIND,
                        MethodIds.QUEUE_UNBIND_OK,
                        false,
                        () -> Requests.queueUnbind(state.alloc(), number, queue, exchange, routingKey, arguments)),
                (t, v) -> t.unbound(false, queue, exchange, routingKey, arguments));
    }

    @Override
    public CompletionStage<Long> queuePurge(String queue) {
        return rpc(
                queue,
                MethodIds.QUEUE_PURGE,
                MethodIds.QUEUE_PURGE_OK,
                false,
                null,
                () -> Requests.queuePurge(state.alloc(), number, queue, false),
                (frame, f) -> f.complete(Replies.messageCount(frame)));
    }

    @Override
    public CompletionStage<Void> queuePurgeNoWait(String queue) {
        return voidRpc(
                queue, MethodIds.QUEUE_PURGE, -1, true, () -> Requests.queuePurge(state.alloc(), number, queue, true));
    }

    @Override
    public CompletionStage<Long> queueDelete(String queue) {
        return queueDelete(queue, false, false);
    }

    @Override
    public CompletionStage<Long> queueDelete(String queue, boolean ifUnused, boolean ifEmpty) {
        return recorded(
                rpc(
                        queue,
                        MethodIds.QUEUE_DELETE,
                        MethodIds.QUEUE_DELETE_OK,
                        false,
                        null,
                        () -> Requests.queueDelete(state.alloc(), number, queue, ifUnused, ifEmpty, false),
                        (frame, f) -> f.complete(Replies.messageCount(frame))),
                (t, n) -> t.queueDeleted(queue));
    }

    @Override
    public CompletionStage<Void> queueDeleteNoWait(String queue, boolean ifUnused, boolean ifEmpty) {
        return recorded(
                voidRpc(
                        queue,
                        MethodIds.QUEUE_DELETE,
                        -1,
                        true,
                        () -> Requests.queueDelete(state.alloc(), number, queue, ifUnused, ifEmpty, true)),
                (t, v) -> t.queueDeleted(queue));
    }

    // ---- basic -------------------------------------------------------------------------------------------

    @Override
    public CompletionStage<Void> basicQos(int prefetchCount) {
        return basicQos(0, prefetchCount, false);
    }

    @Override
    public CompletionStage<Void> basicQos(int prefetchSize, int prefetchCount, boolean global) {
        return basicQos(prefetchSize, prefetchCount, global, true);
    }

    /** Recovery restores the channel's basic.qos: sent at once, not held for the end of recovery. */
    @Override
    public CompletionStage<Void> restoreQos(int prefetchSize, int prefetchCount, boolean global) {
        return basicQos(prefetchSize, prefetchCount, global, false);
    }

    private CompletionStage<Void> basicQos(int prefetchSize, int prefetchCount, boolean global, boolean hold) {
        if (prefetchSize < 0 || prefetchCount < 0 || prefetchCount > 0xFFFF) {
            return invalid("prefetchSize must not be negative and prefetchCount must be within 0..65535");
        }
        QOS_PENDING.incrementAndGet(this); // at the call: a consume made right after it on this thread must see it
        return rpc(
                        MethodIds.BASIC_QOS,
                        MethodIds.BASIC_QOS_OK,
                        false,
                        (Void) null,
                        () -> Requests.basicQos(state.alloc(), number, prefetchSize, prefetchCount, global),
                        (frame, f) -> f.complete(null),
                        hold,
                        null)
                .whenComplete((v, e) -> {
                    if (e == null) {
                        qosAccepted = true;
                        recovery.qosAccepted(prefetchSize, prefetchCount, global);
                        consumers.channelQosAccepted(prefetchCount, global);
                    }
                    QOS_PENDING.decrementAndGet(this); // after qosAccepted: no moment without either
                });
    }

    @Override
    public CompletionStage<GetResponse> basicGet(String queue, boolean autoAck) {
        CompletableFuture<GetResponse> future = new CompletableFuture<>();
        ByteBuf frame;
        try {
            frame = Requests.basicGet(state.alloc(), number, queue, autoAck);
        } catch (RuntimeException e) {
            future.completeExceptionally(e);
            return future;
        }
        ChannelRpc.Request<GetResponse> request = ChannelRpc.Request.of(
                        MethodIds.BASIC_GET,
                        MethodIds.BASIC_GET_OK,
                        MethodIds.BASIC_GET_EMPTY,
                        frame,
                        (reply, f) -> GetRequest.onReply(consumers, reply, f, autoAck),
                        future)
                // after a timeout too: its content follows, and the message is given back (GetRequest)
                .onLateReply((reply, f) -> GetRequest.onReply(consumers, reply, f, autoAck));
        HandOver.run(state.outbound(), () -> callOrHold(request, true, queue), frame, future);
        return future;
    }

    // settlements go through the channel's coalescer, which must see every tag (ChannelConsumers)

    @Override
    public void basicAck(long deliveryTag, boolean multiple) {
        consumers.settle(deliveryTag, multiple, false, ChannelConsumers.ACK);
    }

    @Override
    public void basicNack(long deliveryTag, boolean multiple, boolean requeue) {
        consumers.settle(deliveryTag, multiple, requeue, ChannelConsumers.NACK);
    }

    @Override
    public void basicReject(long deliveryTag, boolean requeue) {
        consumers.settle(deliveryTag, false, requeue, ChannelConsumers.REJECT);
    }

    @Override
    public CompletionStage<Void> basicRecover(boolean requeue) {
        if (!requeue) {
            return invalid("basic.recover with requeue=false: RabbitMQ answers it with 540 NOT_IMPLEMENTED, "
                    + "which closes the connection");
        }
        CompletableFuture<Void> future = new CompletableFuture<>();
        ByteBuf frame;
        try {
            frame = Requests.basicRecover(state.alloc(), number, true);
        } catch (RuntimeException e) {
            future.completeExceptionally(e);
            return future;
        }
        // the channel's consumers learn when it is written: the broker forgets the tags it requeues from then on
        ChannelRpc.Request<Void> request = RecoverRequest.of(this, frame, future);
        HandOver.run(
                state.outbound(),
                () -> {
                    if (state.isTransactional() && !recovery.isHolding()) {
                        // behind the settlements the publisher holds for the transaction: an ack made before the
                        // recover and written after it would find its delivery requeued
                        publisher.callInTurn(MethodIds.BASIC_RECOVER, frame, request);
                    } else {
                        callOrHold(request, true, null);
                    }
                },
                frame,
                future);
        return future;
    }

    // ---- consuming (ChannelConsumers) --------------------------------------------------------------------

    @Override
    public CompletionStage<ConsumerHandle> consume(String queue, ConsumeOptions options, DeliveryHandler handler) {
        return consumers.consume(queue, options, handler, null);
    }

    @Override
    public CompletionStage<ConsumerHandle> consumeAsync(
            String queue, ConsumeOptions options, AsyncDeliveryHandler handler) {
        return consumers.consume(queue, options, null, handler);
    }

    // ---- tx, confirm -------------------------------------------------------------------------------------

    // through the publisher: it keeps them in order with the channel's publishes, whatever it holds or the RPC queue

    @Override
    public CompletionStage<Void> txSelect() {
        return publisher.txSelect().whenComplete((v, e) -> {
            if (e == null) {
                recovery.txSelected();
            }
        });
    }

    @Override
    public CompletionStage<Void> txCommit() {
        return publisher.txCommit();
    }

    @Override
    public CompletionStage<Void> txRollback() {
        return publisher.txRollback();
    }

    @Override
    public CompletionStage<Void> confirmSelect() {
        return confirmSelect(false);
    }

    @Override
    public CompletionStage<Void> confirmSelect(boolean noWait) {
        // through the publisher: it holds publishes until the select is answered, so sequence numbers match
        return publisher.confirmSelect(noWait).whenComplete((v, e) -> {
            if (e == null) {
                recovery.confirmSelected();
            }
        });
    }

    // ---- publishing (Publisher) --------------------------------------------------------------------------

    @Override
    public CompletionStage<PublishOutcome> publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body) {
        if (recovery.isHolding() && body != null) {
            CompletionStage<PublishOutcome> held =
                    recovery.hold(exchange, routingKey, mandatory, properties, body, true);
            if (held != null) {
                return held;
            }
        }
        return publisher.publish(exchange, routingKey, mandatory, properties, body);
    }

    @Override
    public CompletionStage<PublishOutcome> publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            byte[] body) {
        if (body == null) {
            return invalid("body must not be null");
        }
        return publish(exchange, routingKey, mandatory, properties, Unpooled.wrappedBuffer(body));
    }

    @Override
    public CompletionStage<PublishOutcome> publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuffer body) {
        if (body == null) {
            return invalid("body must not be null");
        }
        // wrappedBuffer reads from a slice: the caller's position and limit stay where they are
        return publish(exchange, routingKey, mandatory, properties, Unpooled.wrappedBuffer(body));
    }

    @Override
    public void publishNoOutcome(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body) {
        if (recovery.isHolding()
                && body != null
                && recovery.hold(exchange, routingKey, mandatory, properties, body, false) != null) {
            return;
        }
        publisher.publishNoOutcome(exchange, routingKey, mandatory, properties, body);
    }

    @Override
    public boolean isWritable() {
        return !recovery.isRecovering() && publisher.isWritable();
    }

    @Override
    public CompletionStage<Void> whenWritable() {
        if (recovery.isRecovering()) {
            return recovery.whenRecovered().thenCompose(v -> whenWritable());
        }
        return publisher.whenWritable();
    }

    // listeners are kept by the channel too: a recovered channel's new publisher gets them

    @Override
    public void addWritabilityListener(WritabilityListener listener) {
        publisher.addWritabilityListener(listener);
        recovery.addWritabilityListener(listener);
    }

    @Override
    public void removeWritabilityListener(WritabilityListener listener) {
        publisher.removeWritabilityListener(listener);
        recovery.removeWritabilityListener(listener);
    }

    @Override
    public void addReturnListener(ReturnListener listener) {
        publisher.addReturnListener(listener);
        recovery.addReturnListener(listener);
    }

    @Override
    public void removeReturnListener(ReturnListener listener) {
        publisher.removeReturnListener(listener);
        recovery.removeReturnListener(listener);
    }

    // ---- plumbing ----------------------------------------------------------------------------------------

    /** Sends a synchronous request whose reply carries nothing the caller needs (exchange.declare, queue.bind, ...). */
    private CompletionStage<Void> voidRpc(int requestKey, int replyKey, boolean noWait, Supplier<ByteBuf> encode) {
        return rpc(requestKey, replyKey, noWait, null, encode, (frame, f) -> f.complete(null), true, null);
    }

    /** A method naming {@code queue} (see {@link #callOrHold}). */
    private CompletionStage<Void> voidRpc(
            String queue, int requestKey, int replyKey, boolean noWait, Supplier<ByteBuf> encode) {
        return rpc(requestKey, replyKey, noWait, null, encode, (frame, f) -> f.complete(null), true, queue);
    }

    /** A method naming {@code queue} (see {@link #callOrHold}). */
    private <T> CompletionStage<T> rpc(
            String queue,
            int requestKey,
            int replyKey,
            boolean noWait,
            T noWaitResult,
            Supplier<ByteBuf> encode,
            ChannelRpc.ReplyHandler<T> handler) {
        return rpc(requestKey, replyKey, noWait, noWaitResult, encode, handler, true, queue);
    }

    /**
     * Encodes on the caller's thread (an {@link IllegalArgumentException} fails the stage, nothing is
     * written), then queues the request on the event loop. {@code hold}: held while the channel recovers (false
     * for recovery's own restore of a mode); {@code queue}: the queue the method names, or null.
     */
    private <T> CompletionStage<T> rpc(
            int requestKey,
            int replyKey,
            boolean noWait,
            T noWaitResult,
            Supplier<ByteBuf> encode,
            ChannelRpc.ReplyHandler<T> handler,
            boolean hold,
            String queue) {
        CompletableFuture<T> future = new CompletableFuture<>();
        ByteBuf frame;
        try {
            frame = Requests.checkFits(encode.get(), state.connection().facade().frameMax(), number);
        } catch (RuntimeException e) {
            future.completeExceptionally(e);
            return future;
        }
        ChannelRpc.Request<T> request = noWait
                ? ChannelRpc.Request.noWait(requestKey, frame, noWaitResult, future)
                : ChannelRpc.Request.of(requestKey, replyKey, -1, frame, handler, future);
        HandOver.run(state.outbound(), () -> callOrHold(request, hold, queue), frame, future);
        return future;
    }

    /**
     * Queues {@code request} on the channel, or, while the channel recovers and {@code hold}, holds it until the
     * channel and the topology are back ({@link ChannelRecovery#holdCall}); {@code queue}, the queue it names or
     * null, fails it unsent if recovery renamed that queue. Event loop.
     */
    private void callOrHold(ChannelRpc.Request<?> request, boolean hold, String queue) {
        if (hold
                && recovery.holdCall(
                        request.requestKey(),
                        queue,
                        state.rpcTimeoutNanos(),
                        () -> state.call(request),
                        request::failUnsent)) {
            return;
        }
        state.call(request);
    }

    @Override
    public boolean holdWhileRecovering(
            int methodKey, String queue, Runnable send, java.util.function.Consumer<AmqpException> fail) {
        assert state.outbound().inEventLoop() : "channel state off the event loop";
        return recovery.holdCall(methodKey, queue, state.rpcTimeoutNanos(), send, fail);
    }

    @Override
    public ChannelConsumers currentConsumers() {
        return consumers;
    }

    private static <T> CompletionStage<T> invalid(String message) {
        return CompletableFuture.failedFuture(new IllegalArgumentException(message));
    }

    @Override
    public String toString() {
        return "Channel(" + number + ", " + (open ? "open" : "closed") + ")";
    }
}
