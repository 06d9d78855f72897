package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.warren.AuthenticationException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.RpcTimeoutException;
import io.warren.codec.Frame;
import io.warren.codec.method.ConnectionCloseEncoder;
import io.warren.codec.method.ConnectionStartOk;
import io.warren.codec.method.ConnectionUpdateSecret;
import io.warren.codec.method.ConnectionUpdateSecretOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.credentials.Credentials;
import io.warren.credentials.CredentialsProvider;
import io.warren.credentials.RefreshingCredentialsProvider;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Credentials providers on the wire: asked at connection.start (so every new connection, recovery's too, gets
 * what is valid then), and connection.update-secret before an expiring secret runs out.
 */
class CredentialsTest {

    /** A provider whose answers the test gives one at a time. */
    static final class ScriptedProvider implements CredentialsProvider {
        final Deque<CompletableFuture<Credentials>> answers = new ArrayDeque<>();
        final AtomicInteger asked = new AtomicInteger();

        @Override
        public CompletionStage<Credentials> credentials() {
            asked.incrementAndGet();
            CompletableFuture<Credentials> f = new CompletableFuture<>();
            answers.add(f);
            return f;
        }

        void answer(Credentials c) {
            answers.poll().complete(c);
        }
    }

    /** No heartbeats: the tests move time by minutes. */
    private static ConnectionOptions options() {
        return new ConnectionOptions().requestedHeartbeat(0);
    }

    private static String plainResponse(Frame startOk) {
        try {
            ByteBuf p = startOk.payload();
            return new ConnectionStartOk().wrap(p, p.readerIndex()).response().toString(StandardCharsets.UTF_8);
        } finally {
            startOk.release();
        }
    }

    private static String updateSecretOf(Frame f) {
        try {
            ByteBuf p = f.payload();
            ConnectionUpdateSecret u = new ConnectionUpdateSecret().wrap(p, p.readerIndex());
            return u.newSecretAsString() + "|" + u.reasonAsString();
        } finally {
            f.release();
        }
    }

    private static Throwable failure(CompletionStage<?> stage) {
        CompletableFuture<?> f = stage.toCompletableFuture();
        assertTrue(f.isCompletedExceptionally(), "expected a failure");
        try {
            f.join();
            throw new AssertionError("unreachable");
        } catch (CompletionException e) {
            return e.getCause();
        }
    }

