package io.warren;

import io.netty.util.concurrent.EventExecutor;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * An open AMQP connection. Thread-safe: every method may be called from any thread; the connection's
 * protocol state is owned by one Netty event loop and calls from other threads are handed to it.
 * Nothing here blocks.
 */
public interface Connection {

    /**
     * Opens a channel on the lowest-risk free channel number (numbers are reused only after the broker
     * confirmed the previous channel's close). Fails when all numbers up to the negotiated channel-max are
     * in use, or when the connection is closed.
     */
    CompletionStage<Channel> openChannel();

    /**
     * Closes the connection with 200 OK: sends connection.close, waits for close-ok (at most the close
     * timeout: a blocked connection may never get it), then closes the socket. Completes when the socket
     * is closed; closing a closed connection completes at once.
     */
    CompletionStage<Void> close();

    /** Closes the connection with the given reply code and text; see {@link #close()}. */
    CompletionStage<Void> close(int replyCode, String replyText);

    /**
     * Completes (normally, never exceptionally) once the connection is closed, with the reason: the
     * broker's connection.close, the application's close, a protocol error or the loss of the socket.
     */
    CompletionStage<ConnectionClosedException> closeFuture();

    /** True until the connection starts closing. */
    boolean isOpen();

    /** True between the broker's connection.blocked and connection.unblocked. */
    boolean isBlocked();

    /** Adds a listener for connection.blocked / unblocked. */
    void addBlockedListener(BlockedListener listener);

    void removeBlockedListener(BlockedListener listener);

    /** The broker's server properties from connection.start (product, version, capabilities, ...). */
    Map<String, Object> serverProperties();

    /** The negotiated highest channel number. */
    int channelMax();

    /** The negotiated largest frame size in bytes (0 = no limit). */
    int frameMax();

    /** The negotiated heartbeat interval in seconds (0 = none). */
    int heartbeat();

    /** The address this connection reached. */
    Address address();

    /** The connection name sent in the client properties, or {@code null}. */
    String name();

    /**
     * The Netty event loop that owns this connection for its whole life (recovery reconnects on the same one): its
     * stages complete there, and its consumers run there unless given an executor. For work that must run where
     * those do, such as a timer that fails a call a reply would otherwise complete (an RPC
     * client's timeout). Nothing run on it may block: it would hold up the whole connection.
     */
    EventExecutor eventLoop();

    /**
     * True while the connection is lost and being recovered automatically ({@link RecoveryOptions}): then
     * {@link #isOpen()} is false and {@link #closeFuture()} is not complete.
     */
    boolean isRecovering();

    /** Adds a listener told about automatic recovery (started, succeeded, failed). */
    void addRecoveryListener(RecoveryListener listener);

    void removeRecoveryListener(RecoveryListener listener);

    /**
     * Sends connection.update-secret: the broker re-authenticates the connection's user with {@code newSecret}
     * (a fresh OAuth 2 token, for example; RabbitMQ 3.8+) without closing anything. Completes on
     * update-secret-ok; a secret the broker refuses closes the connection ({@link #closeFuture()} says why).
     * A connection made with a {@link io.warren.ConnectionOptions#credentialsProvider credentials provider}
     * whose secret expires does this by itself before the expiry.
     *
     * @param reason a short text the broker logs
     */
    CompletionStage<Void> updateSecret(String newSecret, String reason);
}
