package io.warren.credentials;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Credentials from a {@link TokenSource} (an OAuth 2 token endpoint, say), kept until
 * {@value CredentialsProvider#REFRESH_RATIO_PERCENT}% of the token's lifetime has passed and then fetched
 * again. One provider may serve many connections: they share the token, and at most one fetch is in flight
 * at a time (callers meanwhile get the same stage), but for a renewal that {@link #invalidate()} let go of. A
 * fetch that fails while the current token is still valid leaves that token in use (logged) so that a flaky token
 * endpoint does not close connections; once the token has expired, the failure reaches the caller. A fetch that has not answered within its timeout
 * ({@value #DEFAULT_FETCH_TIMEOUT_SECONDS} s unless given) fails the same way and the next call starts another: one
 * hung request (an HTTP client without a request timeout) must not hold every later connect and refresh for ever.
 * A timeout completes the waiting stages on {@link CompletableFuture}'s default asynchronous pool, never on the
 * JDK's one timer thread. Thread-safe and non-blocking.
 *
 * <pre>{@code
 * TokenSource tokens = () -> http.sendAsync(tokenRequest, ofString())
 *         .thenApply(r -> parse(r.body()))   // -> Credentials.of("", accessToken, now.plusSeconds(expiresIn))
 * ConnectionOptions options = new ConnectionOptions()
 *         .credentialsProvider(RefreshingCredentialsProvider.create(tokens));
 * }</pre>
 *
 * The connection side: see {@link CredentialsProvider} (asked at every connect, and before expiry while
 * open, the new token going to the broker in connection.update-secret).
 */
public final class RefreshingCredentialsProvider implements CredentialsProvider {

    private static final Logger LOG = LoggerFactory.getLogger(RefreshingCredentialsProvider.class);

    /** How long a fetch may take unless the factory is told otherwise. */
    public static final int DEFAULT_FETCH_TIMEOUT_SECONDS = 30;

    private final TokenSource source;
    private final Clock clock;
    private final Duration fetchTimeout;

    // guarded by this
    private Credentials current;
    private Instant staleAt;
    private CompletableFuture<Credentials> fetching;
    /** {@code fetching} renews a token that was current when it started (it may answer with that very token). */
    private boolean fetchingRenews;

    private long fetches;
    /** Counts {@link #invalidate()} calls: a token from a fetch started before the last one is not taken up late. */
    private long invalidations;

    private RefreshingCredentialsProvider(TokenSource source, Clock clock, Duration fetchTimeout) {
        this.source = Objects.requireNonNull(source, "source");
        this.clock = Objects.requireNonNull(clock, "clock");
        if (fetchTimeout.isNegative() || fetchTimeout.isZero()) {
            throw new IllegalArgumentException("fetchTimeout must be positive: " + fetchTimeout);
        }
        this.fetchTimeout = fetchTimeout;
    }

    /** A provider over {@code source} on the system clock. */
    public static RefreshingCredentialsProvider create(TokenSource source) {
        return create(source, Clock.systemUTC());
    }

    /** A provider over {@code source} that reads the time from {@code clock} (tests). */
    public static RefreshingCredentialsProvider create(TokenSource source, Clock clock) {
        return create(source, clock, Duration.ofSeconds(DEFAULT_FETCH_TIMEOUT_SECONDS));
    }

    /**
     * A provider over {@code source} whose fetches fail when they have not answered within {@code fetchTimeout}.
     *
     * @throws IllegalArgumentException when {@code fetchTimeout} is not positive
     */
    public static RefreshingCredentialsProvider create(TokenSource source, Clock clock, Duration fetchTimeout) {
        return new RefreshingCredentialsProvider(source, clock, Objects.requireNonNull(fetchTimeout, "fetchTimeout"));
    }

    @Override
    public CompletionStage<Credentials> credentials() {
        CompletableFuture<Credentials> f;
        synchronized (this) {
            if (current != null && (staleAt == null || clock.instant().isBefore(staleAt))) {
                return CompletableFuture.completedFuture(current);
            }
            f = fetching != null ? fetching : startFetch();
        }
        return f.copy();
    }

    /**
     * Forgets the current token (the broker refused it, say): the next {@link #credentials()} fetches a new one, and
     * if that fetch fails its failure reaches the caller; the forgotten token is never handed out again. A renewal
     * of that token already on its way answers those who asked before this call, and its token is not kept (it may be
     * the very one refused); a fetch started after the token was forgotten goes on serving every caller, so that
     * connections refused together, each calling this, still share one fetch.
     */
    public synchronized void invalidate() {
        current = null;
        staleAt = null;
        if (fetchingRenews) {
            fetching = null; // the next caller starts a fetch of its own
            fetchingRenews = false;
        }
        invalidations++;
    }

    /** How many fetches were started, for tests and monitoring. */
    public synchronized long fetches() {
        return fetches;
    }

    // guarded by this
    private CompletableFuture<Credentials> startFetch() {
        CompletableFuture<Credentials> f = new CompletableFuture<>();
        fetching = f;
        fetchingRenews = current != null;
        fetches++;
        Instant fetchedAt = clock.instant();
        long generation = invalidations;
        CompletionStage<Credentials> stage;
        try {
            stage = Objects.requireNonNull(source.fetch(), "the token source returned a null stage");
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        stage.whenComplete((creds, error) -> fetched(f, generation, fetchedAt, creds, error));
        if (!f.isDone()) {
            long nanos = TimeUnit.NANOSECONDS.convert(fetchTimeout); // saturates at Long.MAX_VALUE (292 years)
            // a timer on the JDK's delayer thread, cancelled (its task removed) when the fetch answers: it would
            // otherwise hold the answered future, and its token, for the timeout's whole length. The timeout runs
            // on the default async pool, not on that one JVM-wide thread, where a caller's continuation that
            // blocks would hold up every other timer
            CompletableFuture<Void> timer =
                    new CompletableFuture<Void>().completeOnTimeout(null, nanos, TimeUnit.NANOSECONDS);
            timer.thenRunAsync(() -> fetched(
                    f,
                    generation,
                    fetchedAt,
                    null,
                    new TimeoutException("the token source did not answer within " + fetchTimeout)));
            f.whenComplete((c, e) -> timer.cancel(false));
        }
        return f;
    }

    /**
     * A fetch's answer, or its timeout: the first of the two settles {@code f}; a late token is still kept, unless
     * {@link #invalidate()} was called after its fetch started ({@code generation}), and a token from such a fetch is
     * never kept, late or not.
     */
    private void fetched(
            CompletableFuture<Credentials> f, long generation, Instant fetchedAt, Credentials creds, Throwable error) {
        Credentials result = null;
        Throwable failure = error != null
                ? error
                : creds == null ? new NullPointerException("the token source completed with null") : null;
        synchronized (this) {
            if (fetching != f && generation != invalidations && !f.isDone()) {
                // a renewal invalidate() let go of before it answered: it answers those who asked before that call
                // (the first of the answer and the timeout to come settles it), and its token is not kept; failed, it
                // hands them a token fetched since, while that one is valid
                result = failure == null ? creds : validCurrent();
            } else if (fetching != f) {
                // answered after its timeout (or the timeout after the answer): a token that came late is kept,
                // unless one that lasts longer came meanwhile, a fetch is on its way, or invalidate() was called since
                // it started (it may be the very token the broker refused)
                if (failure == null && fetching == null && generation == invalidations && outlasts(creds, current)) {
                    current = creds;
                    staleAt = staleAt(fetchedAt, creds.expiresAt());
                }
                return;
            } else {
                fetching = null;
                fetchingRenews = false;
                if (failure == null) {
                    current = creds;
                    staleAt = staleAt(fetchedAt, creds.expiresAt());
                    result = creds;
                } else if (validCurrent() != null) {
                    LOG.warn(
                            "could not fetch a new token, going on with the current one (expires at {}): {}",
                            current.expiresAt(),
                            failure.toString());
                    result = current;
                }
            }
        }
        if (result != null) {
            f.complete(result);
        } else {
            f.completeExceptionally(failure);
        }
    }

    /** The current token while it has not expired, else null. Guarded by this. */
    private Credentials validCurrent() {
        Credentials c = current;
        return c != null && (c.expiresAt() == null || clock.instant().isBefore(c.expiresAt())) ? c : null;
    }

    /** Whether {@code fresh} is worth more than {@code held}: there is none, or it expires later (or never). */
    private static boolean outlasts(Credentials fresh, Credentials held) {
        if (held == null) {
            return true;
        }
        if (held.expiresAt() == null) {
            return false;
        }
        return fresh.expiresAt() == null || fresh.expiresAt().isAfter(held.expiresAt());
    }

    /** When a token fetched at {@code fetchedAt} is due for renewal: after the refresh ratio of its lifetime. */
    static Instant staleAt(Instant fetchedAt, Instant expiresAt) {
        if (expiresAt == null) {
            return null;
        }
        Duration lifetime = Duration.between(fetchedAt, expiresAt);
        if (lifetime.isNegative()) {
            return fetchedAt;
        }
        return fetchedAt.plus(lifetime.multipliedBy(REFRESH_RATIO_PERCENT).dividedBy(100));
    }
}
