package io.warren.impl.channel;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.AmqpException;
import io.warren.ChannelClosedException;
import io.warren.MessageTooLargeException;
import io.warren.codec.Frame;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.method.MethodIds;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.connection.InboundChannel;
import io.warren.impl.connection.MethodNames;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.connection.Replies;
import io.warren.impl.connection.Requests;
import io.warren.impl.metrics.MetricsCollector;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One channel's protocol state: the inbound dispatch, the synchronous-method queue, content assembly
 * and the close handshake. Owned by the connection's event loop: every method here is event loop only
 * unless it says otherwise. The public face is the client room's channel handle ({@link ChannelHandle}), which hands calls over.
 *
 * <h2>Inbound dispatch</h2>
 * A method frame goes, in this order, to: the close handshake (channel.close / close-ok); a
 * {@link MethodHandler} registered for its class and method ({@link #register}); the head of the RPC queue
 * when it is that request's reply; otherwise, for a basic.deliver / basic.return on a channel with no handler
 * for it (a channel state without consumers or publisher, in tests), the content is assembled and dropped with a
 * warning; anything else is 505 UNEXPECTED_FRAME. A method while a message's content is expected is 505 too.
 * Content header and body frames go to the {@link ContentAssembler} started by {@link #beginContent}.
 *
 * <h2>Close</h2>
 * <ul>
 *   <li>Application close: channel.close is sent, pending requests fail at once with the close's cause
 *       (the broker drops the replies of requests sent before it), every frame but channel.close /
 *       close-ok and those of handlers registered {@link #registerThroughClose through the close} is dropped,
 *       and the number is freed on close-ok.</li>
 *   <li>Broker close: close-ok is sent, everything pending fails with a {@link ChannelClosedException}
 *       carrying the broker's reply code, text, class and method, and the number is freed.</li>
 *   <li>Both at once: the broker's close is answered with close-ok, and the number is freed when the
 *       close-ok for ours arrives.</li>
 * </ul>
 * Two kinds of hook: {@link #onClose} runs when the channel stops being usable (channel.close sent or received,
 * the connection lost); {@link #afterClose} when nothing more is awaited from the broker on it: at once for a
 * broker close or a lost connection, else when close-ok comes for ours (or the broker closes too, the connection
 * ends, or the close times out). Publisher confirms live between the two: RabbitMQ acks and nacks the publishes it
 * read before our channel.close, then answers close-ok.
 */
public final class ChannelState implements InboundChannel {

    private static final Logger LOG = LoggerFactory.getLogger(ChannelState.class);

    enum State {
        OPENING,
        OPEN,
        CLOSING,
        CLOSED
    }

    private final int number;
    private final ConnectionHandler connection;
    private final OutboundPath outbound;
    private final ChannelRpc rpc;
    private final ContentAssembler content;
    private final ChannelHandle facade;
    private final long rpcTimeoutNanos;

    // event loop only
    private State state = State.OPENING;
    private int[] handlerKeys = new int[0];
    private MethodHandler[] handlers = new MethodHandler[0];
    /** Per handler: also dispatched while we wait for close-ok after the application's channel.close. */
    private boolean[] throughClose = new boolean[0];

    private final List<Consumer<AmqpException>> closeHooks = new ArrayList<>(2);
    private final List<Consumer<AmqpException>> afterCloseHooks = new ArrayList<>(2);
    /** Nothing more is awaited from the broker on this channel; the after-close hooks ran. */
    private boolean closeEnded;

    // volatile: a publish refused on another thread reads it while the close-future is not yet complete
    private volatile AmqpException closeCause;
    /** tx.select was called: settlements then keep their order with publishes and tx methods. Any thread. */
    private volatile boolean transactional;
    /** Where a transactional channel's settlements wait their turn; set by the channel's publisher. */
    private TxGate txGate;

    private CompletableFuture<Void> closeRequest;
    private boolean numberFreed;
    private ScheduledFuture<?> closeTimer;

    /**
     * @param handle makes the handle the application holds for this channel (or, for recovery, attaches the one it
     *               held to this state); it registers the publishing and consuming handlers here
     */
    public ChannelState(
            int number,
            ConnectionHandler connection,
            long rpcTimeoutNanos,
            long maxBodySize,
            Function<ChannelState, ChannelHandle> handle) {
        this.number = number;
        this.connection = connection;
        this.outbound = connection.outbound();
        this.rpcTimeoutNanos = rpcTimeoutNanos;
        this.rpc = new ChannelRpc(this, rpcTimeoutNanos);
        this.content = new ContentAssembler(number, maxBodySize, connection.alloc());
        this.facade = handle.apply(this);
    }

    /** The channel number. Any thread. */
    @Override
    public int number() {
        return number;
    }

    /** The connection's one outbound path. Any thread. */
    public OutboundPath outbound() {
        return outbound;
    }

    /** The allocator for frames of this connection. Any thread. */
    public ByteBufAllocator alloc() {
        return connection.alloc();
    }

    /** How long a synchronous request waits for its reply (the connection's RPC timeout). */
    public long rpcTimeoutNanos() {
        return rpcTimeoutNanos;
    }

    public ConnectionHandler connection() {
        return connection;
    }

    /** The public face of this channel. Any thread. */
    public ChannelHandle facade() {
        return facade;
    }

    /** True while requests may be sent: opening or open. */
    public boolean isUsable() {
        return state == State.OPENING || state == State.OPEN;
    }

    /** tx.select was called on this channel. Any thread. */
    public boolean isTransactional() {
        return transactional;
    }

    /** tx.select is being called: from now on settlements keep their order with publishes and tx methods. */
    public void transactional() {
        transactional = true;
    }

    /** The channel's publisher, where a transactional channel's settlements wait their turn. Set once, first. */
    public void txGate(TxGate gate) {
        this.txGate = gate;
    }

    /** See {@link #txGate(TxGate)}; null before the publisher is made. Event loop. */
    public TxGate txGate() {
        return txGate;
    }

    /** Why the channel closed (or is closing), or {@code null} while open. Any thread. */
    public AmqpException closeCause() {
        return closeCause;
    }

    // ---- extension seams -------------------------------------------------------------------------------

    /**
     * Routes inbound {@code classId.methodId} methods on this channel to {@code handler} (replacing an earlier
     * one). Publishing registers basic.ack / basic.nack / basic.return here, consuming basic.deliver /
     * basic.cancel. A handler of a content-carrying method passes its frame to {@link #beginContent}.
     */
    public void register(int classId, int methodId, MethodHandler handler) {
        register(MethodIds.key(classId, methodId), handler, false);
    }

    /**
     * As {@link #register}, and the handler still gets its method between the application's channel.close and
     * close-ok ({@link #isAwaitingCloseOk()}): publisher confirms and the returns they settle, which RabbitMQ
     * sends for what it read before the close.
     */
    public void registerThroughClose(int classId, int methodId, MethodHandler handler) {
        register(MethodIds.key(classId, methodId), handler, true);
    }

    private void register(int key, MethodHandler handler, boolean whileClosing) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        for (int i = 0; i < handlerKeys.length; i++) {
            if (handlerKeys[i] == key) {
                handlers[i] = handler;
                throughClose[i] = whileClosing;
                return;
            }
        }
        // A few handlers per channel: a linear scan of an int[] beats hashing a boxed key.
        int n = handlerKeys.length + 1;
        handlerKeys = Arrays.copyOf(handlerKeys, n);
        handlers = Arrays.copyOf(handlers, n);
        throughClose = Arrays.copyOf(throughClose, n);
        handlerKeys[n - 1] = key;
        handlers[n - 1] = handler;
        throughClose[n - 1] = whileClosing;
    }

    /**
     * Starts assembling the content that follows {@code methodFrame} (ownership taken); {@code listener}
     * receives the whole message, or {@code onAbort} when the channel closes first.
     */
    public void beginContent(Frame methodFrame, ContentAssembler.Listener listener) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        content.begin(methodFrame, listener);
    }

    /** As {@link #beginContent(Frame, ContentAssembler.Listener)} with a method payload (ownership taken). */
    public void beginContent(ByteBuf methodPayload, ContentAssembler.Listener listener) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        content.begin(methodPayload, listener);
    }

    /**
     * Runs {@code hook} once when the channel closes, for whatever reason (application, broker, connection);
     * at once if it is already closed. Publishing fails its unconfirmed messages here, consuming its consumers.
     */
    public void onClose(Consumer<AmqpException> hook) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        if (state == State.CLOSING || state == State.CLOSED) {
            hook.accept(closeCause);
        } else {
            closeHooks.add(hook);
        }
    }

    /**
     * Runs {@code hook} once when nothing more is awaited from the broker on this channel (see the class comment),
     * after the {@link #onClose} hooks, with what ended the wait: the close's cause at close-ok or timeout, the
     * broker's close, or the connection's end. At once if that has happened already.
     */
    public void afterClose(Consumer<AmqpException> hook) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        if (closeEnded) {
            hook.accept(closeCause);
        } else {
            afterCloseHooks.add(hook);
        }
    }

    /** True between the application's channel.close and the end of the wait for its close-ok. */
    public boolean isAwaitingCloseOk() {
        return state == State.CLOSING && !closeEnded;
    }

    /**
     * Queues a synchronous request, or fails it when the channel is no longer usable. The request's frame
     * is released in either case.
     */
    public void call(ChannelRpc.Request<?> request) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        if (!isUsable()) {
            request.releaseFrame();
            request.future().completeExceptionally(closedError());
            return;
        }
        facade.flushAcknowledgements(); // acks made before this request go before it (a tx.commit must cover them)
        rpc.enqueue(request);
    }

    /**
     * Runs {@code send}, whose requests time out {@code leftNanos} after they are queued instead of after the RPC
     * timeout (see {@link ChannelRpc#within}). Event loop.
     */
    public void callWithin(long leftNanos, Runnable send) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        rpc.within(leftNanos, send);
    }

    /** Writes the acknowledgements the channel holds, if any: before a synchronous method it sends. Event loop. */
    void flushAcknowledgements() {
        assert outbound.inEventLoop() : "channel state off the event loop";
        facade.flushAcknowledgements();
    }

    /** Writes an asynchronous method (basic.ack, ...) if the channel is usable; releases it otherwise. */
    public void send(ByteBuf frame) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        if (!isUsable()) {
            frame.release();
            return;
        }
        outbound.write(frame);
    }

    /** The exception for an operation on a closed channel: names the channel and carries why it closed. */
    public ChannelClosedException closedError() {
        AmqpException cause = closeCause;
        if (cause instanceof ChannelClosedException cce) {
            return new ChannelClosedException(
                    "channel " + number + " is closed: " + cause.getMessage(),
                    cause,
                    cce.replyCode(),
                    cce.replyText(),
                    cce.classId(),
                    cce.methodId(),
                    number,
                    cce.initiatedByBroker());
        }
        return new ChannelClosedException(
                "channel " + number + " is closed" + (cause == null ? "" : ": " + cause.getMessage()),
                cause,
                cause == null ? 0 : cause.replyCode(),
                cause == null ? null : cause.replyText(),
                0,
                0,
                number,
                false);
    }

    // ---- open --------------------------------------------------------------------------------------------

    public void open(CompletableFuture<io.warren.Channel> result) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        CompletableFuture<Void> opened = new CompletableFuture<>();
        rpc.enqueue(ChannelRpc.Request.of(
                MethodIds.CHANNEL_OPEN,
                MethodIds.CHANNEL_OPEN_OK,
                -1,
                Requests.channelOpen(alloc(), number),
                (frame, f) -> f.complete(null),
                opened));
        opened.whenComplete((v, e) -> {
            if (e == null) {
                if (state == State.OPENING) {
                    state = State.OPEN;
                    facade.markOpen();
                    MetricsCollector metrics = connection.metrics();
                    metrics.channelOpened();
                    onClose(cause -> metrics.channelClosed());
                }
                result.complete(facade);
            } else {
                result.completeExceptionally(e);
                if (state == State.OPENING) {
                    // open-ok never came (timeout): close so the number is freed by the handshake
                    close(ReplyCode.REPLY_SUCCESS, "open failed", e);
                }
            }
        });
    }

    // ---- inbound -----------------------------------------------------------------------------------------

    /** One frame for this channel (ownership taken). */
    @Override
    public void onFrame(Frame frame) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        switch (frame.type()) {
            case METHOD -> onMethod(frame);
            case HEADER -> {
                if (!content.isActive() && state == State.CLOSING) {
                    frame.release(); // content of a method dropped while closing
                    return;
                }
                try {
                    content.onHeader(frame);
                } catch (MessageTooLargeException e) {
                    LOG.warn("{}; closing channel {}", e.getMessage(), number);
                    close(ReplyCode.CONTENT_TOO_LARGE, "message body over the client's limit", e);
                }
            }
            case BODY -> {
                if (!content.isActive() && state == State.CLOSING) {
                    frame.release();
                    return;
                }
                content.onBody(frame);
            }
            default -> {
                FrameType type = frame.type(); // a released frame is recycled: read first
                frame.release();
                throw new AmqpProtocolException(
                        ReplyCode.UNEXPECTED_FRAME, "unexpected " + type + " frame", null, number, -1, -1, -1);
            }
        }
    }

    private void onMethod(Frame frame) {
        ByteBuf payload = frame.payload();
        int key = payload.getInt(payload.readerIndex());
        if (content.isActive()
                && key != MethodIds.BASIC_DELIVER
                && key != MethodIds.BASIC_GET_OK
                && key != MethodIds.BASIC_RETURN) {
            // a content-carrying method's own case is ContentAssembler.begin's; any other must wait for the content
            frame.release();
            throw content.unexpected(MethodNames.describe(key) + " arrived while a message's content was expected");
        }
        if (key == MethodIds.CHANNEL_CLOSE) {
            onBrokerClose(frame);
            return;
        }
        if (key == MethodIds.CHANNEL_CLOSE_OK) {
            onCloseOk(frame);
            return;
        }
        if (state == State.CLOSING || state == State.CLOSED) {
            // After channel.close is sent the spec says: ignore everything but close and close-ok. Confirms are
            // the exception: RabbitMQ sends them for what it read before the close, and they decide outcomes.
            if (isAwaitingCloseOk()) {
                for (int i = 0; i < handlerKeys.length; i++) {
                    if (handlerKeys[i] == key && throughClose[i]) {
                        handlers[i].onMethod(this, frame);
                        return;
                    }
                }
            }
            frame.release();
            return;
        }
        for (int i = 0; i < handlerKeys.length; i++) {
            if (handlerKeys[i] == key) {
                handlers[i].onMethod(this, frame);
                return;
            }
        }
        if (key == MethodIds.CHANNEL_FLOW) {
            // a channel without a publisher (the publisher registers for it, and holds its publishes): answered
            boolean active = Replies.channelFlowActive(frame);
            frame.release();
            outbound.write(Requests.channelFlowOk(alloc(), number, active));
            return;
        }
        if (rpc.onReply(key, frame)) {
            return;
        }
        if (key == MethodIds.BASIC_DELIVER || key == MethodIds.BASIC_RETURN) {
            LOG.warn("channel {}: {} with nobody to take it; dropped", number, MethodNames.describe(key));
            content.begin(frame, AssembledContent::release);
            return;
        }
        frame.release();
        throw new AmqpProtocolException(
                ReplyCode.UNEXPECTED_FRAME,
                "unexpected " + MethodNames.describe(key) + " (no request waits for it)",
                null,
                number,
                MethodIds.classId(key),
                MethodIds.methodId(key),
                -1);
    }

    private void onBrokerClose(Frame frame) {
        Replies.Close close = Replies.close(frame);
        frame.release();
        // close-ok first: the number may be reused right after, and writes keep their order.
        outbound.write(Requests.channelCloseOk(alloc(), number));
        ChannelClosedException cause = new ChannelClosedException(
                "channel " + number + " closed by the broker: " + close.describe(),
                null,
                close.replyCode(),
                close.replyText(),
                close.classId(),
                close.methodId(),
                number,
                true);
        if (state == State.CLOSING) {
            // Both sides closed at once: ours stands; the number is freed on the close-ok for ours. The broker
            // sends nothing more after its close: the wait ends with its cause.
            LOG.debug("channel {}: broker closed while we were closing: {}", number, close.describe());
            endClose(cause);
            completeCloseRequest();
            return;
        }
        LOG.debug("channel {} closed by the broker: {}", number, close.describe());
        shutDown(facade.brokerCloseCause(cause), State.CLOSED);
        freeNumber();
        completeCloseRequest();
    }

    private void onCloseOk(Frame frame) {
        frame.release();
        if (state != State.CLOSING) {
            throw new AmqpProtocolException(
                    ReplyCode.UNEXPECTED_FRAME, "channel.close-ok without channel.close", null, number, 20, 41, -1);
        }
        state = State.CLOSED;
        cancelCloseTimer();
        endClose(closeCause);
        freeNumber();
        completeCloseRequest();
    }

    private void cancelCloseTimer() {
        if (closeTimer != null) {
            closeTimer.cancel(false);
            closeTimer = null;
        }
    }

    // ---- close -------------------------------------------------------------------------------------------

    /**
     * Application close (or a client-side error such as an oversized message): sends channel.close and fails
     * everything pending with the close's cause. {@code result} (may be null) completes on close-ok.
     */
    public void close(int replyCode, String replyText, Throwable error) {
        close(replyCode, replyText, error, null);
    }

    public void close(int replyCode, String replyText, Throwable error, CompletableFuture<Void> result) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        if (state == State.CLOSED) {
            if (result != null) {
                result.complete(null);
            }
            return;
        }
        if (state == State.CLOSING) {
            if (result != null) {
                if (closeRequest == null) {
                    closeRequest = result;
                } else {
                    closeRequest.whenComplete((v, e) -> result.complete(null));
                }
            }
            return;
        }
        closeRequest = result;
        facade.flushAcknowledgements(); // acks made before the close go before it, or the broker would requeue their
        // messages
        outbound.write(Requests.channelClose(alloc(), number, replyCode, replyText));
        // A broker that never answers must not hang close(): after the RPC timeout the caller is told, but
        // the number stays reserved until close-ok (or the connection's end), so it is never reused early.
        closeTimer = outbound.eventLoop()
                .schedule(
                        () -> {
                            if (state == State.CLOSING) {
                                LOG.debug(
                                        "channel {}: no close-ok within the RPC timeout; number kept until it comes",
                                        number);
                                endClose(closeCause);
                                completeCloseRequest();
                            }
                        },
                        rpcTimeoutNanos,
                        TimeUnit.NANOSECONDS);
        String text = replyCode == ReplyCode.REPLY_SUCCESS && error == null
                ? "channel " + number + " closed by the application"
                : "channel " + number + " closed by the client: " + replyCode + " " + replyText;
        shutDown(new ChannelClosedException(text, error, replyCode, replyText, 0, 0, number, false), State.CLOSING);
    }

    /** The connection is gone: everything fails with {@code cause}; nothing is written. */
    @Override
    public void onConnectionClosed(AmqpException cause) {
        assert outbound.inEventLoop() : "channel state off the event loop";
        if (state != State.CLOSED && state != State.CLOSING) {
            shutDown(cause, State.CLOSED);
        }
        state = State.CLOSED;
        cancelCloseTimer();
        endClose(cause);
        completeCloseRequest();
    }

    /**
     * Moves to {@code next} first, so that code run by the futures completed here (user callbacks run inline
     * on the event loop) finds the channel closed and cannot send on it; then fails what is pending.
     */
    private void shutDown(AmqpException cause, State next) {
        state = next;
        closeCause = cause;
        boolean wasOpen = facade.stopOpen(); // before the futures below wake anyone: isOpen() is false by then
        rpc.failAll(cause);
        // a basic.return begun before the application's close still comes whole: its publish's ack follows it
        content.abortAtClose(cause);
        facade.markClosed(cause, wasOpen);
        List<Consumer<AmqpException>> hooks = new ArrayList<>(closeHooks);
        closeHooks.clear();
        runHooks(hooks, cause);
        if (next == State.CLOSED) {
            endClose(cause);
        }
    }

    /** Nothing more is awaited from the broker: the after-close hooks run with {@code cause}. Once. */
    private void endClose(AmqpException cause) {
        if (closeEnded) {
            return;
        }
        closeEnded = true;
        content.abort(cause); // a basic.return begun while closing, cut off by the connection's end
        List<Consumer<AmqpException>> hooks = new ArrayList<>(afterCloseHooks);
        afterCloseHooks.clear();
        runHooks(hooks, cause);
    }

    private void runHooks(List<Consumer<AmqpException>> hooks, AmqpException cause) {
        for (Consumer<AmqpException> hook : hooks) {
            try {
                hook.accept(cause);
            } catch (RuntimeException e) {
                LOG.warn("channel {}: close hook failed", number, e);
            }
        }
    }

    private void completeCloseRequest() {
        if (closeRequest != null) {
            CompletableFuture<Void> r = closeRequest;
            closeRequest = null;
            r.complete(null);
        }
    }

    private void freeNumber() {
        if (!numberFreed) {
            numberFreed = true;
            connection.channelClosed(this);
        }
    }
}
