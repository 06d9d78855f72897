package io.warren;

import io.netty.buffer.ByteBuf;
import io.warren.codec.content.BasicProperties;

/**
 * A message fetched with {@link Channel#basicGet}: the envelope (basic.get-ok), the properties (content
 * header) and the body.
 *
 * <p><b>Ownership.</b> The caller owns the response and must call {@link #release()} (or {@link #close()})
 * exactly once when done; the body is released with it. The body is the received bytes themselves, not a
 * copy: a slice of the frame that carried it, or a composite of slices when it spanned frames. To keep the
 * body beyond {@code release()}, {@code body().retain()} it (and release it later).
 */
public interface GetResponse extends AutoCloseable {

    /** The delivery tag to acknowledge with {@link Channel#basicAck} (when not auto-acked). */
    long deliveryTag();

    /** True when the message was delivered before and not acknowledged. */
    boolean redelivered();

    /** The exchange the message was published to ({@code ""} for the default exchange). */
    String exchange();

    String routingKey();

    /** The number of messages left in the queue, as the broker counted at get time. */
    long messageCount();

    /** The message properties (decoded on first call). */
    BasicProperties properties();

    /** The body: valid until {@link #release()}; do not release it separately. */
    ByteBuf body();

    /** Releases the body and the buffers behind this response. Once only. */
    void release();

    /** Same as {@link #release()}, for try-with-resources. */
    @Override
    default void close() {
        release();
    }
}
