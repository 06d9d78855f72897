package io.warren;

import io.netty.buffer.ByteBuf;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;

/**
 * A message the broker returned (basic.return), as a zero-copy view over the frames it came in.
 *
 * <p><b>Ownership:</b> Warren owns the message and releases its buffers as soon as every {@link ReturnListener}
 * has returned. {@link #body()} and {@link #header()} are valid only during the call: copy what you need, or
 * {@code body().retain()} (and later release it) to keep the bytes.
 */
public interface ReturnedMessage {

    /** The channel the message was published and returned on. */
    Channel channel();

    /** basic.return's reply code: 312 NO_ROUTE for an unroutable mandatory publish. */
    int replyCode();

    /** basic.return's reply text, e.g. "NO_ROUTE". */
    String replyText();

    /** The exchange the message was published to. */
    String exchange();

    /** The routing key it was published with. */
    String routingKey();

    /** The content header as a view (no copy; valid during the call). */
    ContentHeader header();

    /** The properties, decoded into a new object that stays valid after the call. */
    BasicProperties properties();

    /**
     * The body (no copy): one buffer when it came in one frame, a {@code CompositeByteBuf} of the frames'
     * payloads otherwise. Valid during the call; released by Warren afterwards. Do not release it.
     */
    ByteBuf body();
}
