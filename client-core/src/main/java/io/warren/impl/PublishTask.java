package io.warren.impl;

import io.netty.buffer.ByteBuf;
import io.netty.util.Recycler;
import io.warren.PublishOutcome;
import java.util.concurrent.CompletableFuture;

/**
 * One publish on its way from the caller's thread to the event loop: the framed buffers, the outcome
 * future (null for a publish without outcome) and the bytes it counts against the connection's bound.
 * Pooled with Netty's {@link Recycler}, so a steady stream of publishes allocates no task objects.
 *
 * <p>Frames, as {@link PublishFrames} built them: {@code head} is the method frame, the content-header
 * frame and (for a body that fits one frame) the body frame's 7-byte header; {@code body} is the caller's
 * buffer itself and {@code tail} the frame-end octet; for a body spanning frames, {@code head} is the whole
 * message as one {@code CompositeByteBuf} and {@code body} and {@code tail} are null. Written in that order
 * within one event-loop task, nothing can come between them.
 *
 * <p>Ownership: the task owns its buffers until {@link Publisher} writes them (ownership passes to the
 * outbound path) or {@link #releaseBuffers()} releases them; exactly one of the two, once.
 */
final class PublishTask implements OutboundPath.DiscardableTask {

    private static final Recycler<PublishTask> RECYCLER = new Recycler<>() {
        @Override
        protected PublishTask newObject(Handle<PublishTask> handle) {
            return new PublishTask(handle);
        }
    };

    private final Recycler.Handle<PublishTask> handle;

    // written by the caller's thread before the task is queued, then event loop only (the MPSC queue publishes them)
    Publisher publisher;
    ByteBuf head;
    ByteBuf body;
    ByteBuf tail;
    long bytes;
    boolean mandatory;
    CompletableFuture<PublishOutcome> future;

    private PublishTask(Recycler.Handle<PublishTask> handle) {
        this.handle = handle;
    }

    static PublishTask newInstance(ByteBuf head, ByteBuf body, ByteBuf tail, boolean mandatory) {
        PublishTask t = RECYCLER.get();
        t.head = head;
        t.body = body;
        t.tail = tail;
        t.mandatory = mandatory;
        t.bytes = head.readableBytes() + (body == null ? 0 : body.readableBytes()) + (tail == null ? 0 : 1)
                + Publisher.TASK_OVERHEAD;
        return t;
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

    /** Releases the buffers the task still owns. */
    void releaseBuffers() {
        ByteBuf h = head;
        ByteBuf b = body;
        ByteBuf t = tail;
        head = null;
        body = null;
        tail = null;
        try {
            if (h != null) {
                h.release();
            }
        } finally {
            try {
                if (b != null) {
                    b.release();
                }
            } finally {
                if (t != null) {
                    t.release();
                }
            }
        }
    }

    /** Clears the task and returns it to the pool; its buffers must have been written or released. */
    void recycle() {
        publisher = null;
        head = null;
        body = null;
        tail = null;
        future = null;
        bytes = 0;
        mandatory = false;
        handle.recycle(this);
    }
}
