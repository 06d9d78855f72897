package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.Address;
import io.warren.AmqpException;
import io.warren.RpcTimeoutException;
import io.warren.codec.Frames;
import io.warren.codec.method.ConnectionUpdateSecretEncoder;
import io.warren.credentials.Credentials;
import io.warren.credentials.CredentialsProvider;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * connection.update-secret for an open connection: on request ({@link io.warren.Connection#updateSecret}) and,
 * when the connection's credentials expire, by itself before they do.
 *
 * <pre>
 *   open-ok, credentials expire at E (got at T0)
 *   at T0 + 80% (E - T0):  provider.credentials()  (non-blocking; completes on any thread, handed back here)
 *     a new secret:        connection.update-secret(secret, reason) --> broker
 *                          <-- connection.update-secret-ok: current = new credentials, schedule again from them
 *     the same secret:     ask again halfway to E (at least 1 s later)
 *     a failure:           logged; ask again halfway to E while E is ahead (the broker closes the
 *                          connection once the old secret is refused)
 * </pre>
 *
 * Update-secret is synchronous on channel 0 and RabbitMQ answers in order, so replies are matched first in,
 * first out; a request that timed out stays in the queue, failed, until its late reply arrives. Event loop only.
 */
public final class SecretRefresher {

    private static final Logger LOG = LoggerFactory.getLogger(SecretRefresher.class);
    static final Duration MIN_DELAY = Duration.ofSeconds(1);

    private final OutboundPath outbound;
    private final ByteBufAllocator alloc;
    private final EventExecutor executor;
    private final CredentialsProvider provider;
    private final Address address;
    private final long rpcTimeoutNanos;

    /** The connection's negotiated frame-max (0: none): a larger update-secret would make the broker close it. */
    private final int frameMax;

    // event loop only
    private final ArrayDeque<CompletableFuture<Void>> pending = new ArrayDeque<>();
    private Credentials current;
    /** {@code current}'s expiry on the event loop's ticker, so that timers and checks read one clock. */
    private long expiresAtNanos;

    private ScheduledFuture<?> timer;
    private AmqpException closed;

    SecretRefresher(
            OutboundPath outbound,
            ByteBufAllocator alloc,
            EventExecutor executor,
            CredentialsProvider provider,
            Address address,
            long rpcTimeoutNanos,
            int frameMax) {
        this.outbound = outbound;
        this.frameMax = frameMax;
        this.alloc = alloc;
        this.executor = executor;
        this.provider = provider;
        this.address = address;
        this.rpcTimeoutNanos = rpcTimeoutNanos;
    }

    /** The connection is open with {@code credentials}: refresh before they expire, when they do. */
    void start(Credentials credentials) {
        assert executor.inEventLoop() : "secret refresher off the event loop";
        adopt(credentials);
        scheduleRefresh(REFRESH_RATIO);
    }

    private void adopt(Credentials credentials) {
        current = credentials;
        if (credentials.expiresAt() != null) {
            long remaining =
                    Duration.between(Instant.now(), credentials.expiresAt()).toNanos();
            expiresAtNanos = executor.ticker().nanoTime() + remaining;
        }
    }

    private boolean currentStillValid() {
        return current.expiresAt() != null && executor.ticker().nanoTime() - expiresAtNanos < 0;
    }

    /** Sends connection.update-secret; {@code result} completes on update-secret-ok. */
    void update(String newSecret, String reason, CompletableFuture<Void> result) {
        assert executor.inEventLoop() : "secret refresher off the event loop";
        if (closed != null) {
            result.completeExceptionally(closed);
            return;
        }
        ConnectionUpdateSecretEncoder encoder = new ConnectionUpdateSecretEncoder();
        try {
            encoder.newSecret(newSecret).reason(reason);
        } catch (IllegalArgumentException e) {
            result.completeExceptionally(e);
            return;
        }
        ByteBuf frame;
        try {
            // checkFits names the method and sizes only: the secret never goes into its message
            frame = Requests.checkFits(Frames.method(alloc, 0, encoder), frameMax, 0);
        } catch (IllegalArgumentException e) {
            result.completeExceptionally(e);
            return;
        }
        pending.add(result);
        outbound.write(frame);
        ScheduledFuture<?> timeout = executor.schedule(
                () -> {
                    result.completeExceptionally(new RpcTimeoutException(
                            "no connection.update-secret-ok from " + address + " within "
                                    + Duration.ofNanos(rpcTimeoutNanos),
                            10,
                            70,
                            0));
                },
                rpcTimeoutNanos,
                TimeUnit.NANOSECONDS);
        result.whenComplete((v, e) -> timeout.cancel(false));
    }

    /** connection.update-secret-ok arrived. */
    void onUpdateSecretOk() {
        assert executor.inEventLoop() : "secret refresher off the event loop";
        CompletableFuture<Void> head = pending.poll();
        if (head == null) {
            LOG.debug("unsolicited connection.update-secret-ok from {}", address);
        } else {
            head.complete(null);
        }
    }

    /** The connection is closing or closed: no more refreshes, pending updates fail. */
    void close(AmqpException cause) {
        assert executor.inEventLoop() : "secret refresher off the event loop";
        if (closed != null) {
            return;
        }
        closed = cause;
        if (timer != null) {
            timer.cancel(false);
        }
        CompletableFuture<Void> f;
        while ((f = pending.poll()) != null) {
            f.completeExceptionally(cause);
        }
    }

    // ---- the automatic refresh ---------------------------------------------------------------------------

    private static final double REFRESH_RATIO = CredentialsProvider.REFRESH_RATIO_PERCENT / 100.0;

    /** Asks the provider again after {@code ratio} of the current secret's remaining lifetime (at least 1 s). */
    private void scheduleRefresh(double ratio) {
        if (current == null || current.expiresAt() == null || closed != null) {
            return;
        }
        long remaining = expiresAtNanos - executor.ticker().nanoTime();
        long delay = Math.max(MIN_DELAY.toNanos(), (long) (remaining * ratio));
        timer = executor.schedule(this::refresh, delay, TimeUnit.NANOSECONDS);
    }

    private void refresh() {
        if (closed != null) {
            return;
        }
        java.util.concurrent.CompletionStage<Credentials> asked;
        try {
            asked = provider.credentials();
        } catch (RuntimeException e) {
            asked = CompletableFuture.failedFuture(e);
        }
        if (asked == null) {
            // a failure like any other: retried while the current secret lasts, not the end of all refreshes
            asked = CompletableFuture.failedFuture(
                    new NullPointerException("the credentials provider returned null instead of a stage"));
        }
        asked.whenComplete((c, error) -> {
            if (executor.inEventLoop()) {
                refreshed(c, error);
            } else {
                outbound.execute(() -> refreshed(c, error));
            }
        });
    }

    private void refreshed(Credentials fresh, Throwable error) {
        assert executor.inEventLoop() : "secret refresher off the event loop";
        if (closed != null) {
            return;
        }
        if (error != null || fresh == null) {
            Throwable cause =
                    error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
            LOG.warn(
                    "connection to {}: the credentials provider failed to refresh a secret that expires at {}: {}",
                    address,
                    current.expiresAt(),
                    cause == null ? "it returned null" : cause.toString());
            if (currentStillValid()) {
                scheduleRefresh(0.5);
            }
            return;
        }
        if (fresh.secret().equals(current.secret())) {
            // Nothing to tell the broker. A later expiry (a password re-issued with a new lease) is adopted, and so
            // is none (the provider says it no longer expires: nothing to refresh); the same one means the
            // provider's token is not due yet (it was fetched before this connection opened): ask again halfway
            // to the expiry.
            if (fresh.expiresAt() == null || fresh.expiresAt().isAfter(current.expiresAt())) {
                adopt(fresh);
                scheduleRefresh(REFRESH_RATIO);
            } else if (currentStillValid()) {
                scheduleRefresh(0.5);
            } else {
                // expired, and the provider has nothing newer: asking every second would change nothing (the broker
                // closes the connection at the expiry; the next connection asks the provider again)
                LOG.warn(
                        "connection to {}: the secret expired at {} and the credentials provider returns it still;"
                                + " no further refresh on this connection",
                        address,
                        current.expiresAt());
            }
            return;
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        update(fresh.secret(), "credentials refresh", done);
        done.whenComplete((v, e) -> {
            if (e == null) {
                LOG.debug("connection to {}: secret updated, now expires at {}", address, fresh.expiresAt());
                adopt(fresh);
                scheduleRefresh(REFRESH_RATIO);
            } else if (closed == null) {
                LOG.warn("connection to {}: connection.update-secret failed: {}", address, e.toString());
                if (currentStillValid()) {
                    scheduleRefresh(0.5);
                }
            }
        });
    }

    /** The credentials the broker holds now (for tests). */
    public Credentials current() {
        return current;
    }
}
