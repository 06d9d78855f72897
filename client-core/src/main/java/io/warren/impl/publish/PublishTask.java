package io.warren.impl.publish;

import io.netty.buffer.ByteBuf;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.connection.OutboundPath;
import java.util.concurrent.CompletableFuture;

/**
 * One publish on its way from the caller's thread to the event loop: its arguments (checked on the caller's
 * thread), the caller's body, the outcome future (null for a publish without outcome) and the bytes it counts
 * against the connection's bounds. The event loop frames it ({@link PublishFrames}) when it writes it.
 *
 * <p>Tasks are pooled per connection ({@link PublishFlow#acquireTask()} / {@link PublishFlow#releaseTask}): taken
 * on any thread, returned by the event loop. Netty's {@code Recycler} is not used: it pools nothing for a thread
 * that is not a {@code FastThreadLocalThread}, which is what most publishing threads are.
 *
 * <p>Ownership: the task owns {@code body} from {@link #set} until the publisher writes it (ownership passes to
 * the outbound path) or {@link #releaseBody()} releases it; exactly one of the two, once.
 */
final class PublishTask implements OutboundPath.DiscardableTask {

    // written by the caller's thread before the task is queued, then event loop only (the MPSC queue publishes them)
    Publisher publisher;
    CharSequence exchange;
    CharSequence routingKey;
    boolean mandatory;
    BasicProperties properties;
    ByteBuf body;
    long bytes;
    CompletableFuture<PublishOutcome> future;
    // event loop only: queued behind a caller's write by the publisher (confirm mode), to be numbered in its turn
    boolean deferred;
    /**
     * The socket refused its caller's write (nothing written): not sent again on this connection, which is going
     * (see Publisher#onRefused).
     */
    boolean refused;
    /** For a refused one in confirm mode, the sequence number its caller spent on it; else 0. */
    long refusedSequence;

    void set(
            Publisher publisher,
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            long bytes,
            CompletableFuture<PublishOutcome> future) {
        this.publisher = publisher;
        this.exchange = exchange;
        this.routingKey = routingKey;
        this.mandatory = mandatory;
        this.properties = properties;
        this.body = body;
        this.bytes = bytes;
        this.future = future;
    }

    @Override
    public void run() {
        publisher.onTask(this);
    }

    /** The event loop is gone (the client was closed): nothing will run this task. Any thread. */
    @Override
    public void discard(Throwable cause) {
        publisher.onDiscarded(this, cause);
    }

    /** Releases the body the task still owns. */
    void releaseBody() {
        ByteBuf b = body;
        body = null;
        if (b != null) {
            b.release();
        }
    }

    /** Drops every reference (the caller's strings, properties, future) before the task is pooled again. */
    void clear() {
        publisher = null;
        exchange = null;
        routingKey = null;
        mandatory = false;
        properties = null;
        body = null;
        bytes = 0;
        future = null;
        deferred = false;
        refused = false;
        refusedSequence = 0;
    }
}
