package io.warren.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.AmqpException;
import io.warren.BackPressureException;
import io.warren.Channel;
import io.warren.ConnectionBlockedException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves RPC requests from a queue: each request goes to the {@link Handler}, whose reply is published to the
 * default exchange with the request's {@code reply_to} as routing key and its {@code correlation_id}, after
 * which the request is acknowledged. Works with {@link RpcClient} (direct reply-to) and with any client that
 * sets {@code reply_to} (a reply queue of its own). Requests are taken with manual acknowledgement and
 * handled up to the options' {@link ConsumeOptions#concurrency() concurrency} at once.
 *
 * <pre>{@code
 * RpcServer.start(channel, "prices", new ConsumeOptions().prefetch(16).concurrency(4),
 *         request -> CompletableFuture.completedFuture(RpcServer.Reply.of(quote(request.body()))));
 * }</pre>
 *
 * <h2>Delivery semantics</h2>
 * A request is acknowledged once its reply is published ({@link PublishOutcome#SENT}, or confirmed when the channel
 * is in confirm mode); until then it stays unacknowledged, and the broker delivers it again if the channel closes.
 * <ul>
 *   <li>A request without {@code reply_to} is acknowledged and dropped (logged).
 *   <li>A handler that throws, fails its stage or completes it with no reply rejects the request without requeue,
 *       and so does a reply the channel refuses as it is ({@link IllegalArgumentException}: a header over the
 *       frame size, a body already released): the next attempt would fail alike, so a poison request does not
 *       loop (dead-letter it with a queue policy). The caller times out.
 *   <li>A reply the channel refuses for a reason of the moment ({@link BackPressureException},
 *       {@link ConnectionBlockedException}) requeues the request once the channel is writable again
 *       ({@link Channel#whenWritable()}), so that a later attempt, here or on another server, answers it; it stays
 *       unacknowledged until then.
 *   <li>A reply lost on its way (the channel closing, or in confirm mode a broker nack or a lost confirm) requeues
 *       the request at once, unless it had been delivered before ({@link Delivery#redelivered()}): then it is
 *       rejected without requeue, so a reply queue that keeps refusing does not turn the request round and round.
 *       A reply whose confirm was lost may have reached the caller, who then gets two; an {@link RpcClient} drops
 *       the second.
 *   <li>An acknowledgement that fails after the reply went out (the channel closed meanwhile) is logged as that,
 *       not as the handler's failure; the broker delivers the request again, and an {@link RpcClient} drops the
 *       second reply.
 * </ul>
 * The server logs each failure once, as what it is.
 */
public final class RpcServer {

    private static final Logger LOG = LoggerFactory.getLogger(RpcServer.class);

    /** Computes the reply to one request. Runs on the consumer's context; must not block on the event loop. */
    @FunctionalInterface
    public interface Handler {
        /**
         * The reply to {@code request}. The request is borrowed until the returned stage completes (then Warren
         * releases it); do not acknowledge it, the server does once the reply is sent.
         */
        CompletionStage<Reply> handle(Delivery request);
    }

    /** A reply: its properties (correlation id is set by the server) and body, whose ownership passes to Warren. */
    public static final class Reply {
        private final BasicProperties properties;
        private final ByteBuf body;

        private Reply(BasicProperties properties, ByteBuf body) {
            this.properties = properties;
            this.body = Objects.requireNonNull(body, "body");
        }

        public static Reply of(byte[] body) {
            return new Reply(null, Unpooled.wrappedBuffer(body));
        }

        /** A reply with {@code properties} (null for none) and {@code body} (its reference passes to Warren). */
        public static Reply of(BasicProperties properties, ByteBuf body) {
            return new Reply(properties, body);
        }

        public BasicProperties properties() {
            return properties;
        }

        public ByteBuf body() {
            return body;
        }
    }

    private final Channel channel;
    private final ConsumerHandle consumer;

    private RpcServer(Channel channel, ConsumerHandle consumer) {
        this.channel = channel;
        this.consumer = consumer;
    }

    /** Serves {@code queue} with default consume options (one request at a time). */
    public static CompletionStage<RpcServer> start(Channel channel, String queue, Handler handler) {
        return start(channel, queue, new ConsumeOptions(), handler);
    }

    /**
     * Serves {@code queue} on {@code channel}; {@code options} set prefetch, concurrency and the handler's
     * executor (noAck is refused: a request is acknowledged after its reply). Completes once consuming.
     */
    public static CompletionStage<RpcServer> start(
            Channel channel, String queue, ConsumeOptions options, Handler handler) {
        Objects.requireNonNull(handler, "handler");
        if (options.noAck()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException(
                    "an RPC server acknowledges each request after its reply: noAck is not supported"));
        }
        return channel.consumeAsync(queue, options, request -> serve(channel, handler, request))
                .thenApply(handle -> new RpcServer(channel, handle));
    }

    private static CompletionStage<?> serve(Channel channel, Handler handler, Delivery request) {
        ContentHeader header = request.header();
        if (!header.hasReplyTo()) {
            LOG.warn(
                    "channel {}: RPC request {} without reply_to; acknowledged and dropped",
                    channel.channelNumber(),
                    request.deliveryTag());
            acknowledge(channel, request, false);
            return null;
        }
        String replyTo = header.replyToAsString();
        String correlationId = header.hasCorrelationId() ? header.correlationIdAsString() : null;
        CompletionStage<Reply> reply;
        try {
            reply = Objects.requireNonNull(handler.handle(request), "the RPC handler returned a null stage");
        } catch (VirtualMachineError e) {
            throw e;
        } catch (RuntimeException | Error e) {
            // an Error too (an assertion, a class that failed to initialise): as a failed stage, the request is
            // rejected rather than left unsettled, holding a prefetch slot until the channel closes
            reply = CompletableFuture.failedFuture(e);
        }
        // completes, normally, once the request is settled: every failure is logged below as what it is
        CompletableFuture<Void> settled = new CompletableFuture<>();
        reply.whenComplete((r, handlerError) -> {
            if (handlerError != null || r == null) {
                LOG.warn(
                        "channel {}: the RPC handler failed on request {} (correlation id {}); rejected without "
                                + "requeue",
                        channel.channelNumber(),
                        request.deliveryTag(),
                        correlationId,
                        handlerError != null ? handlerError : new NullPointerException("the stage had no reply"));
                reject(channel, request, false);
                settled.complete(null);
                return;
            }
            publish(channel, replyTo, correlationId, r).whenComplete((outcome, publishError) -> {
                if (publishError == null) {
                    acknowledge(channel, request, true);
                } else {
                    Throwable cause = unwrap(publishError);
                    if (cause instanceof BackPressureException || cause instanceof ConnectionBlockedException) {
                        // the channel takes no publish now: requeue once it does, not at once (the broker would
                        // hand the request straight back, and the handler would run again for nothing)
                        LOG.warn(
                                "channel {}: the reply to RPC request {} (correlation id {}) was refused ({}); the"
                                        + " request is requeued once the channel is writable again",
                                channel.channelNumber(),
                                request.deliveryTag(),
                                correlationId,
                                cause.toString());
                        channel.whenWritable().whenComplete((writable, closed) -> {
                            reject(channel, request, true);
                            settled.complete(null);
                        });
                        return;
                    }
                    // lost on its way (a closing channel, a nack, a lost confirm), a reply may go through next time,
                    // once: a request that comes again and meets the same fate is not requeued again; refused as it
                    // is (a bad header or body), it never will
                    boolean requeue = cause instanceof AmqpException && !request.redelivered();
                    LOG.warn(
                            "channel {}: publishing the reply to RPC request {} (correlation id {}) failed; {}",
                            channel.channelNumber(),
                            request.deliveryTag(),
                            correlationId,
                            requeue ? "requeued for another attempt" : "rejected without requeue",
                            publishError);
                    reject(channel, request, requeue);
                }
                settled.complete(null);
            });
        });
        return settled;
    }

    /** Publishes {@code reply}, whose body passes to Warren whatever happens: released here if never published. */
    private static CompletionStage<PublishOutcome> publish(
            Channel channel, String replyTo, String correlationId, Reply reply) {
        BasicProperties props;
        try {
            props = (reply.properties() == null ? BasicProperties.builder() : reply.properties().toBuilder())
                    .correlationId(correlationId)
                    .build();
        } catch (RuntimeException e) {
            reply.body().release();
            return CompletableFuture.failedFuture(e);
        }
        try {
            return channel.publish("", replyTo, false, props, reply.body());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e); // the body is Warren's already
        }
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    /** basic.ack of the request; a failure is logged as what it is (not the handler's). */
    private static void acknowledge(Channel channel, Delivery request, boolean replied) {
        try {
            request.ack();
        } catch (RuntimeException e) {
            LOG.warn(
                    "channel {}: acknowledging RPC request {} failed{}",
                    channel.channelNumber(),
                    request.deliveryTag(),
                    replied ? " after its reply was published" : "",
                    e);
        }
    }

    /** basic.reject of the request; nothing to do if the channel closed (the broker requeued it then). */
    private static void reject(Channel channel, Delivery request, boolean requeue) {
        try {
            request.reject(requeue);
        } catch (AmqpException | IllegalStateException e) {
            LOG.debug("channel {}: could not reject RPC request {}", channel.channelNumber(), request.deliveryTag(), e);
        }
    }

    /** The server's consumer (its tag, flow control, end). */
    public ConsumerHandle consumer() {
        return consumer;
    }

    public Channel channel() {
        return channel;
    }

    /** Stops taking requests (basic.cancel); requests being handled finish. */
    public CompletionStage<Void> stop() {
        return consumer.cancel();
    }
}
