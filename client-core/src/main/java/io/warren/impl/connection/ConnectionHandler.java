package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.Address;
import io.warren.AmqpException;
import io.warren.AuthenticationException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.ConnectionTimeoutException;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.PassThroughInboundHandler;
import io.warren.codec.ProtocolVersionMismatchException;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.method.ConnectionBlocked;
import io.warren.codec.method.ConnectionClose;
import io.warren.codec.method.MethodIds;
import io.warren.impl.metrics.MetricsCollector;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection's protocol state, after the {@link FrameDecoder} in the pipeline: the handshake, the
 * demultiplexing of frames to channels by number, heartbeats, connection.blocked, and the close
 * handshake in both directions. Every method runs on the connection's event loop; the public face is
 * the client room's connection handle ({@link ConnectionEvents}), which hands calls over through the {@link OutboundPath}.
 *
 * <p>Every {@link Frame} read here is released exactly once: here, or by the channel it is passed to.
 * A malformed frame ({@link AmqpProtocolException} from the decoder or from a channel) closes the connection
 * with the exception's reply code (501-505) and a {@link ConnectionClosedException} that names it.
 * After an error in the decoder itself, which then reads nothing more, the socket closes as soon as
 * connection.close is written: a close-ok could not be read.
 */
public final class ConnectionHandler extends PassThroughInboundHandler implements Handshake.Callbacks {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionHandler.class);

    /**
     * After a frame-level error the socket closes once connection.close is written, and after the broker's
     * connection.close once close-ok is written; this bounds the wait for that write (a peer that does not read),
     * when it is shorter than the close timeout.
     */
    public static final long CLOSE_WRITE_GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);

    enum State {
        HANDSHAKE,
        OPEN,
        CLOSING,
        CLOSED
    }

    private final ConnectionOptions options;
    private final Address address;
    /**
     * Completed with {@link #facade} at open-ok, or failed. Typed {@code Object}: the constructor took it as a
     * future of the facade's own type (a lambda completing it would cost a fresh JVM's first connect its class).
     */
    private final CompletableFuture<Object> connected;

    private final ConnectionEvents facade;
    private final long rpcTimeoutNanos;
    private final MetricsCollector metrics;

    // set once in handlerAdded, then read-only
    private ChannelHandlerContext ctx;
    private OutboundPath outbound;
    private Heartbeats heartbeats;
    private LoopShutdownWatch loopWatch;
    private Handshake handshake;

    // event loop only
    private State state = State.HANDSHAKE;
    /** connection.update-secret; made at open-ok. */
    private SecretRefresher secrets;
    /** Reached open-ok, so counted in the open connections until {@link #finish()}. */
    private boolean countedOpen;

    private ChannelTable channels;
    private AmqpException closeCause;
    private AmqpException connectFailure;
    private ScheduledFuture<?> closeTimer;
    /** connection.close-ok went out for the broker's connection.close: a later close from it is discarded. */
    private boolean closeOkSent;
    /** Consumers' queues over their high-water mark: reading stays paused while above 0. */
    private int readPauses;
    /** Recovery is restoring channels and consumers onto this connection: pauses are counted, not applied. */
    private boolean restoring;
    /** {@link #readBatchNanos()}: the clock as read in this read batch, once read. */
    private long readBatchNanos;

    private boolean readBatchTimed;

    /**
     * @param connected completed with the connection's handle at connection.open-ok, or failed with why the
     *                  connection could not be opened (authentication, virtual host, timeout, socket)
     * @param handle    makes (or, for recovery, returns) the handle the application holds for this connection
     */
    public <H extends ConnectionEvents> ConnectionHandler(
            ConnectionOptions options,
            Address address,
            CompletableFuture<H> connected,
            Function<ConnectionHandler, H> handle,
            MetricsCollector metrics) {
        this.metrics = metrics;
        this.options = options;
        this.address = address;
        @SuppressWarnings("unchecked") // completed with facade, an H, only
        CompletableFuture<Object> anyConnected = (CompletableFuture<Object>) (CompletableFuture<?>) connected;
        this.connected = anyConnected;
        this.rpcTimeoutNanos = options.rpcTimeout().toNanos();
        this.facade = handle.apply(this);
    }

    // ---- accessors (any thread unless noted) -------------------------------------------------------------

    public ConnectionEvents facade() {
        return facade;
    }

    /** The client's metrics ({@link MetricsCollector#NOOP} when disabled). */
    public MetricsCollector metrics() {
        return metrics;
    }

    /** The connection's one outbound path. */
    public OutboundPath outbound() {
        return outbound;
    }

    /** The handler's place in its pipeline; null before it is added. */
    public ChannelHandlerContext context() {
        return ctx;
    }

    public ByteBufAllocator alloc() {
        return ctx.alloc();
    }

    public ConnectionOptions options() {
        return options;
    }

    /** Where the handshake is, for timeout messages. Event loop. */
    public String stageDescription() {
        return handshake == null ? "connecting" : handshake.stage().description;
    }

    // ---- pipeline events ---------------------------------------------------------------------------------

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.outbound = new OutboundPath(ctx, options.publishOptions());
        this.heartbeats = new Heartbeats(outbound, ctx.alloc(), new MissedHeartbeats());
        this.handshake = new Handshake(options, outbound, ctx.alloc(), this);
        this.loopWatch = new LoopShutdownWatch(ctx.executor(), new LoopShutDown());
        facade.outboundReady(this);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        loopWatch.start(); // a loop already going closes the socket at once: no handshake then
        if (ctx.channel().isActive()) {
            handshake.start();
        }
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof Frame frame)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        outbound.beginReadBatch();
        heartbeats.onRead();
        try {
            onFrame(frame);
        } catch (AmqpProtocolException e) {
            protocolError(e);
        } catch (AmqpException e) {
            // the handshake refused something (a SASL mechanism the broker does not offer)
            failHandshake(e);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        readBatchTimed = false;
        heartbeats.onReadComplete();
        outbound.endReadBatch();
        ctx.fireChannelReadComplete();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof ProtocolVersionMismatchException e) {
            failHandshake(new ConnectionClosedException(address + " does not speak AMQP 0-9-1: " + e.getMessage(), e));
        } else if (cause instanceof AmqpProtocolException e) {
            protocolError(e);
        } else if (state != State.CLOSED) {
            String what = cause instanceof javax.net.ssl.SSLException
                            || cause.getCause() instanceof javax.net.ssl.SSLException
                    ? "TLS failure"
                    : "I/O failure";
            LOG.debug("connection to {}: {}", address, what, cause);
            recordCause(new ConnectionClosedException(
                    "connection to " + address + " lost: " + what + ": " + cause + handshake.oversizedStartOk(),
                    cause));
            ctx.close();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        outbound.writabilityChanged();
        ctx.fireChannelWritabilityChanged();
    }

    /**
     * Stops or resumes reading from the socket: the consumer side's back-pressure (an InboundMessageQueue
     * that reports "unwritable"). While reading is paused the broker's silence is not held against it by
     * the heartbeat check.
     */
    public void autoRead(boolean on) {
        assert outbound.inEventLoop() : "connection state off the event loop";
        ctx.channel().config().setAutoRead(on);
        heartbeats.readingPaused(!on);
    }

    /**
     * A consumer's queue reached its high-water mark: stop reading. Counted over the connection's consumers,
     * so reading resumes only when every queue that asked has drained ({@link #resumeReading()}).
     */
    public void pauseReading() {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (readPauses++ == 0 && !restoring) {
            autoRead(false);
        }
    }

    /** A consumer's queue fell below its low-water mark after {@link #pauseReading()}. */
    public void resumeReading() {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (readPauses > 0 && --readPauses == 0 && !restoring) {
            autoRead(true);
        }
    }

    /**
     * Recovery starts ({@code true}) or ends restoring onto this connection. Meanwhile the pauses that consumers
     * carry over from the lost connection are counted but reading goes on: the restore's own replies (the next
     * consumer's consume-ok) must be read, or a consumer the application keeps paused would stall the recovery
     * for ever. When it ends, reading stops if any pause is still counted.
     */
    public void restoring(boolean on) {
        assert outbound.inEventLoop() : "connection state off the event loop";
        restoring = on;
        if (!on && readPauses > 0 && ctx.channel().isOpen()) {
            autoRead(false);
        }
    }

    /** How many consumers' queues hold reading paused now. Event loop. */
    public int readPauses() {
        return readPauses;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        finish();
        ctx.fireChannelInactive();
    }

    // ---- inbound -----------------------------------------------------------------------------------------

    private void onFrame(Frame frame) {
        if (state == State.CLOSED) {
            frame.release();
            return;
        }
        int channel = frame.channel();
        if (channel == 0) {
            try {
                if (frame.type() == FrameType.METHOD) {
                    ByteBuf p = frame.payload();
                    onConnectionMethod(p.getInt(p.readerIndex()), frame);
                }
                // heartbeats: their arrival was all that mattered
            } finally {
                frame.release();
            }
            return;
        }
        if (state == State.HANDSHAKE) {
            FrameType type = frame.type(); // a released frame is recycled: read first
            frame.release();
            throw new AmqpProtocolException(
                    ReplyCode.UNEXPECTED_FRAME,
                    "frame on channel " + channel + " before connection.open-ok",
                    type,
                    channel,
                    -1,
                    -1,
                    -1);
        }
        if (state != State.OPEN) {
            frame.release(); // closing: the spec says discard all but close/close-ok
            return;
        }
        InboundChannel target = channels.get(channel);
        if (target == null) {
            // A channel stays in the table until its close-ok, and the broker sends nothing after its own close:
            // a frame here is for a channel that was never opened.
            FrameType type = frame.type(); // a released frame is recycled: read first
            frame.release();
            throw new AmqpProtocolException(
                    ReplyCode.CHANNEL_ERROR,
                    "frame on channel " + channel + ", which is not open",
                    type,
                    channel,
                    -1,
                    -1,
                    -1);
        }
        target.onFrame(frame);
    }

    /** A method on channel 0; the frame is borrowed. */
    private void onConnectionMethod(int key, Frame frame) {
        if (key == MethodIds.CONNECTION_CLOSE) {
            onBrokerClose(frame);
        } else if (key == MethodIds.CONNECTION_CLOSE_OK) {
            if (state == State.CLOSING) {
                outbound.flushNow(); // what this read batch wrote (our connection.close) is not dropped by the close
                ctx.close();
            }
        } else if (state == State.HANDSHAKE) {
            handshake.onMethod(key, frame);
        } else if (state == State.CLOSING) {
            // only close and close-ok matter now
        } else if (key == MethodIds.CONNECTION_BLOCKED) {
            ByteBuf p = frame.payload();
            facade.blocked(new ConnectionBlocked().wrap(p, p.readerIndex()).reasonAsString());
        } else if (key == MethodIds.CONNECTION_UNBLOCKED) {
            facade.unblocked();
        } else if (key == MethodIds.CONNECTION_UPDATE_SECRET_OK) {
            secrets.onUpdateSecretOk();
        } else {
            // Channel 0 is the connection's: another class's method there uses a channel nobody opened (504, as
            // RabbitMQ answers it); a connection method out of its sequence is an invalid command (503).
            boolean connectionClass = MethodIds.classId(key) == ConnectionClose.CLASS_ID;
            throw new AmqpProtocolException(
                    connectionClass ? ReplyCode.COMMAND_INVALID : ReplyCode.CHANNEL_ERROR,
                    "unexpected " + MethodNames.describe(key) + " on channel 0 of an open connection",
                    FrameType.METHOD,
                    0,
                    MethodIds.classId(key),
                    MethodIds.methodId(key),
                    -1);
        }
    }

    // ---- handshake callbacks -----------------------------------------------------------------------------

    @Override
    public void tuned(Handshake.Tuned tuned) {
        // channel-max 0 means "no limit": the wire's limit, 65535.
        channels = new ChannelTable(tuned.channelMax() == 0 ? 0xFFFF : tuned.channelMax());
        FrameDecoder decoder = ctx.pipeline().get(FrameDecoder.class);
        if (decoder != null) {
            decoder.setFrameMax(tuned.frameMax());
        }
        facade.tuned(channels.channelMax(), tuned.frameMax(), tuned.heartbeat());
        heartbeats.start(tuned.heartbeat());
    }

    @Override
    public void opened(Map<String, Object> serverProperties) {
        state = State.OPEN;
        metrics.connectionOpened();
        countedOpen = true;
        facade.attach(this, address); // a recovery's new connection takes the facade over (no-op otherwise)
        facade.opened(serverProperties);
        secrets = new SecretRefresher(
                outbound,
                ctx.alloc(),
                ctx.executor(),
                options.credentialsProvider(),
                address,
                rpcTimeoutNanos,
                facade.frameMax());
        if (options.credentialsProvider() != null) {
            secrets.start(handshake.credentials());
        }
        LOG.debug(
                "connected to {} (vhost '{}', {} {})",
                address,
                options.virtualHost(),
                serverProperties.get("product"),
                serverProperties.get("version"));
        connected.complete(facade);
    }

    @Override
    public void failed(AmqpException cause) {
        failHandshake(cause);
    }

    /** The update-secret side, null before open-ok (tests). Event loop. */
    public SecretRefresher secrets() {
        return secrets;
    }

    /** connection.update-secret; {@code result} completes on update-secret-ok. */
    public void updateSecret(String newSecret, String reason, CompletableFuture<Void> result) {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (state != State.OPEN) {
            result.completeExceptionally(closedError());
            return;
        }
        secrets.update(newSecret, reason, result);
    }

    // ---- channels ----------------------------------------------------------------------------------------

    /** The channels by number, for tests. Event loop only; null before tune. */
    public ChannelTable channelTable() {
        return channels;
    }

    /**
     * A channel on a free number, made by {@code create}; null, with {@code result} failed, when the connection is
     * not open or every number up to the channel-max is in use. The caller opens it.
     */
    public <C extends InboundChannel> C allocateChannel(IntFunction<C> create, CompletableFuture<?> result) {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (state != State.OPEN) {
            result.completeExceptionally(closedError());
            return null;
        }
        C channel = channels.allocate(create);
        if (channel == null) {
            result.completeExceptionally(new AmqpException("no free channel number on " + address + ": all "
                    + channels.channelMax() + " (the negotiated channel-max) are in use"));
        }
        return channel;
    }

    /**
     * Recovery: as {@link #allocateChannel(IntFunction, CompletableFuture)} on number {@code n}, the number the
     * recovered channel had.
     */
    public <C extends InboundChannel> C allocateChannel(int n, IntFunction<C> create, CompletableFuture<?> result) {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (state != State.OPEN) {
            result.completeExceptionally(closedError());
            return null;
        }
        C channel = channels.allocate(n, create);
        if (channel == null) {
            result.completeExceptionally(new AmqpException("channel " + n + " cannot be recovered on " + address
                    + ": over the negotiated channel-max " + channels.channelMax() + " or in use"));
        }
        return channel;
    }

    /** The RPC timeout of the connection's options, in nanoseconds. */
    public long rpcTimeoutNanos() {
        return rpcTimeoutNanos;
    }

    /**
     * The event loop's clock, read once per read batch (by the first caller in it): when the deliveries of this
     * batch arrived, close enough for their age ({@code ChannelConsumers}) at no clock read per delivery.
     */
    public long readBatchNanos() {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (!readBatchTimed) {
            readBatchTimed = true;
            readBatchNanos = outbound.eventLoop().ticker().nanoTime();
        }
        return readBatchNanos;
    }

    /** True once connection.open-ok came and until closing starts. Event loop. */
    public boolean isOpen() {
        return state == State.OPEN;
    }

    /** The event loop that owns this connection (recovery reconnects on it). */
    public io.netty.channel.EventLoop eventLoop() {
        return ctx.channel().eventLoop();
    }

    /** Closes a connection nobody wants (recovery that was stopped meanwhile). */
    public void closeQuietly() {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (state == State.OPEN) {
            close(ReplyCode.REPLY_SUCCESS, "OK", new CompletableFuture<>());
        }
    }

    /** The channel's number may be reused: the broker has forgotten it. */
    public void channelClosed(InboundChannel channel) {
        assert outbound.inEventLoop() : "connection state off the event loop";
        if (channels != null) {
            channels.remove(channel);
        }
    }

    /** Number of channels holding a number (open, opening or awaiting close-ok). Event loop. */
    public int channelCount() {
        return channels == null ? 0 : channels.size();
    }

    // ---- close -------------------------------------------------------------------------------------------

    /**
     * Application close: connection.close, then close-ok or the close timeout, then the socket. A blocked
     * connection may never get close-ok from RabbitMQ, hence the timeout. {@code result} completes once the
     * socket is closed.
     */
    public void close(int replyCode, String replyText, CompletableFuture<Void> result) {
        assert outbound.inEventLoop() : "connection state off the event loop";
        ctx.channel().closeFuture().addListener(new CompleteOnClose(result));
        switch (state) {
            case HANDSHAKE -> {
                failHandshake(new ConnectionClosedException(
                        "connection to " + address + " closed by the application during the handshake", null));
            }
            case OPEN -> {
                ConnectionClosedException cause = closedByApplication(address, replyCode, replyText);
                startClosing(cause, replyCode, replyText, 0, 0, true);
            }
            default -> {
                // closing already: the socket close completes the result
            }
        }
    }

    /**
     * Sends connection.close and closes the socket on close-ok, or after the close timeout. When the frame
     * decoder has failed ({@code closeOkReadable} false) close-ok could never be read: the socket closes as soon
     * as connection.close is written (the peer learns why; waiting for its answer would only hold the caller),
     * and no later than {@link #CLOSE_WRITE_GRACE_NANOS}.
     */
    private void startClosing(
            AmqpException cause, int replyCode, String replyText, int classId, int methodId, boolean closeOkReadable) {
        recordCause(cause);
        state = State.CLOSING;
        facade.closing();
        failChannels(closeCause);
        ByteBuf close = Requests.connectionClose(ctx.alloc(), replyCode, replyText, classId, methodId);
        if (closeOkReadable) {
            outbound.write(close);
            armCloseTimer(new CloseTimeout(CloseTimeout.NO_CLOSE_OK), Long.MAX_VALUE);
        } else {
            outbound.write(close, failure -> ctx.close()); // written or not: nothing more to wait for
            outbound.flushNow();
            armCloseTimer(new CloseTimeout(CloseTimeout.CLOSE_NOT_WRITTEN), CLOSE_WRITE_GRACE_NANOS);
        }
    }

    // The close path's callbacks are named classes, not lambdas: each lambda is a class a fresh JVM generates at its
    // first use, and a program's first close pays for it.

    /** Completes an application's close once the socket is closed. */
    private static final class CompleteOnClose implements ChannelFutureListener {
        private final CompletableFuture<Void> result;

        CompleteOnClose(CompletableFuture<Void> result) {
            this.result = result;
        }

        @Override
        public void operationComplete(ChannelFuture closed) {
            result.complete(null);
        }
    }

    /**
     * No close-ok in time; or connection.close (after a frame error), or close-ok (after the broker's close), not
     * written within the grace.
     */
    private final class CloseTimeout implements Runnable {
        static final int NO_CLOSE_OK = 0;
        static final int CLOSE_NOT_WRITTEN = 1;
        static final int CLOSE_OK_NOT_WRITTEN = 2;

        private final int reason;

        CloseTimeout(int reason) {
            this.reason = reason;
        }

        @Override
        public void run() {
            switch (reason) {
                case CLOSE_NOT_WRITTEN ->
                    LOG.debug("connection.close to {} not written within the grace; closing the socket", address);
                case CLOSE_OK_NOT_WRITTEN ->
                    LOG.debug("connection.close-ok to {} not written within the grace; closing the socket", address);
                default ->
                    LOG.debug(
                            "no connection.close-ok from {} within {}; closing the socket",
                            address,
                            options.closeTimeout());
            }
            ctx.close();
        }
    }

    private void onBrokerClose(Frame frame) {
        if (closeOkSent) {
            return; // answered already: the spec has the rest discarded, and a peer repeating it must not hold us open
        }
        Replies.Close close = Replies.close(frame);
        ConnectionClosedException cause;
        if (state == State.HANDSHAKE) {
            cause = handshakeRefusal(close);
            connectFailure = cause;
        } else {
            cause = closedByBroker("connection to " + address + " closed by the broker: ", close);
        }
        recordCause(cause);
        if (state == State.OPEN || state == State.HANDSHAKE) {
            LOG.debug("connection to {} closed by the broker: {}", address, close.describe());
        }
        state = State.CLOSING;
        facade.closing();
        failChannels(closeCause);
        // The broker closes the socket once it has our close-ok; we close it too, in case it does not, once close-ok
        // is written, or after the grace when a peer that stopped reading keeps it (and what was queued before it)
        // from being written.
        closeOkSent = true;
        outbound.write(Requests.connectionCloseOk(ctx.alloc()), c -> ctx.close());
        armCloseTimer(new CloseTimeout(CloseTimeout.CLOSE_OK_NOT_WRITTEN), CLOSE_WRITE_GRACE_NANOS);
    }

    /**
     * Closes the socket after {@code nanos} (bounded by the close timeout) unless it closes first. A timer already
     * armed is replaced when this one is sooner (the broker's connection.close crossing ours), and kept otherwise:
     * the wait is only ever shortened.
     */
    private void armCloseTimer(CloseTimeout timeout, long nanos) {
        long delay = Math.min(options.closeTimeout().toNanos(), nanos);
        if (closeTimer != null) {
            if (closeTimer.getDelay(TimeUnit.NANOSECONDS) <= delay) {
                return;
            }
            closeTimer.cancel(false);
        }
        closeTimer = ctx.executor().schedule(timeout, delay, TimeUnit.NANOSECONDS);
    }

    private ConnectionClosedException handshakeRefusal(Replies.Close close) {
        if (close.replyCode() == ReplyCode.ACCESS_REFUSED && handshake.stage() == Handshake.Stage.AUTHENTICATING) {
            return new AuthenticationException(
                    "authentication failed for user '" + handshake.username() + "' on " + address + " with "
                            + options.authMechanism() + ": " + close.describe(),
                    null,
                    close.replyCode(),
                    close.replyText(),
                    close.classId(),
                    close.methodId());
        }
        return closedByBroker(
                "the broker at " + address + " refused the connection (" + handshake.stage().description + "): ",
                close);
    }

    /** The exception for the broker's connection.close: {@code message} followed by the close's description. */
    private static ConnectionClosedException closedByBroker(String message, Replies.Close close) {
        return new ConnectionClosedException(
                message + close.describe(),
                null,
                close.replyCode(),
                close.replyText(),
                close.classId(),
                close.methodId(),
                true);
    }

    /** Malformed or unexpected input: close with its reply code and an exception that names it. */
    private void protocolError(AmqpProtocolException e) {
        if (state == State.CLOSED) {
            return;
        }
        LOG.warn("protocol error on the connection to {}: {}", address, e.getMessage());
        ConnectionClosedException cause = new ConnectionClosedException(
                "connection to " + address + " closed by the client after a protocol error: " + e.getMessage(),
                e,
                e.replyCode(),
                e.detail(),
                Math.max(e.classId(), 0),
                Math.max(e.methodId(), 0),
                false);
        if (state == State.HANDSHAKE) {
            connectFailure = new ConnectionClosedException(
                    "could not connect to " + address + ": protocol error while " + handshake.stage().description + ": "
                            + e.getMessage(),
                    e,
                    e.replyCode(),
                    e.detail(),
                    Math.max(e.classId(), 0),
                    Math.max(e.methodId(), 0),
                    false);
        }
        if (state == State.CLOSING) {
            // a second error while closing: the socket goes now, but the connection.close written for the first
            // one (still unflushed in this read batch) goes out before it (found by ConnectionFuzzTest)
            outbound.flushNow();
            ctx.close();
            return;
        }
        startClosing(
                cause,
                e.replyCode(),
                ReplyCode.name(e.replyCode()) + " - " + e.detail(),
                Math.max(e.classId(), 0),
                Math.max(e.methodId(), 0),
                !decoderFailed());
    }

    /** Whether the frame decoder met malformed input: it reads nothing more, close-ok included. */
    private boolean decoderFailed() {
        FrameDecoder decoder = ctx.pipeline().get(FrameDecoder.class);
        return decoder != null && decoder.isFailed();
    }

    /** The broker missed two heartbeat intervals: told the milliseconds of silence, on the event loop. */
    private final class MissedHeartbeats implements LongConsumer {
        @Override
        public void accept(long silentMillis) {
            recordCause(new ConnectionClosedException(
                    "missed heartbeats from " + address + ": no frame for " + silentMillis
                            + " ms (two heartbeat intervals of " + facade.heartbeat() + " s)",
                    null));
            LOG.warn(closeCause.getMessage());
            ctx.close();
        }
    }

    /**
     * The event loop shut down under the open socket ({@link LoopShutdownWatch}): the socket is closed here, in case
     * the loop does not, and the connection ends as closed by that.
     */
    private final class LoopShutDown implements Runnable {
        @Override
        public void run() {
            if (state == State.CLOSED) {
                return;
            }
            recordCause(loopShutDownCause());
            ctx.close();
        }
    }

    private ConnectionClosedException loopShutDownCause() {
        return new ConnectionClosedException(
                "connection to " + address
                        + " closed: its event loop shut down (was the client or its event loop group closed?)",
                null);
    }

    /**
     * The connect attempt took too long. Still in the handshake: it fails with {@code timeout}. Already closing
     * because the attempt failed (a protocol error, the broker's refusal): that failure is why, and the attempt
     * fails with it now rather than with the clock.
     */
    public void connectTimedOut(ConnectionTimeoutException timeout) {
        assert ctx.executor().inEventLoop() : "connection state off the event loop";
        if (state == State.HANDSHAKE) {
            failHandshake(timeout);
        } else if (connectFailure != null && state != State.CLOSED) {
            connected.completeExceptionally(connectFailure);
            ctx.close();
        }
    }

    private void failHandshake(AmqpException cause) {
        if (connectFailure == null) {
            connectFailure = cause;
        }
        recordCause(cause);
        ctx.close();
    }

    private void recordCause(AmqpException cause) {
        if (closeCause == null) {
            closeCause = cause;
        }
    }

    private void failChannels(AmqpException connectionCause) {
        // with recovery to follow, channels are told so (a ConnectionLostException): they wait instead of closing
        AmqpException cause = facade.channelCause(connectionCause);
        if (secrets != null) {
            secrets.close(cause);
        }
        if (channels != null) {
            for (InboundChannel c : channels.all()) {
                c.onConnectionClosed(cause);
            }
        }
    }

    /** The socket is closed: everything still pending fails with the recorded cause. */
    private void finish() {
        if (state == State.CLOSED) {
            return;
        }
        boolean wasHandshaking = state == State.HANDSHAKE;
        if (countedOpen) {
            metrics.connectionClosed();
        }
        if (closeCause == null && ctx.executor().isShuttingDown()) {
            recordCause(loopShutDownCause()); // the loop closed its sockets as it went
        }
        if (closeCause == null) {
            if (wasHandshaking
                    && handshake.stage() == Handshake.Stage.AUTHENTICATING
                    && !handshake.closesOnAuthenticationFailure()) {
                // Brokers without authentication_failure_close just drop the socket on bad credentials; one with it
                // that drops it did not refuse them (its handshake timeout, a node going down): a plain loss.
                connectFailure = new AuthenticationException(
                        "the broker at " + address
                                + " closed the connection during authentication: wrong credentials for user '"
                                + handshake.username() + "' (" + options.authMechanism() + ")?"
                                + handshake.oversizedStartOk(),
                        null,
                        ReplyCode.ACCESS_REFUSED,
                        null,
                        10,
                        11);
            }
            recordCause(new ConnectionClosedException(
                    "connection to " + address + " lost"
                            + (wasHandshaking
                                    ? " during the handshake (" + handshake.stage().description + ")"
                                            + handshake.oversizedStartOk()
                                    : ""),
                    null));
        }
        state = State.CLOSED;
        heartbeats.stop();
        loopWatch.stop();
        if (closeTimer != null) {
            closeTimer.cancel(false);
        }
        ConnectionClosedException cause = closeCause instanceof ConnectionClosedException cce
                ? cce
                : new ConnectionClosedException(closeCause.getMessage(), closeCause);
        failChannels(cause);
        outbound.discardQueued(cause);
        if (!connected.isDone()) {
            connected.completeExceptionally(connectFailure != null ? connectFailure : closeCause);
        }
        facade.closed(cause);
        if (!wasHandshaking) {
            LOG.debug("connection to {} closed: {}", address, cause.getMessage());
        }
    }

    /** The error for an operation on a connection that is not open. */
    ConnectionClosedException closedError() {
        AmqpException cause = closeCause;
        if (state == State.HANDSHAKE) {
            return new ConnectionClosedException("connection to " + address + " is not open yet", null);
        }
        return new ConnectionClosedException(
                "connection to " + address + " is closed" + (cause == null ? "" : ": " + cause.getMessage()),
                cause,
                cause == null ? 0 : cause.replyCode(),
                cause == null ? null : cause.replyText(),
                cause == null ? 0 : cause.classId(),
                cause == null ? 0 : cause.methodId(),
                cause instanceof ConnectionClosedException c && c.initiatedByBroker());
    }

    /** Why a connection the application closed (with {@code replyCode} and {@code replyText}) is closed. */
    public static ConnectionClosedException closedByApplication(Address address, int replyCode, String replyText) {
        return new ConnectionClosedException(
                "connection to " + address
                        + " closed by the application"
                        + (replyCode == ReplyCode.REPLY_SUCCESS ? "" : ": " + replyCode + " " + replyText),
                null,
                replyCode,
                replyText,
                0,
                0,
                false);
    }
}
