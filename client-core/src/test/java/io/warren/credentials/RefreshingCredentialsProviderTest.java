package io.warren.credentials;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class RefreshingCredentialsProviderTest {

    private final MovingClock clock = new MovingClock();
    private final Deque<CompletableFuture<Credentials>> fetches = new ArrayDeque<>();
    private final RefreshingCredentialsProvider provider = RefreshingCredentialsProvider.create(
            () -> {
                CompletableFuture<Credentials> f = new CompletableFuture<>();
                fetches.add(f);
                return f;
            },
            clock);

    /** A provider over the same scripted fetches ({@link #fetches}) whose fetches time out after {@code timeout}. */
    private RefreshingCredentialsProvider withFetchTimeout(Duration timeout) {
        return RefreshingCredentialsProvider.create(
                () -> {
                    CompletableFuture<Credentials> f = new CompletableFuture<>();
                    fetches.add(f);
                    return f;
                },
                clock,
                timeout);
    }

    private Credentials token(String value, int lifetimeSeconds) {
        return Credentials.of("svc", value, clock.instant().plusSeconds(lifetimeSeconds));
    }

    @Test
    void oneFetchInFlightServesEveryCaller() {
        CompletionStage<Credentials> a = provider.credentials();
        CompletionStage<Credentials> b = provider.credentials();
        assertEquals(1, fetches.size());
        assertNotSame(a, b, "each caller gets its own stage (none can complete the shared one)");
        Credentials t = token("t1", 100);
        fetches.poll().complete(t);
        assertSame(t, a.toCompletableFuture().join());
        assertSame(t, b.toCompletableFuture().join());
        assertEquals(1, provider.fetches());
    }

    @Test
    void theTokenIsKeptUntilEightyPercentOfItsLifetime() {
        provider.credentials();
        Credentials t1 = token("t1", 100);
        fetches.poll().complete(t1);
        clock.advance(Duration.ofSeconds(79));
        assertSame(t1, provider.credentials().toCompletableFuture().join());
        assertTrue(fetches.isEmpty());
        clock.advance(Duration.ofSeconds(1));
        CompletionStage<Credentials> next = provider.credentials();
        assertFalse(next.toCompletableFuture().isDone());
        Credentials t2 = token("t2", 100);
        fetches.poll().complete(t2);
        assertSame(t2, next.toCompletableFuture().join());
        assertEquals(2, provider.fetches());
    }

    @Test
    void aTokenWithoutExpiryIsFetchedOnce() {
        provider.credentials();
        fetches.poll().complete(Credentials.of("svc", "forever"));
        clock.advance(Duration.ofDays(365));
        assertEquals(
                "forever", provider.credentials().toCompletableFuture().join().secret());
        assertEquals(1, provider.fetches());
    }

    @Test
    void aFailedFetchKeepsAValidTokenAndReachesTheCallerOnceItExpired() {
        provider.credentials();
        Credentials t1 = token("t1", 100);
        fetches.poll().complete(t1);
        clock.advance(Duration.ofSeconds(90));
        CompletionStage<Credentials> stillValid = provider.credentials();
        fetches.poll().completeExceptionally(new IllegalStateException("endpoint down"));
        assertSame(t1, stillValid.toCompletableFuture().join());

        clock.advance(Duration.ofSeconds(11)); // t1 expired
        CompletionStage<Credentials> expired = provider.credentials();
        fetches.poll().completeExceptionally(new IllegalStateException("endpoint down"));
        CompletionException e = assertThrows(
                CompletionException.class, () -> expired.toCompletableFuture().join());
        assertEquals("endpoint down", e.getCause().getMessage());
    }

    @Test
    void invalidateForcesAFetch() {
        provider.credentials();
        fetches.poll().complete(token("t1", 100));
        provider.invalidate();
        provider.credentials();
        assertEquals(1, fetches.size());
    }

    /**
     * After invalidate() a failed fetch fails the caller: the token the application forgot (the broker refused it, say)
     * is not handed back (before, it was, while it had not expired).
     */
    @Test
    void aFailedFetchAfterInvalidateFailsInsteadOfHandingBackTheForgottenToken() {
        provider.credentials();
        fetches.poll().complete(token("t1", 100));
        provider.invalidate();
        CompletionStage<Credentials> after = provider.credentials();
        fetches.poll().completeExceptionally(new IllegalStateException("endpoint down"));
        CompletionException e = assertThrows(
                CompletionException.class, () -> after.toCompletableFuture().join());
        assertEquals("endpoint down", e.getCause().getMessage());
    }

    /**
     * A renewal already on its way when invalidate() is called answers only those who asked before it: a caller after
     * it gets a fetch of its own, and the renewal's token is not kept (it may be the very token the broker refused;
     * before, the caller after invalidate() joined the renewal and its token was kept as the current one).
     */
    @Test
    void aRenewalStartedBeforeInvalidateAnswersOnlyThoseWhoAskedBeforeIt() {
        renewalInFlight();
        CompletionStage<Credentials> before = provider.credentials(); // joins the renewal
        provider.invalidate();
        CompletionStage<Credentials> after = provider.credentials();
        assertEquals(3, provider.fetches(), "a fetch of its own for the caller after invalidate()");
        Credentials refused = token("refused", 100);
        fetches.poll().complete(refused);
        assertSame(refused, before.toCompletableFuture().join(), "the earlier caller gets its fetch's answer");
        CompletionStage<Credentials> meanwhile = provider.credentials();
        assertFalse(meanwhile.toCompletableFuture().isDone(), "the renewal's token is not kept");
        Credentials fresh = token("fresh", 100);
        fetches.poll().complete(fresh);
        assertSame(fresh, after.toCompletableFuture().join());
        assertSame(fresh, meanwhile.toCompletableFuture().join());
        assertSame(fresh, provider.credentials().toCompletableFuture().join());
        assertEquals(3, provider.fetches());
    }

    /**
     * Connections refused together each call invalidate(), then credentials(): they share one fetch, as the class
     * promises (review: with every invalidate() letting go of the fetch on its way, each started its own).
     */
    @Test
    void invalidatesOneAfterTheOtherShareOneFetch() {
        renewalInFlight();
        provider.invalidate();
        CompletionStage<Credentials> first = provider.credentials();
        provider.invalidate();
        CompletionStage<Credentials> second = provider.credentials();
        assertEquals(3, provider.fetches(), "the renewal, then one fetch for both");
        fetches.poll().complete(token("renewal", 100));
        Credentials fresh = token("fresh", 100);
        fetches.poll().complete(fresh);
        assertSame(fresh, first.toCompletableFuture().join());
        assertSame(fresh, second.toCompletableFuture().join());
    }

    /** A renewal let go of that fails hands those who waited for it a token fetched since, while that one is valid. */
    @Test
    void aRenewalLetGoOfThatFailsHandsItsCallersTheTokenFetchedSince() {
        renewalInFlight();
        CompletionStage<Credentials> before = provider.credentials();
        provider.invalidate();
        provider.credentials();
        CompletableFuture<Credentials> renewal = fetches.poll();
        Credentials fresh = token("fresh", 100);
        fetches.poll().complete(fresh);
        renewal.completeExceptionally(new IllegalStateException("endpoint down"));
        assertSame(fresh, before.toCompletableFuture().join());
    }

    /** A token t1 fetched, then 85 % of its lifetime passed: the next call starts a renewal (fetch 2), unanswered. */
    private void renewalInFlight() {
        provider.credentials();
        fetches.poll().complete(token("t1", 100));
        clock.advance(Duration.ofSeconds(85));
        provider.credentials();
        assertEquals(2, provider.fetches(), "a renewal on its way");
    }

    @Test
    void aThrowingTokenSourceFailsTheStage() {
        RefreshingCredentialsProvider broken = RefreshingCredentialsProvider.create(() -> {
            throw new IllegalStateException("no client configured");
        });
        CompletionException e = assertThrows(
                CompletionException.class,
                () -> broken.credentials().toCompletableFuture().join());
        assertEquals("no client configured", e.getCause().getMessage());
    }

    /** A fetch that never answers fails at its timeout, and the next call fetches again instead of waiting on it. */
    @Test
    void aHungFetchTimesOutAndTheNextCallFetchesAgain() throws Exception {
        RefreshingCredentialsProvider p = withFetchTimeout(Duration.ofMillis(20));
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> p.credentials().toCompletableFuture().get(30, TimeUnit.SECONDS));
        assertInstanceOf(TimeoutException.class, e.getCause());
        CompletionStage<Credentials> again = p.credentials();
        assertEquals(2, p.fetches(), "a new fetch, not the hung one's stage");
        Credentials t = token("t2", 100);
        fetches.pollLast().complete(t);
        assertSame(t, again.toCompletableFuture().join());
        // the hung fetch answers at last, with a token that outlasts t2: kept for the next caller
        Credentials late = token("late", 500);
        fetches.pollFirst().complete(late);
        clock.advance(Duration.ofSeconds(81)); // t2 is due for renewal, the late one is not
        assertSame(late, p.credentials().toCompletableFuture().join());
        assertEquals(2, p.fetches());
        assertThrows(
                IllegalArgumentException.class,
                () -> RefreshingCredentialsProvider.create(() -> null, clock, Duration.ZERO));
    }

    /**
     * {@code p} fetches t1 (100 s), the clock passes its renewal (80 %), and the renewal's fetch times out: the caller
     * is served t1, still valid. The timed-out fetch is left in {@link #fetches}, unanswered.
     */
    private void renewalTimedOutWhileValid(RefreshingCredentialsProvider p) throws Exception {
        CompletionStage<Credentials> first = p.credentials();
        Credentials t1 = token("t1", 100);
        fetches.poll().complete(t1);
        assertSame(t1, first.toCompletableFuture().join());
        clock.advance(Duration.ofSeconds(81)); // due for renewal, still valid
        assertSame(t1, p.credentials().toCompletableFuture().get(30, TimeUnit.SECONDS), "the timeout serves t1");
    }

    /** A fetch timed out while the current token was still valid (so the caller got that one) and answered later. */
    @Test
    void aLateTokenAfterATimeoutServedByTheCurrentOneIsKept() throws Exception {
        RefreshingCredentialsProvider p = withFetchTimeout(Duration.ofMillis(20));
        renewalTimedOutWhileValid(p);
        Credentials t2 = token("t2", 100);
        fetches.poll().complete(t2); // late
        assertSame(t2, p.credentials().toCompletableFuture().join());
        assertEquals(2, p.fetches(), "the late token is used, not fetched again");
    }

    /** A late token does not stand in for the fetch that invalidate() asked for. */
    @Test
    void aLateTokenDoesNotAnswerForAFetchAskedAfterInvalidate() throws Exception {
        RefreshingCredentialsProvider p = withFetchTimeout(Duration.ofMillis(20));
        renewalTimedOutWhileValid(p);
        CompletableFuture<Credentials> timedOut = fetches.poll();
        p.invalidate();
        CompletionStage<Credentials> asked = p.credentials(); // a new fetch
        timedOut.complete(token("late", 500));
        CompletionStage<Credentials> meanwhile = p.credentials();
        assertFalse(meanwhile.toCompletableFuture().isDone(), "waits for the fetch invalidate() asked for");
        Credentials fresh = token("fresh", 100);
        fetches.poll().complete(fresh);
        assertSame(fresh, asked.toCompletableFuture().join());
        assertSame(fresh, meanwhile.toCompletableFuture().join());
    }

    /**
     * A token from a fetch started before invalidate() that answers late is not taken up after it, however long it
     * lasts (before, it replaced the fresh one: it may be the very token the broker refused).
     */
    @Test
    void aLateTokenFromBeforeInvalidateIsNotTakenUp() throws Exception {
        RefreshingCredentialsProvider p = withFetchTimeout(Duration.ofMillis(20));
        renewalTimedOutWhileValid(p);
        CompletableFuture<Credentials> timedOut = fetches.poll();
        p.invalidate();
        CompletionStage<Credentials> asked = p.credentials();
        Credentials fresh = token("fresh", 100);
        fetches.poll().complete(fresh);
        assertSame(fresh, asked.toCompletableFuture().join());
        timedOut.complete(token("late", 500));
        assertSame(fresh, p.credentials().toCompletableFuture().join());
        assertEquals(3, p.fetches(), "the first, the timed-out renewal, the one invalidate() asked for");
    }

    /**
     * A fetch's timeout fails the callers' stages off the JDK's timer thread: a caller's continuation that blocks
     * there would hold up every completeOnTimeout and orTimeout in the JVM, another provider's timeout among them.
     */
    @Test
    void aFetchTimeoutRunsNoCallerContinuationOnTheJdkTimerThread() throws Exception {
        RefreshingCredentialsProvider p = withFetchTimeout(Duration.ofMillis(20));
        RefreshingCredentialsProvider other = withFetchTimeout(Duration.ofMillis(40));
        CompletableFuture<Void> release = new CompletableFuture<>();
        CompletableFuture<String> ranOn = new CompletableFuture<>();
        CompletableFuture<Void> blocked = p.credentials().toCompletableFuture().handle((c, e) -> {
            ranOn.complete(Thread.currentThread().getName());
            release.orTimeout(10, TimeUnit.SECONDS).exceptionally(x -> null).join(); // a continuation that blocks
            return null;
        });
        try {
            CompletionStage<Credentials> otherAsked = other.credentials();
            ExecutionException e = assertThrows(
                    ExecutionException.class,
                    () -> otherAsked.toCompletableFuture().get(5, TimeUnit.SECONDS));
            assertInstanceOf(TimeoutException.class, e.getCause());
            assertFalse(ranOn.get(5, TimeUnit.SECONDS).startsWith("CompletableFutureDelayScheduler"), ranOn.get());
        } finally {
            release.complete(null);
            blocked.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void credentialsNeverShowTheSecret() {
        assertFalse(Credentials.of("svc", "s3cret").toString().contains("s3cret"));
    }

    static final class MovingClock extends Clock {
        private Instant now = Instant.parse("2030-01-01T00:00:00Z");

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
