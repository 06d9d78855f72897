package io.warren.impl;

import io.warren.Address;
import io.warren.BlockedListener;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.codec.ReplyCode;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The public face of a connection. Any thread: calls are handed to the event loop through the
 * connection's {@link OutboundPath}; what the event loop learns (tune, blocked, closed) is published here
 * in volatile fields.
 */
public final class ConnectionImpl implements Connection {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionImpl.class);

    private final ConnectionHandler handler;
    private final Address address;
    private final String name;

    // any thread (volatile, written by the event loop)
    private volatile boolean open;
    private volatile boolean blocked;
    private volatile Map<String, Object> serverProperties = Map.of();
    private volatile int channelMax;
    private volatile int frameMax;
    private volatile int heartbeat;
    private final CopyOnWriteArrayList<BlockedListener> blockedListeners = new CopyOnWriteArrayList<>();
    private final CompletableFuture<ConnectionClosedException> closeFuture = new CompletableFuture<>();

    ConnectionImpl(ConnectionHandler handler, ConnectionOptions options, Address address) {
        this.handler = handler;
        this.address = address;
        this.name = options.connectionName();
    }

    /** The event-loop state behind this connection, for extensions. */
    public ConnectionHandler handler() {
        return handler;
    }

    // ---- published by the event loop ---------------------------------------------------------------------

    void tuned(int channelMax, int frameMax, int heartbeat) {
        this.channelMax = channelMax;
        this.frameMax = frameMax;
        this.heartbeat = heartbeat;
    }

    void opened(Map<String, Object> serverProperties) {
        this.serverProperties = Collections.unmodifiableMap(serverProperties);
        this.open = true;
    }

    void blocked(String reason) {
        blocked = true;
        LOG.info("connection to {} blocked by the broker: {}", address, reason);
        for (BlockedListener l : blockedListeners) {
            try {
                l.blocked(reason);
            } catch (RuntimeException e) {
                LOG.warn("blocked listener failed", e);
            }
        }
    }

    void unblocked() {
        blocked = false;
        LOG.info("connection to {} unblocked by the broker", address);
        for (BlockedListener l : blockedListeners) {
            try {
                l.unblocked();
            } catch (RuntimeException e) {
                LOG.warn("unblocked listener failed", e);
            }
        }
    }

    void closing() {
        open = false;
    }

    void closed(ConnectionClosedException cause) {
        open = false;
        closeFuture.complete(cause);
    }

    // ---- Connection --------------------------------------------------------------------------------------

    @Override
    public CompletionStage<Channel> openChannel() {
        CompletableFuture<Channel> result = new CompletableFuture<>();
        if (closeFuture.isDone()) {
            ConnectionClosedException cause = closeFuture.getNow(null);
            result.completeExceptionally(new ConnectionClosedException("connection to " + address + " is closed: "
                    + cause.getMessage(), cause));
            return result;
        }
        HandOver.run(handler.outbound(), () -> handler.openChannel(result), null, result);
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
            result.completeExceptionally(new IllegalArgumentException(
                    "replyCode must be within 0..65535 and replyText not null"));
            return result;
        }
        if (closeFuture.isDone()) {
            result.complete(null);
            return result;
        }
        HandOver.run(handler.outbound(), () -> handler.close(replyCode, replyText, result), null, result);
        return result;
    }

    @Override
    public CompletionStage<ConnectionClosedException> closeFuture() {
        return closeFuture;
    }

    @Override
    public boolean isOpen() {
        return open;
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
