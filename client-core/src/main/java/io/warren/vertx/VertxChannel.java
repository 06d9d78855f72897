package io.warren.vertx;

import io.netty.buffer.ByteBuf;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.DeclaredQueue;
import io.warren.ExchangeSpec;
import io.warren.GetResponse;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.codec.content.BasicProperties;
import java.util.Map;

/**
 * A {@link Channel} with Vert.x futures completed on the caller's context, and consumers as
 * {@link DeliveryStream}s. The methods here are the common ones; {@link #channel()} gives the rest, and
 * {@link VertxAmqp#future} turns any of its stages into a Future. Thread-safe.
 */
public final class VertxChannel {

    private final VertxAmqp amqp;
    private final Channel channel;

    VertxChannel(VertxAmqp amqp, Channel channel) {
        this.amqp = amqp;
        this.channel = channel;
    }

    public Channel channel() {
        return channel;
    }

    public Future<Void> exchangeDeclare(String exchange, String type) {
        return amqp.future(channel.exchangeDeclare(exchange, type));
    }

    public Future<Void> exchangeDeclare(ExchangeSpec declare) {
        return amqp.future(channel.exchangeDeclare(declare));
    }

    public Future<DeclaredQueue> queueDeclare(String queue) {
        return amqp.future(channel.queueDeclare(queue));
    }

    public Future<DeclaredQueue> queueDeclare(QueueSpec declare) {
        return amqp.future(channel.queueDeclare(declare));
    }

    public Future<Void> queueBind(String queue, String exchange, String routingKey) {
        return amqp.future(channel.queueBind(queue, exchange, routingKey));
    }

    public Future<Void> queueBind(String queue, String exchange, String routingKey, Map<String, ?> arguments) {
        return amqp.future(channel.queueBind(queue, exchange, routingKey, arguments, false));
    }

    public Future<Long> queuePurge(String queue) {
        return amqp.future(channel.queuePurge(queue));
    }

    public Future<Long> queueDelete(String queue) {
        return amqp.future(channel.queueDelete(queue));
    }

    public Future<Void> basicQos(int prefetchCount) {
        return amqp.future(channel.basicQos(prefetchCount));
    }

    /** basic.get: the message, or {@code null} when the queue is empty. The caller releases the response. */
    public Future<GetResponse> basicGet(String queue, boolean autoAck) {
        return amqp.future(channel.basicGet(queue, autoAck));
    }

    /**
     * basic.publish; {@code body}'s ownership passes to Warren as with
     * {@link Channel#publish(CharSequence, CharSequence, boolean, BasicProperties, ByteBuf)}.
     */
    public Future<PublishOutcome> publish(
            CharSequence exchange, CharSequence routingKey, BasicProperties properties, ByteBuf body) {
        return amqp.future(channel.publish(exchange, routingKey, false, properties, body));
    }

    /** basic.publish of an array (wrapped, not copied: leave it alone until the future completes). */
    public Future<PublishOutcome> publish(
            CharSequence exchange, CharSequence routingKey, BasicProperties properties, byte[] body) {
        return amqp.future(channel.publish(exchange, routingKey, false, properties, body));
    }

    public Future<Void> confirmSelect() {
        return amqp.future(channel.confirmSelect());
    }

    /**
     * Starts a consumer whose deliveries come as a {@link DeliveryStream} on the caller's context. The stream
     * starts paused until a handler is set, so nothing is missed. {@code options} give the basic.consume
     * arguments, prefetch and water marks; their executor and concurrency are replaced: a stream delivers one
     * item at a time on its context. Without a prefetch in {@code options} (and without {@link #basicQos} on the
     * channel) a manual-ack stream gets {@value io.warren.ConsumeOptions#DEFAULT_PREFETCH}. With noAck, what the
     * stream holds when it ends is lost (see {@link DeliveryStream}).
     */
    public Future<DeliveryStream> consume(String queue, ConsumeOptions options) {
        Context context = amqp.vertx().getOrCreateContext();
        DeliveryStream stream = new DeliveryStream(context);
        ConsumeOptions onContext = new ConsumeOptions(options)
                .executor(VertxAmqp.executor(context))
                .concurrency(1)
                .initialDemand(0);
        return Future.fromCompletionStage(channel.consume(queue, onContext, stream::onDelivery), context)
                .map(stream::started);
    }

    /**
     * A manual-ack stream with the default options: a prefetch of {@value io.warren.ConsumeOptions#DEFAULT_PREFETCH},
     * so a paused stream holds at most that many deliveries and the broker keeps the rest.
     */
    public Future<DeliveryStream> consume(String queue) {
        return consume(queue, new ConsumeOptions());
    }

    public Future<Void> close() {
        return amqp.future(channel.close());
    }

    @Override
    public String toString() {
        return "Vert.x " + channel;
    }
}
