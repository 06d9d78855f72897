package io.warren;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.util.ReferenceCounted;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import java.nio.charset.Charset;
import java.util.Objects;

/**
 * A message delivered to a consumer (basic.deliver) or fetched with {@link Channel#basicGet} (then a
 * {@link GetResponse}): the envelope, the content header and the body, as a view over the frames they came
 * in. No body byte is copied: {@link #body()} is the payload of the one frame that carried it, or a
 * {@code CompositeByteBuf} of the frames' payloads when the body spanned frames.
 *
 * <h2>Ownership</h2>
 * A delivery is reference counted. A {@link DeliveryHandler} borrows it: Warren releases it when the handler
 * returns, unless the handler called {@link #retain()}, in which case whoever retained calls
 * {@link #release()} once per retain. An {@link AsyncDeliveryHandler} borrows it until the stage it returned
 * completes. A {@link GetResponse} belongs to the caller, who releases it. {@link #body()} and
 * {@link #header()} are valid only while the delivery is not released; {@code body().retain()} keeps the bytes
 * on their own (release them later). Do not release the body separately. {@link #bodyBytes()} and
 * {@link #bodyAsString(Charset)} copy the body, for code that wants an array or a string and no buffer rules:
 * the copy is yours for good, but it is taken when you call them, so call them while the delivery is valid.
 *
 * <h2>Settlement</h2>
 * {@link #ack()}, {@link #nack(boolean)}, {@link #reject(boolean)} and their {@code multiple} forms may be
 * called from any thread, once per delivery, and also after the delivery was released (they need only its
 * tag). A consumer whose handler runs on the event loop reuses a released delivery object for a later message
 * once its tag is settled (at once with noAck; never once {@link Channel#basicRecover} requeued it unsettled), which is why a steady stream of deliveries allocates next to
 * nothing: so after a delivery is released <em>and</em> settled (or covered by a multiple ack), do not touch it
 * again unless you retained it. They are fire and forget: Warren hands them to the connection's event loop,
 * which coalesces acks into one basic.ack with {@code multiple=true} where that is safe (when every lower
 * delivery tag of the channel is settled). They throw {@link IllegalStateException} for a delivery taken with noAck / autoAck
 * (there is nothing to acknowledge) and for a second settlement of the same delivery, a
 * {@link StaleDeliveryException} for a delivery from before a connection loss or requeued by
 * {@link Channel#basicRecover}, and a
 * {@link ChannelClosedException} (carrying why it closed) once the channel is closed: nothing is sent then, the
 * broker has already requeued the message.
 *
 * <p>The accessors may be called from any thread, one thread at a time.
 */
public interface Delivery extends ReferenceCounted {

    /** The channel the message was delivered on (acknowledgements go to this channel). */
    Channel channel();

    /** The consumer's tag; {@code null} for a {@link GetResponse}. */
    String consumerTag();

    /**
     * The delivery tag, unique on the channel for its whole life, across recoveries: what {@link Channel#basicAck}
     * and friends take. It is the broker's tag until the channel is first recovered; after that the tags continue
     * above every tag handed out before (the broker's tag plus that offset), and Warren converts back when it sends.
     */
    long deliveryTag();

    /** True when the broker delivered the message before and it was not acknowledged. */
    boolean redelivered();

    /** The exchange the message was published to ({@code ""} for the default exchange). */
    String exchange();

    /** The routing key the message was published with. */
    String routingKey();

    /**
     * The content header as a zero-copy view: properties are read in place when asked
     * ({@code header().contentType()}, {@code header().headers()}, ...). Valid until the delivery is released.
     */
    ContentHeader header();

    /**
     * The properties decoded into a new immutable object (on first call), valid after the release too. Published
     * again, they put the content header's exact bytes on the wire, which is what a relay needs: header values keep
     * their field types (a long string that is not UTF-8 is a {@link io.warren.codec.table.LongString}, an unsigned
     * value an {@link io.warren.codec.table.Unsigned}; see {@link BasicProperties#headers()}), and short strings
     * that are not UTF-8 keep their bytes.
     */
    BasicProperties properties();

    /**
     * The body (no copy). Valid until the delivery is released; do not release it yourself, and
     * {@code retain()} it to keep it longer. Reading it moves its reader index: use {@code duplicate()} or
     * absolute reads to read it twice.
     */
    ByteBuf body();

    /**
     * A copy of the body's readable bytes in a new array, yours to keep. Use it where an API wants a
     * {@code byte[]}; {@link #body()} reads the same bytes without copying. Like {@link #body()}, call it while
     * the delivery is valid (in the handler, or until you release what you retained): the copy outlives the
     * delivery, the call does not. Does not move the body's reader index.
     *
     * @throws io.netty.util.IllegalReferenceCountException when the delivery was released already
     */
    default byte[] bodyBytes() {
        ByteBuf b = body();
        return ByteBufUtil.getBytes(b, b.readerIndex(), b.readableBytes());
    }

    /**
     * The body's readable bytes decoded with {@code charset} into a new {@code String} (a copy, yours to keep).
     * As {@link #bodyBytes()}: call it while the delivery is valid; it does not move the body's reader index.
     *
     * @throws io.netty.util.IllegalReferenceCountException when the delivery was released already
     */
    default String bodyAsString(Charset charset) {
        ByteBuf b = body();
        return b.toString(b.readerIndex(), b.readableBytes(), Objects.requireNonNull(charset, "charset"));
    }

    /** Acknowledges this delivery (basic.ack). Any thread. */
    void ack();

    /**
     * Acknowledges this delivery and, with {@code multiple}, every lower unsettled delivery of the channel,
     * whichever consumer it went to (AMQP's semantics).
     */
    void ack(boolean multiple);

    /** Negatively acknowledges this delivery (basic.nack); {@code requeue} puts it back in its queue. */
    void nack(boolean requeue);

    /** basic.nack; with {@code multiple}, every lower unsettled delivery of the channel too. */
    void nack(boolean multiple, boolean requeue);

    /** Rejects this delivery (basic.reject); {@code requeue} puts it back in its queue. */
    void reject(boolean requeue);

    @Override
    Delivery retain();

    @Override
    Delivery retain(int increment);

    @Override
    Delivery touch();

    @Override
    Delivery touch(Object hint);
}
