package io.warren.impl;

import io.netty.util.concurrent.EventExecutor;
import io.warren.Address;
import io.warren.AmqpException;
import io.warren.BlockedListener;
import io.warren.Channel;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.RecoveryListener;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.base.Utf8;
import io.warren.impl.connection.ConnectionEvents;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.connection.HandOver;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.metrics.MetricsCollector;
import io.warren.impl.publish.PublishFlow;
import io.warren.impl.recovery.ConnectionRecovery;
import io.warren.impl.recovery.RecoverableChannel;
import io.warren.impl.recovery.RecoverableConnection;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The public face of a connection. Any thread: calls are handed to the event loop through the
 * connection's {@link OutboundPath}; what the event loop learns (tune, blocked, closed) is published here
 * in volatile fields.
 */
public final class ConnectionImpl implements ConnectionEvents, RecoverableConnection {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionImpl.class);

    private final String name;

    // any thread (volatile); replaced on the event loop when recovery opens a new connection for this facade
    private volatile ConnectionHandler handler;
    private volatile Address address;
    /** Automatic recovery, set once the connection first opened; null when off. */
    private volatile ConnectionRecovery recovery;
    /** The application called close(): a close is final, never recovered. */
    private volatile boolean closeRequested;

    // any thread (volatile, written by the event loop)
    private volatile boolean open;
    private volatile boolean blocked;
    private volatile Map<String, Object> serverProperties = Map.of();
    private volatile int channelMax;
    private volatile int frameMax;
    private volatile int heartbeat;
    private final CopyOnWriteArrayList<BlockedListener> blockedListeners = new CopyOnWriteArrayList<>();
    private final CompletableFuture<ConnectionClosedException> closeFuture = new CompletableFuture<>();

    private ConnectionImpl(ConnectionHandler handler, ConnectionOptions options, Address address) {
        this.handler = handler;
        this.address = address;
        this.name = options.connectionName();
    }

    /**
     * The handler of a connection to {@code address}, with its handle: a new one, or {@code recovering}, which the
     * handler takes over once open (automatic recovery).
     *
     * @param connected completed with the handle at connection.open-ok, or failed with why the connection could
     *                  not be opened
     */
    public static ConnectionHandler newHandler(
            ConnectionOptions options,
            Address address,
            CompletableFuture<ConnectionImpl> connected,
            ConnectionImpl recovering,
            MetricsCollector metrics) {
        return new ConnectionHandler(options, address, connected, new Handle(options, address, recovering), metrics);
    }

    /**
     * Makes the handle of a new connection, or returns the one a recovery reconnects. A class rather than a lambda:
     * a fresh JVM would generate a class and method handle forms for it at the first connect.
     */
    private static final class Handle implements Function<ConnectionHandler, ConnectionImpl> {
        private final ConnectionOptions options;
        private final Address address;
        private final ConnectionImpl recovering;

        Handle(ConnectionOptions options, Address address, ConnectionImpl recovering) {
            this.options = options;
            this.address = address;
            this.recovering = recovering;
        }

        @Override
        public ConnectionImpl apply(ConnectionHandler h) {
            return recovering == null ? new ConnectionImpl(h, options, address) : recovering;
        }
    }

    /** The event-loop state behind this connection, for extensions. */
    @Override
    public ConnectionHandler handler() {
        return handler;
    }

    /** The loop the first connection ran on: recovery reconnects on it, so every later handler runs there too. */
    @Override
    public EventExecutor eventLoop() {
        return handler.outbound().eventLoop();
    }

    /** A new connection opened by recovery takes this facade over. */
    @Override
    public void attach(ConnectionHandler handler, Address address) {
        assert handler.outbound().inEventLoop() : "connection taken over off the event loop";
        this.handler = handler;
        this.address = address;
        if (blocked) {
            // the lost connection's block ends with it: a new connection starts unblocked, and a connection.blocked
            // the broker sends it from open-ok on (its alarm still on) comes after this and stands
            LOG.info("connection to {}: the block of the connection it replaces ends with it", address);
            endBlock();
        }
    }

    /** Turns automatic recovery on for this connection (once, when it first opened). */
    void enableRecovery(ConnectionRecovery recovery) {
        this.recovery = recovery;
    }

    /** Automatic recovery, or null when it is off. */
    ConnectionRecovery recovery() {
        return recovery;
    }

    /** The cause a lost connection's channels are closed with: a ConnectionLostException when recovery follows. */
    @Override
    public AmqpException channelCause(AmqpException cause) {
        ConnectionRecovery r = recovery;
        return r != null && r.willRecover(closeRequested) ? r.lossCause(cause) : cause;
    }

    /** Recovery is complete: the connection is open again. */
    @Override
    public void recovered() {
        open = true;
    }

    /** Recovery gave up: the connection is closed for good, with why. */
    @Override
    public void gaveUp(ConnectionClosedException cause) {
        open = false;
        closeFuture.complete(cause);
    }

    // ---- published by the event loop ---------------------------------------------------------------------

    @Override
    public void outboundReady(ConnectionHandler handler) {
        PublishFlow.attach(handler);
    }

    @Override
    public CompletionStage<RecoverableChannel> openChannel(ConnectionHandler handler) {
        CompletableFuture<Channel> opened = new CompletableFuture<>();
        ChannelImpl channel = ChannelImpl.open(this, handler, opened);
        return opened.thenApply(c -> channel);
    }

    @Override
    public void tuned(int channelMax, int frameMax, int heartbeat) {
        this.channelMax = channelMax;
        this.frameMax = frameMax;
        this.heartbeat = heartbeat;
    }

    @Override
    public void opened(Map<String, Object> serverProperties) {
        this.serverProperties = serverProperties; // immutable, and shared with connections sent the same
        this.open = true;
    }

    @Override
    public void blocked(String reason) {
        blocked = true;
        LOG.info("connection to {} blocked by the broker: {}", address, reason);
        PublishFlow flow = PublishFlow.of(handler);
        if (flow != null) {
            flow.blocked(reason); // the current connection's publishes first
        }
        for (BlockedListener l : blockedListeners) {
            try {
                l.blocked(reason);
            } catch (RuntimeException e) {
                LOG.warn("blocked listener failed", e);
            }
        }
    }

    @Override
    public void unblocked() {
        LOG.info("connection to {} unblocked by the broker", address);
        endBlock();
    }

    /** The connection is no longer blocked: its publishes and the application's listeners are told. Event loop. */
    private void endBlock() {
        blocked = false;
        PublishFlow flow = PublishFlow.of(handler);
        if (flow != null) {
            flow.unblocked();
        }
        for (BlockedListener l : blockedListeners) {
            try {
                l.unblocked();
            } catch (RuntimeException e) {
                LOG.warn("unblocked listener failed", e);
            }
        }
    }

    @Override
    public void closing() {
        open = false;
    }

    @Override
    public void closed(ConnectionClosedException cause) {
        open = false;
        ConnectionRecovery r = recovery;
        if (r != null && r.onClosed(cause, closeRequested)) {
            return; // recovery takes over: the connection lives on
        }
        closeFuture.complete(cause);
    }

    // ---- Connection --------------------------------------------------------------------------------------

    @Override
    public CompletionStage<Channel> openChannel() {
        CompletableFuture<Channel> result = new CompletableFuture<>();
        if (closeFuture.isDone()) {
            ConnectionClosedException cause = closeFuture.getNow(null);
            result.completeExceptionally(new ConnectionClosedException(
                    "connection to " + address + " is closed: " + cause.getMessage(), cause));
            return result;
        }
        HandOver.run(
                handler.outbound(),
                () -> {
                    ConnectionRecovery r = recovery;
                    if (r != null) {
                        r.afterRecovery(() -> ChannelImpl.open(this, handler, result)); // at once unless recovering
                    } else {
                        ChannelImpl.open(this, handler, result);
                    }
                },
                null,
                result);
        return result;
    }

    @Override
    public CompletionStage<Void> close() {
        return close(ReplyCode.REPLY_SUCCESS, "OK");
    }

    @Override
    public CompletionStage<Void> close(int replyCode, String replyText) {
        CompletableFuture<Void> result = new CompletableFuture<>();
        if (replyCode < 0 || replyCode > 0xFFFF || replyText == null) {
            result.completeExceptionally(
                    new IllegalArgumentException("replyCode must be within 0..65535 and replyText not null"));
            return result;
        }
        try {
            Utf8.encodedLength("replyText", replyText); // refused here: the close must not fail half-way on the loop
        } catch (IllegalArgumentException e) {
            result.completeExceptionally(e);
            return result;
        }
        if (closeFuture.isDone()) {
            result.complete(null);
            return result;
        }
        closeRequested = true;
        HandOver.run(handler.outbound(), new CloseOnLoop(replyCode, replyText, result), null, result);
        return result;
    }

    /**
     * The application's close, on the event loop. A class rather than a lambda: a lambda capturing an int and two
     * references makes a fresh JVM generate a class and method handle forms for it at the first close.
     */
    private final class CloseOnLoop implements Runnable {
        private final int replyCode;
        private final String replyText;
        private final CompletableFuture<Void> result;

        CloseOnLoop(int replyCode, String replyText, CompletableFuture<Void> result) {
            this.replyCode = replyCode;
            this.replyText = replyText;
            this.result = result;
        }

        @Override
        public void run() {
            ConnectionRecovery r = recovery;
            ConnectionClosedException cause = ConnectionHandler.closedByApplication(address, replyCode, replyText);
            if (r != null && r.closeWhileRecovering(cause)) {
                // no connection to close: recovery was between attempts
                open = false;
                closeFuture.complete(cause);
                result.complete(null);
                return;
            }
            handler.close(replyCode, replyText, result);
        }
    }

    @Override
    public boolean isRecovering() {
        ConnectionRecovery r = recovery;
        return r != null && r.isRecovering();
    }

    @Override
    public void addRecoveryListener(RecoveryListener listener) {
        Objects.requireNonNull(listener, "listener");
        ConnectionRecovery r = recovery;
        if (r != null) {
            r.addListener(listener);
        }
    }

    @Override
    public void removeRecoveryListener(RecoveryListener listener) {
        ConnectionRecovery r = recovery;
        if (r != null) {
            r.removeListener(listener);
        }
    }

    @Override
    public CompletionStage<ConnectionClosedException> closeFuture() {
        return closeFuture;
    }

    @Override
    public boolean isOpen() {
        // while recovery restores channels and topology the new socket is open, the connection not yet
        return open && !isRecovering();
    }

    @Override
    public boolean isBlocked() {
        return blocked;
    }

    @Override
    public void addBlockedListener(BlockedListener listener) {
        blockedListeners.add(Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public void removeBlockedListener(BlockedListener listener) {
        blockedListeners.remove(listener);
    }

    @Override
    public Map<String, Object> serverProperties() {
        return serverProperties;
    }

    @Override
    public int channelMax() {
        return channelMax;
    }

    @Override
    public int frameMax() {
        return frameMax;
    }

    @Override
    public int heartbeat() {
        return heartbeat;
    }

    @Override
    public Address address() {
        return address;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public CompletionStage<Void> updateSecret(String newSecret, String reason) {
        CompletableFuture<Void> result = new CompletableFuture<>();
        if (newSecret == null || reason == null) {
            result.completeExceptionally(new IllegalArgumentException("newSecret and reason must not be null"));
            return result;
        }
        HandOver.run(handler.outbound(), () -> handler.updateSecret(newSecret, reason, result), null, result);
        return result;
    }

    @Override
    public String toString() {
        return "Connection(" + address + (name == null ? "" : ", " + name) + ", " + (open ? "open" : "closed") + ")";
    }
}