    @Test
    void theProviderIsAskedAtConnectionStartAndItsAnswerIsTheStartOkResponse() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker =
                new FakeBroker(options().username("ignored").password("ignored").credentialsProvider(provider))) {
            broker.next(); // protocol header only
            assertEquals(0, provider.asked.get(), "not asked before connection.start");
            broker.sendStart("PLAIN");
            assertEquals(1, provider.asked.get());
            broker.expectNothing(); // start-ok waits for the provider
            provider.answer(Credentials.of("svc", "token-1"));
            assertEquals("\0svc\0token-1", plainResponse(broker.expect(0, MethodIds.CONNECTION_START_OK)));
            broker.handshakeAfterStartOk();
        }
    }

    @Test
    void aProviderAnsweringOnAnotherThreadIsHandedBackToTheEventLoop() throws Exception {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            broker.sendStart("PLAIN");
            Thread t = new Thread(() -> provider.answer(Credentials.of("svc", "from-another-thread")));
            t.start();
            t.join();
            assertEquals("\0svc\0from-another-thread", plainResponse(broker.expect(0, MethodIds.CONNECTION_START_OK)));
            broker.handshakeAfterStartOk();
        }
    }

    @Test
    void aFailingProviderFailsTheConnectAttempt() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            broker.sendStart("PLAIN");
            provider.answers.poll().completeExceptionally(new IllegalStateException("token endpoint down"));
            broker.client.runPendingTasks();
            Throwable cause = failure(broker.connected);
            // not the broker's refusal: a token endpoint down now may answer at the next attempt (recovery retries)
            assertFalse(cause instanceof AuthenticationException, cause.toString());
            assertFalse(assertInstanceOf(ConnectionClosedException.class, cause).initiatedByBroker());
            assertTrue(cause.getMessage().contains("token endpoint down"), cause.getMessage());
            assertFalse(broker.client.isOpen());
        }
    }

    /**
     * A start-ok that cannot be built once the provider answered (a client property's map changed after it was set,
     * to hold a value with no AMQP type) fails the attempt at once: the provider's callback does not swallow it.
     */
    @Test
    void aStartOkThatCannotBeBuiltAfterTheProviderAnsweredFailsTheAttempt() {
        ScriptedProvider provider = new ScriptedProvider();
        Map<String, Object> meta = new HashMap<>();
        try (FakeBroker broker =
                new FakeBroker(options().clientProperty("meta", meta).credentialsProvider(provider))) {
            meta.put("id", new Object());
            broker.sendStart("PLAIN");
            provider.answer(Credentials.of("svc", "token-1"));
            broker.client.runPendingTasks();
            Throwable cause = failure(broker.connected);
            assertTrue(cause.getMessage().contains("start-ok"), cause.getMessage());
            assertFalse(cause.getMessage().contains("token-1"), "no secret in the message");
            assertFalse(broker.client.isOpen());
        }
    }

    @Test
    void aStaticPasswordNeverSchedulesARefresh() {
        try (FakeBroker broker =
                new FakeBroker(options().credentialsProvider(CredentialsProvider.of("guest", "guest")))) {
            broker.handshake();
            broker.client.advanceTimeBy(1, TimeUnit.DAYS);
            broker.client.runScheduledPendingTasks();
            broker.expectNothing();
        }
    }

    @Test
    void anExpiringSecretIsUpdatedBeforeItExpires() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            broker.sendStart("PLAIN");
            provider.answer(Credentials.of("svc", "token-1", Instant.now().plusSeconds(100)));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.handshakeAfterStartOk();
            assertEquals(1, provider.asked.get());

            broker.client.advanceTimeBy(70, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertEquals(1, provider.asked.get(), "not asked before 80% of the lifetime");
            broker.client.advanceTimeBy(11, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertEquals(2, provider.asked.get(), "asked at 80% of the lifetime");

            provider.answer(Credentials.of("svc", "token-2", Instant.now().plusSeconds(100)));
            broker.client.runPendingTasks();
            assertEquals(
                    "token-2|credentials refresh",
                    updateSecretOf(broker.expect(0, MethodIds.CONNECTION_UPDATE_SECRET)));
            broker.send(0, new ConnectionUpdateSecretOkEncoder());
            assertEquals("token-2", broker.handler.secrets().current().secret());

            // and again from the new secret's expiry
            broker.client.advanceTimeBy(81, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertEquals(3, provider.asked.get());
            provider.answer(Credentials.of("svc", "token-3", Instant.now().plusSeconds(100)));
            broker.client.runPendingTasks();
            assertEquals(
                    "token-3|credentials refresh",
                    updateSecretOf(broker.expect(0, MethodIds.CONNECTION_UPDATE_SECRET)));
            assertTrue(broker.client.isOpen());
        }
    }

    /** The handshake, the provider answering with {@code secret} that expires in {@code seconds}; returns it. */
    private static Credentials openWith(FakeBroker broker, ScriptedProvider provider, String secret, int seconds) {
        broker.sendStart("PLAIN");
        Credentials c = Credentials.of("svc", secret, Instant.now().plusSeconds(seconds));
        provider.answer(c);
        broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
        broker.handshakeAfterStartOk();
        return c;
    }

    @Test
    void theSameSecretIsNotSentAgainAndIsAskedForLater() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            Credentials first = openWith(broker, provider, "token-1", 100);
            broker.client.advanceTimeBy(81, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            provider.answer(first);
            broker.client.runPendingTasks();
            broker.expectNothing();
            broker.client.advanceTimeBy(10, TimeUnit.SECONDS); // halfway to the expiry, 19 s away
            broker.client.runScheduledPendingTasks();
            assertEquals(3, provider.asked.get());
        }
    }

    /** Past its expiry, a provider that still returns the same secret is not asked again every second. */
    @Test
    void anExpiredSecretThatTheProviderStillReturnsIsNotPolledForEver() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            Credentials first = openWith(broker, provider, "token-1", 100);
            broker.client.advanceTimeBy(101, TimeUnit.SECONDS); // past the expiry: the refresh at 80 % asks
            broker.client.runScheduledPendingTasks();
            int asked = provider.asked.get();
            provider.answer(first);
            broker.client.runPendingTasks();
            for (int s = 0; s < 60; s++) {
                broker.client.advanceTimeBy(1, TimeUnit.SECONDS);
                broker.client.runScheduledPendingTasks();
            }
            assertEquals(asked, provider.asked.get(), "not asked again once the same secret came back expired");
            broker.expectNothing();
        }
    }

    @Test
    void theSameSecretWithALaterExpiryIsAdoptedWithoutAnUpdate() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            broker.sendStart("PLAIN");
            provider.answer(Credentials.of("svc", "password", Instant.now().plusSeconds(100)));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.handshakeAfterStartOk();
            broker.client.advanceTimeBy(81, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            provider.answer(Credentials.of("svc", "password", Instant.now().plusSeconds(1000)));
            broker.client.runPendingTasks();
            broker.expectNothing();
            broker.client.advanceTimeBy(700, TimeUnit.SECONDS); // not yet 80% of the new 1000 s
            broker.client.runScheduledPendingTasks();
            assertEquals(2, provider.asked.get());
            broker.client.advanceTimeBy(150, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertEquals(3, provider.asked.get());
        }
    }

    /**
     * The same secret without an expiry any more is adopted: nothing is refreshed again (before, the old expiry was
     * kept, the provider asked again and again, and at that expiry a warning said the secret had expired).
     */
    @Test
    void theSameSecretWithoutAnExpiryIsAdoptedAndNotRefreshedAgain() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            openWith(broker, provider, "password", 100);
            broker.client.advanceTimeBy(81, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            provider.answer(Credentials.of("svc", "password", null));
            broker.client.runPendingTasks();
            for (int s = 0; s < 60; s++) {
                broker.client.advanceTimeBy(10, TimeUnit.SECONDS);
                broker.client.runScheduledPendingTasks();
            }
            assertEquals(2, provider.asked.get(), "not asked again");
            broker.expectNothing();
        }
    }

    @Test
    void aFailedRefreshIsRetriedWhileTheSecretIsValid() {
        ScriptedProvider provider = new ScriptedProvider();
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            broker.sendStart("PLAIN");
            provider.answer(Credentials.of("svc", "token-1", Instant.now().plusSeconds(100)));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.handshakeAfterStartOk();
            broker.client.advanceTimeBy(81, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            provider.answers.poll().completeExceptionally(new IllegalStateException("token endpoint down"));
            broker.client.runPendingTasks();
            broker.expectNothing();
            assertTrue(broker.client.isOpen(), "a failed refresh does not close the connection");
            broker.client.advanceTimeBy(10, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertEquals(3, provider.asked.get(), "asked again");
        }
    }

    /** A provider that answers a refresh with null (not a stage) is a failure like another: retried, not the end. */
    @Test
    void aRefreshThatTheProviderAnswersWithNullIsRetriedWhileTheSecretIsValid() {
        AtomicInteger asked = new AtomicInteger();
        CredentialsProvider provider = () -> asked.incrementAndGet() == 1
                ? CompletableFuture.completedFuture(
                        Credentials.of("svc", "token-1", Instant.now().plusSeconds(100)))
                : null;
        try (FakeBroker broker = new FakeBroker(options().credentialsProvider(provider))) {
            broker.sendStart("PLAIN");
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.handshakeAfterStartOk();
            broker.client.advanceTimeBy(81, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertEquals(2, asked.get());
            broker.client.advanceTimeBy(10, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertEquals(3, asked.get(), "asked again");
            assertTrue(broker.client.isOpen());
        }
    }

    /**
     * A new secret whose update-secret frame would pass the connection's frame-max is refused before anything is
     * written: RabbitMQ closes the whole connection over such a frame (501). The message gives sizes, not the secret.
     */
    @Test
    void anUpdateSecretOverTheFrameMaxIsRefusedBeforeAnythingIsWritten() {
        try (FakeBroker broker = new FakeBroker(options())) {
            ConnectionImpl connection = broker.handshake(2047, 4096, 0);
            String secret = "x".repeat(10_000);
            IllegalArgumentException e = assertInstanceOf(
                    IllegalArgumentException.class, failure(connection.updateSecret(secret, "rotation")));
            assertTrue(e.getMessage().contains("frame-max of 4096"), e.getMessage());
            assertFalse(e.getMessage().contains("xxxx"), e.getMessage());
            broker.expectNothing();
            assertTrue(connection.isOpen());
            CompletionStage<Void> fits = connection.updateSecret("x".repeat(4000), "rotation");
            broker.expectAndRelease(0, MethodIds.CONNECTION_UPDATE_SECRET);
            broker.send(0, new ConnectionUpdateSecretOkEncoder());
            fits.toCompletableFuture().join();
        }
    }

    @Test
    void updateSecretCompletesOnUpdateSecretOkInOrder() {
        try (FakeBroker broker = new FakeBroker(options())) {
            ConnectionImpl connection = broker.handshake();
            CompletionStage<Void> first = connection.updateSecret("s1", "rotation");
            CompletionStage<Void> second = connection.updateSecret("s2", "rotation");
            assertEquals("s1|rotation", updateSecretOf(broker.expect(0, MethodIds.CONNECTION_UPDATE_SECRET)));
            assertEquals("s2|rotation", updateSecretOf(broker.expect(0, MethodIds.CONNECTION_UPDATE_SECRET)));
            assertFalse(first.toCompletableFuture().isDone());
            broker.send(0, new ConnectionUpdateSecretOkEncoder());
            assertTrue(first.toCompletableFuture().isDone());
            assertFalse(second.toCompletableFuture().isDone());
            broker.send(0, new ConnectionUpdateSecretOkEncoder());
            second.toCompletableFuture().join();
        }
    }

    @Test
    void updateSecretTimesOutAndALateReplyIsMatchedToIt() {
        try (FakeBroker broker = new FakeBroker(options().rpcTimeout(Duration.ofSeconds(5)))) {
            ConnectionImpl connection = broker.handshake();
            CompletionStage<Void> late = connection.updateSecret("s1", "rotation");
            broker.expectAndRelease(0, MethodIds.CONNECTION_UPDATE_SECRET);
            broker.client.advanceTimeBy(6, TimeUnit.SECONDS);
            broker.client.runScheduledPendingTasks();
            assertInstanceOf(RpcTimeoutException.class, failure(late));
            CompletionStage<Void> next = connection.updateSecret("s2", "rotation");
            broker.expectAndRelease(0, MethodIds.CONNECTION_UPDATE_SECRET);
            broker.send(0, new ConnectionUpdateSecretOkEncoder()); // the late reply to s1
            assertFalse(next.toCompletableFuture().isDone());
            broker.send(0, new ConnectionUpdateSecretOkEncoder());
            next.toCompletableFuture().join();
        }
    }

    @Test
    void aPendingUpdateFailsWhenTheBrokerClosesTheConnection() {
        try (FakeBroker broker = new FakeBroker(options())) {
            ConnectionImpl connection = broker.handshake();
            CompletionStage<Void> update = connection.updateSecret("expired-token", "rotation");
            broker.expectAndRelease(0, MethodIds.CONNECTION_UPDATE_SECRET);
            broker.send(
                    0,
                    new ConnectionCloseEncoder()
                            .replyCode(530)
                            .replyText("NOT_ALLOWED - token expired")
                            .classId(10)
                            .methodId(70));
            Throwable cause = failure(update);
            assertInstanceOf(ConnectionClosedException.class, cause);
            assertTrue(cause.getMessage().contains("token expired"), cause.getMessage());
            assertInstanceOf(ConnectionClosedException.class, failure(connection.updateSecret("x", "y")));
        }
    }

    @Test
    void aNewConnectionWithTheSameProviderAuthenticatesWithTheFreshToken() {
        AtomicInteger n = new AtomicInteger();
        MutableClock clock = new MutableClock();
        RefreshingCredentialsProvider provider = RefreshingCredentialsProvider.create(
                () -> CompletableFuture.completedFuture(Credentials.of(
                        "svc", "token-" + n.incrementAndGet(), clock.instant().plusSeconds(60))),
                clock);
        ConnectionOptions options = options().credentialsProvider(provider);
        try (FakeBroker first = new FakeBroker(options)) {
            first.sendStart("PLAIN");
            assertEquals("\0svc\0token-1", plainResponse(first.expect(0, MethodIds.CONNECTION_START_OK)));
        }
        clock.advance(Duration.ofSeconds(49)); // past 80% of the token's 60 s: the next connect fetches
        try (FakeBroker again = new FakeBroker(options)) {
            again.sendStart("PLAIN");
            assertEquals("\0svc\0token-2", plainResponse(again.expect(0, MethodIds.CONNECTION_START_OK)));
        }
    }

    /** A clock the test moves. */
    static final class MutableClock extends java.time.Clock {
        private Instant now = Instant.parse("2030-01-01T00:00:00Z");

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public java.time.ZoneId getZone() {
            return java.time.ZoneOffset.UTC;
        }

        @Override
        public java.time.Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
