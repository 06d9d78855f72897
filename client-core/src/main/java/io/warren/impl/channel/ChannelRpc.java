package io.warren.impl.channel;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.RpcTimeoutException;
import io.warren.codec.Frame;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.impl.connection.MethodNames;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The synchronous methods of one channel, first in, first out. Event loop only.
 *
 * <p>One request is on the wire at a time, as AMQP 0-9-1 asks of a client (a synchronous request waits
 * for its reply before the next is sent); the others wait here, so any number may be called from any
 * thread without blocking. A reply is matched to the head request by its class and method id, which
 * keeps replies from being mixed up even after a timeout:
 *
 * <ul>
 *   <li>a request that times out while still queued is removed and never sent;</li>
 *   <li>one that times out on the wire stays at the head, its future failed, until its late reply comes
 *       and is dropped; only then is the next request sent. A request whose reply changes what the broker holds
 *       for the channel (a consumer started or cancelled, a basic.get's message on its way) has a late handler
 *       ({@link Request#onLateReply}) that acts on it instead: the broker did what was asked, and what follows the
 *       reply (deliveries, the message's content) must find the client agreeing.</li>
 * </ul>
 *
 * A nowait request is written when it reaches the head, its future completes once it is written, and
 * the next request follows at once.
 */
public final class ChannelRpc {

    /**
     * Turns the reply frame into the request's result and completes {@code future}. Event loop; the frame
     * is borrowed (ChannelRpc releases it afterwards): keep a retained slice of its payload if needed.
     */
    @FunctionalInterface
    public interface ReplyHandler<T> {
        void onReply(Frame reply, CompletableFuture<T> future);
    }

    /** One synchronous request. */
    public static final class Request<T> {
        final int requestKey;
        final int replyKey;
        final int altReplyKey;
        final boolean noWait;
        final ReplyHandler<T> handler;
        final CompletableFuture<T> future;
        final T noWaitResult;
        ByteBuf frame;
        ScheduledFuture<?> timeout;
        boolean sent;
        /** Handles the reply that comes after the request timed out (its future already failed); null: dropped. */
        ReplyHandler<T> lateHandler;
        /** Told when the frame is handed to the outbound path; null: nobody asks. */
        Runnable sendHook;
        /**
         * Told right before the frame is handed over, so that what the write runs (a writability callback) sees the
         * request sent; null: nobody asks.
         */
        Runnable beforeSendHook;

        private Request(
                int requestKey,
                int replyKey,
                int altReplyKey,
                ByteBuf frame,
                ReplyHandler<T> handler,
                boolean noWait,
                T noWaitResult,
                CompletableFuture<T> future) {
            this.requestKey = requestKey;
            this.replyKey = replyKey;
            this.altReplyKey = altReplyKey;
            this.frame = frame;
            this.handler = handler;
            this.noWait = noWait;
            this.noWaitResult = noWaitResult;
            this.future = future;
        }

        /** A request answered by {@code replyKey} (or {@code altReplyKey}, -1 if none); owns {@code frame}. */
        public static <T> Request<T> of(
                int requestKey,
                int replyKey,
                int altReplyKey,
                ByteBuf frame,
                ReplyHandler<T> handler,
                CompletableFuture<T> future) {
            return new Request<>(requestKey, replyKey, altReplyKey, frame, handler, false, null, future);
        }

        /** A nowait request; the future completes with {@code result} once written. Owns {@code frame}. */
        public static <T> Request<T> noWait(int requestKey, ByteBuf frame, T result, CompletableFuture<T> future) {
            return new Request<>(requestKey, -1, -1, frame, null, true, result, future);
        }

        /**
         * What to do with a reply that comes after this request timed out, its future already failed (a completion
         * of it is ignored): for a reply that changes the broker's state for the channel. Returns this request.
         */
        public Request<T> onLateReply(ReplyHandler<T> handler) {
            this.lateHandler = handler;
            return this;
        }

        /**
         * Runs {@code hook} on the event loop when this request's frame is handed to the outbound path, which fixes its
         * place on the wire among the channel's writes; never for a request that is not sent (timed out while queued,
         * the channel closed). Returns this request.
         */
        public Request<T> onSend(Runnable hook) {
            this.sendHook = hook;
            return this;
        }

        /**
         * As {@link #onSend}, but right before the frame is handed over: what the write itself runs (a writability
         * callback) already sees the request sent. Returns this request.
         */
        public Request<T> beforeSend(Runnable hook) {
            this.beforeSendHook = hook;
            return this;
        }

        public CompletableFuture<T> future() {
            return future;
        }

        /** The request method's class and method ids ({@code MethodIds}). */
        public int requestKey() {
            return requestKey;
        }

        /** Fails this request, never sent, with {@code cause}; releases its frame. */
        public void failUnsent(Throwable cause) {
            releaseFrame();
            future.completeExceptionally(cause);
        }

        void releaseFrame() {
            if (frame != null) {
                frame.release();
                frame = null;
            }
        }
    }

    private final ChannelState channel;
    private final long timeoutNanos;

    // event loop only
    private final ArrayDeque<Request<?>> queue = new ArrayDeque<>();
    /** While {@link #within} runs: how long the requests queued meanwhile may take; 0: the RPC timeout. */
    private long timeoutLeftNanos;

    ChannelRpc(ChannelState channel, long timeoutNanos) {
        this.channel = channel;
        this.timeoutNanos = timeoutNanos;
    }

    /** Queues {@code request}; sends it at once when nothing is on the wire. */
    void enqueue(Request<?> request) {
        assert channel.outbound().inEventLoop() : "channel RPC off the event loop";
        long timeout = timeoutLeftNanos > 0 ? timeoutLeftNanos : timeoutNanos;
        request.timeout =
                channel.outbound().eventLoop().schedule(() -> timedOut(request), timeout, TimeUnit.NANOSECONDS);
        queue.add(request);
        if (queue.size() == 1) {
            sendHead();
        }
    }

    /**
     * Runs {@code send}; what it queues times out {@code leftNanos} after it is queued instead of after the RPC
     * timeout: a method held while the channel recovered spent the rest of its timeout waiting. Event loop.
     */
    void within(long leftNanos, Runnable send) {
        assert channel.outbound().inEventLoop() : "channel RPC off the event loop";
        long outer = timeoutLeftNanos;
        timeoutLeftNanos = Math.max(1, leftNanos);
        try {
            send.run();
        } finally {
            timeoutLeftNanos = outer;
        }
    }

    /** True when a request is waiting for a reply or for its turn. */
    boolean isEmpty() {
        return queue.isEmpty();
    }

    /**
     * Offers a method frame to the head request. Returns true and consumes (releases) the frame when it is
     * the head's reply; returns false, frame untouched, otherwise.
     */
    boolean onReply(int methodKey, Frame frame) {
        assert channel.outbound().inEventLoop() : "channel RPC off the event loop";
        Request<?> head = queue.peek();
        if (head == null || !head.sent || (methodKey != head.replyKey && methodKey != head.altReplyKey)) {
            return false;
        }
        queue.poll();
        head.timeout.cancel(false);
        try {
            if (!head.future.isDone()) {
                complete(head, frame);
            } else if (head.lateHandler != null) {
                completeLate(head, frame); // the late reply of a request that timed out, and it matters
            }
            // else: the late reply of a request that timed out; dropped, as promised
        } catch (AmqpProtocolException e) {
            // the broker broke the protocol in its reply (a get-ok inside another message's content): the request
            // fails, and so does the connection
            head.future.completeExceptionally(e);
            throw e;
        } catch (RuntimeException e) {
            head.future.completeExceptionally(e);
        } finally {
            frame.release();
        }
        sendHead();
        return true;
    }

    private static <T> void complete(Request<T> request, Frame frame) {
        request.handler.onReply(frame, request.future);
    }

    private static <T> void completeLate(Request<T> request, Frame frame) {
        request.lateHandler.onReply(frame, request.future);
    }

    /** Fails every request with {@code cause} and releases the frames not yet sent (channel closing). */
    void failAll(Throwable cause) {
        assert channel.outbound().inEventLoop() : "channel RPC off the event loop";
        Request<?> r;
        while ((r = queue.poll()) != null) {
            r.timeout.cancel(false);
            r.releaseFrame();
            r.future.completeExceptionally(cause);
        }
    }

    private void sendHead() {
        Request<?> head;
        while ((head = queue.peek()) != null && !head.sent) {
            head.sent = true;
            ByteBuf frame = head.frame;
            head.frame = null;
            if (!head.noWait) {
                // acks made while it waited its turn go before it too: after a basic.recover on the wire an ack of a
                // delivery from before it closes the channel (406), and a tx.commit covers them
                channel.flushAcknowledgements();
                if (head.beforeSendHook != null) {
                    // before the write: a callback the write runs (a writability change) already sees the method sent
                    head.beforeSendHook.run();
                }
                channel.outbound().write(frame);
                if (head.sendHook != null) {
                    head.sendHook.run();
                }
                return;
            }
            queue.poll();
            head.timeout.cancel(false);
            completeWhenWritten(head, frame);
        }
    }

    private <T> void completeWhenWritten(Request<T> request, ByteBuf frame) {
        channel.outbound().write(frame, cause -> {
            if (cause == null) {
                request.future.complete(request.noWaitResult);
            } else {
                request.future.completeExceptionally(cause);
            }
        });
    }

    private void timedOut(Request<?> request) {
        if (request.future.isDone()) {
            return;
        }
        if (!request.sent) {
            queue.remove(request);
            request.releaseFrame();
        }
        request.future.completeExceptionally(new RpcTimeoutException(
                "no reply to "
                        + MethodNames.describe(request.requestKey) + " on channel " + channel.number() + " within "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms",
                request.requestKey >>> 16,
                request.requestKey & 0xFFFF,
                channel.number()));
    }
}
