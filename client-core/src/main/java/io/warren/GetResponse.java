package io.warren;

/**
 * A message fetched with {@link Channel#basicGet}: a {@link Delivery} (envelope from basic.get-ok, content
 * header, body) plus the queue's remaining message count. Acknowledge it with {@link #ack()} and friends (or
 * {@link Channel#basicAck} with its tag) unless it was fetched with autoAck.
 *
 * <p><b>Ownership.</b> The caller owns the response and must {@link #release()} it (or {@link #close()} it)
 * once when done; the body is released with it. The body is the received bytes themselves, not a copy: a slice
 * of the frame that carried it, or a composite of slices when it spanned frames. To keep the body beyond
 * {@code release()}, {@code body().retain()} it (and release it later).
 */
public interface GetResponse extends Delivery, AutoCloseable {

    /** The number of messages left in the queue, as the broker counted at get time. */
    long messageCount();

    /** {@code null}: basic.get has no consumer. */
    @Override
    String consumerTag();

    /** Same as {@link #release()}, for try-with-resources. */
    @Override
    default void close() {
        release();
    }
}
