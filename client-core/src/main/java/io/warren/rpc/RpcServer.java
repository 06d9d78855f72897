package io.warren.rpc;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
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
 * A request without {@code reply_to} is acknowledged and dropped (logged). A handler that throws or fails its
 * stage rejects the request without requeue (so a poison request does not loop; dead-letter it with a queue
 * policy), and the caller times out.
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
            request.ack();
            return null;
        }
        String replyTo = header.replyToAsString();
        String correlationId = header.hasCorrelationId() ? header.correlationIdAsString() : null;
        CompletionStage<Reply> reply;
        try {
            reply = Objects.requireNonNull(handler.handle(request), "the RPC handler returned a null stage");
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        return reply.thenCompose(r -> {
                    BasicProperties props = (r.properties() == null
                                    ? BasicProperties.builder()
                                    : r.properties().toBuilder())
                            .correlationId(correlationId)
                            .build();
                    return channel.publish("", replyTo, false, props, r.body());
                })
                .whenComplete((outcome, error) -> {
                    if (error == null) {
                        request.ack();
                    } else {
                        LOG.warn(
                                "channel {}: RPC request {} (correlation id {}) failed; rejected without requeue",
                                channel.channelNumber(),
                                request.deliveryTag(),
                                correlationId,
                                error);
                        try {
                            request.reject(false);
                        } catch (AmqpException | IllegalStateException e) {
                            LOG.debug("could not reject request {}", request.deliveryTag(), e);
                        }
                    }
                });
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
