package io.warren.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.PublishOutcome;
import io.warren.ReturnListener;
import io.warren.ReturnedMessage;
import io.warren.RpcTimeoutException;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Request/reply over RabbitMQ's direct reply-to: no reply queue is declared. The client consumes the
 * pseudo-queue {@value #DIRECT_REPLY_TO} with noAck on its channel (before any request is published, as the
 * broker requires), publishes each request with {@code reply_to} set to it and a correlation id of its own,
 * and completes the call's stage with the reply whose {@code correlation_id} matches. Nothing blocks; any
 * number of calls may be in flight from any threads.
 *
 * <pre>{@code
 * RpcClient rpc = RpcClient.create(channel).toCompletableFuture().join();   // or compose it
 * rpc.call("", "prices", null, "EURUSD".getBytes(UTF_8), Duration.ofSeconds(5))
 *    .thenAccept(reply -> {
 *        try {
 *            System.out.println(reply.body().toString(UTF_8));
 *        } finally {
 *            reply.release();
 *        }
 *    });
 * }</pre>
 *
 * <h2>The reply</h2>
 * A call completes with the reply as a {@link Delivery} that <b>the caller owns and must
 * {@link Delivery#release() release}</b> (its body is the frames' bytes, not copied). It was consumed with noAck:
 * there is nothing to acknowledge. A reply that arrives after its call timed out, or with a correlation id this
 * client does not know, is released and logged.
 *
 * <h2>Failures</h2>
 * A call fails with {@link RpcTimeoutException} after its timeout (the channel and the client stay usable; a
 * late reply is dropped; the timeout completes the call on the connection's event loop, as a reply does), with
 * {@link RequestReturnedException} when no
 * queue took the request (requests are published mandatory), with the publish's failure, and with the
 * channel's close when the channel closes. Use a channel of its own for the client: the direct reply-to
 * consumer takes the channel's replies.
 */
public final class RpcClient {

    private static final Logger LOG = LoggerFactory.getLogger(RpcClient.class);

    /** RabbitMQ's direct reply-to pseudo-queue. */
    public static final String DIRECT_REPLY_TO = "amq.rabbitmq.reply-to";

    /** The timeout of {@link #call(String, String, BasicProperties, ByteBuf)}. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    private final Channel channel;
    private final Duration defaultTimeout;
    private final String idPrefix = UUID.randomUUID().toString().substring(0, 8) + "-";
    private final AtomicLong ids = new AtomicLong();
    private final Map<String, CompletableFuture<Delivery>> pending = new ConcurrentHashMap<>();
    private final ReturnListener returns = this::onReturn;
    private volatile ConsumerHandle consumer;
    private volatile AmqpException closed;

    private RpcClient(Channel channel, Duration defaultTimeout) {
        this.channel = channel;
        this.defaultTimeout = defaultTimeout;
    }

    /** A client on {@code channel} with the {@link #DEFAULT_TIMEOUT}; completes once its consumer is active. */
    public static CompletionStage<RpcClient> create(Channel channel) {
        return create(channel, DEFAULT_TIMEOUT);
    }

    /**
     * A client on {@code channel} whose calls time out after {@code defaultTimeout} unless told otherwise.
     * Completes once the direct reply-to consumer is active (basic.consume-ok), so requests can be published.
     */
    public static CompletionStage<RpcClient> create(Channel channel, Duration defaultTimeout) {
        Objects.requireNonNull(channel, "channel");
        positive(defaultTimeout);
        RpcClient client = new RpcClient(channel, defaultTimeout);
        channel.addReturnListener(client.returns);
        return channel.consume(DIRECT_REPLY_TO, new ConsumeOptions().noAck(true), client::onReply)
                .whenComplete((handle, error) -> {
                    if (error != null) {
                        channel.removeReturnListener(client.returns); // no client: the channel must not keep it
                    }
                })
                .thenApply(handle -> {
                    client.consumer = handle;
                    handle.endFuture().thenAccept(client::ended);
                    return client;
                });
    }

    /** The channel the client publishes and consumes on. */
    public Channel channel() {
        return channel;
    }

    /** Calls in flight. */
    public int pendingCalls() {
        return pending.size();
    }

    /** A call with the default timeout; see {@link #call(String, String, BasicProperties, ByteBuf, Duration)}. */
    public CompletionStage<Delivery> call(
            String exchange, String routingKey, BasicProperties properties, ByteBuf body) {
        return call(exchange, routingKey, properties, body, defaultTimeout);
    }

    /** As {@link #call(String, String, BasicProperties, ByteBuf, Duration)}; the array is wrapped, not copied. */
    public CompletionStage<Delivery> call(
            String exchange, String routingKey, BasicProperties properties, byte[] body, Duration timeout) {
        return call(exchange, routingKey, properties, Unpooled.wrappedBuffer(body), timeout);
    }

    /**
     * Publishes a request to {@code exchange} with {@code routingKey} ({@code reply_to} and {@code correlation_id}
     * set over {@code properties}, null for none) and completes with the reply, which the caller releases.
     * Ownership of {@code body} passes to Warren, as with {@link Channel#publish}.
     */
    public CompletionStage<Delivery> call(
            String exchange, String routingKey, BasicProperties properties, ByteBuf body, Duration timeout) {
        CompletableFuture<Delivery> reply = new CompletableFuture<>();
        AmqpException isClosed = closed;
        if (isClosed != null) {
            body.release();
            reply.completeExceptionally(isClosed);
            return reply;
        }
        String correlationId = idPrefix + ids.incrementAndGet();
        BasicProperties request;
        long timeoutNanos;
        try {
            positive(timeout);
            // ChronoUnit.FOREVER's duration is a way to say "no timeout": beyond Long.MAX_VALUE nanos, that many
            timeoutNanos = TimeUnit.NANOSECONDS.convert(timeout); // saturates there
            request = (properties == null ? BasicProperties.builder() : properties.toBuilder())
                    .replyTo(DIRECT_REPLY_TO)
                    .correlationId(correlationId)
                    .build();
        } catch (RuntimeException e) {
            body.release();
            reply.completeExceptionally(e);
            return reply;
        }
        pending.put(correlationId, reply);
        isClosed = closed;
        if (isClosed != null) {
            // closed while this call was being made: failAll may have looked at the calls before this one was added
            pending.remove(correlationId);
            body.release();
            reply.completeExceptionally(isClosed);
            return reply;
        }
        // The timer runs on the connection's event loop, where the reply consumer completes calls: a timeout
        // completes the call where its reply would have, and a caller's continuation that blocks holds up this
        // connection, as one on a reply does, not the JDK's one timer thread that every completeOnTimeout shares.
        ScheduledFuture<?> timer;
        try {
            timer = channel.connection()
                    .eventLoop()
                    .schedule(
                            () -> timedOut(correlationId, exchange, routingKey, timeout),
                            timeoutNanos,
                            TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) { // the loop is shutting down: no reply could come either
            body.release();
            fail(correlationId, e);
            return reply;
        }
        // cancelled, and so taken off the loop's queue, when the call completes: the timer does not hold the call
        // for its whole timeout
        reply.whenComplete((d, error) -> {
            pending.remove(correlationId);
            timer.cancel(false);
        });
        CompletionStage<PublishOutcome> published;
        try {
            published =
                    channel.publish(exchange, routingKey, true, request, body); // takes the body, even when it throws
        } catch (RuntimeException e) {
            fail(correlationId, e);
            return reply;
        }
        published.whenComplete((outcome, error) -> {
            if (error != null) {
                fail(correlationId, error);
            } else if (outcome.isReturned()) {
                fail(correlationId, returned(correlationId, outcome.replyCode(), outcome.replyText()));
            }
        });
        return reply;
    }

    /**
     * Cancels the reply consumer; calls still in flight fail. The channel stays open (it is the caller's).
     */
    public CompletionStage<Void> close() {
        ConsumerHandle c = consumer;
        channel.removeReturnListener(returns);
        failAll(new AmqpException("the RPC client was closed"));
        return c == null ? CompletableFuture.completedFuture(null) : c.cancel();
    }

    // ---- the reply consumer (on the channel's event loop) ---------------------------------------------------

    private void onReply(Delivery delivery) {
        ContentHeader header = delivery.header();
        String correlationId = header.hasCorrelationId() ? header.correlationIdAsString() : null;
        CompletableFuture<Delivery> call = correlationId == null ? null : pending.remove(correlationId);
        if (call == null) {
            LOG.debug(
                    "channel {}: reply with correlation id {} matches no call in flight (late or foreign); dropped",
                    channel.channelNumber(),
                    correlationId);
            return; // released by Warren when this returns
        }
        delivery.retain(); // the caller's now
        if (!call.complete(delivery)) {
            delivery.release(); // timed out in between
        }
    }

    private void onReturn(ReturnedMessage message) {
        ContentHeader header = message.header();
        // the broker rewrote reply_to into "amq.rabbitmq.reply-to.<token>"; the correlation id is ours if pending
        if (header.hasCorrelationId()
                && header.hasReplyTo()
                && header.replyToAsString().startsWith(DIRECT_REPLY_TO)) {
            String correlationId = header.correlationIdAsString();
            fail(correlationId, returned(correlationId, message.replyCode(), message.replyText()));
        }
    }

    private RequestReturnedException returned(String correlationId, int replyCode, String replyText) {
        return new RequestReturnedException(
                "RPC request " + correlationId + " was returned by the broker: " + replyCode + " " + replyText
                        + " (no queue is bound for it: is the server running?)",
                replyCode,
                replyText,
                channel.channelNumber());
    }

    /** On the connection's event loop, unless the call completed first and cancelled the timer. */
    private void timedOut(String correlationId, String exchange, String routingKey, Duration timeout) {
        fail(
                correlationId,
                new RpcTimeoutException(
                        "no reply to RPC " + correlationId + " (" + exchange + "/" + routingKey + ") within " + timeout,
                        0,
                        0,
                        channel.channelNumber()));
    }

    private void fail(String correlationId, Throwable cause) {
        CompletableFuture<Delivery> call = pending.remove(correlationId);
        if (call != null) {
            call.completeExceptionally(cause);
        }
    }

    /** The reply consumer ended (cancelled by the broker, say) while the channel may stay open: it keeps nothing. */
    private void ended(AmqpException cause) {
        channel.removeReturnListener(returns);
        failAll(cause != null ? cause : new AmqpException("the RPC client's reply consumer was cancelled"));
    }

    private void failAll(AmqpException cause) {
        closed = cause;
        for (String id : pending.keySet()) {
            fail(id, cause);
        }
    }

    private static void positive(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
    }
}
