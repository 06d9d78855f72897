package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AuthenticationException;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.QueueSpec;
import io.warren.credentials.Credentials;
import io.warren.credentials.CredentialsProvider;
import io.warren.credentials.RefreshingCredentialsProvider;
import io.warren.credentials.TokenSource;
import io.warren.it.fault.FaultProxy;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Credentials providers and connection.update-secret against RabbitMQ. */
@ExtendWith(BrokerExtension.class)
class CredentialsIT {

    private static ConnectionOptions options(Broker broker, String name) {
        return ConnectionOptions.fromUri(broker.uri())
                .username("not-used")
                .password("not-used")
                .connectionName("warren-it CredentialsIT " + name);
    }

    @Test
    void theBrokerAcceptsUpdateSecret(Connection connection, Broker broker) throws Exception {
        await(connection.updateSecret(broker.password(), "warren-it"));
        Channel ch = await(connection.openChannel());
        await(ch.queueDeclare(QueueSpec.serverNamed()));
        assertTrue(connection.isOpen());
    }

    @Test
    void anExpiringTokenIsRefreshedOnTheLiveConnection(Broker broker) throws Exception {
        AtomicInteger fetches = new AtomicInteger();
        // The broker's internal users take the password as the "token", re-issued with a new expiry each time: the
        // connection adopts each new lease (the wire exchange itself is CredentialsTest's and the test above's).
        TokenSource tokens = () -> {
            fetches.incrementAndGet();
            return CompletableFuture.supplyAsync(() -> Credentials.of(
                    broker.username(), broker.password(), Instant.now().plusSeconds(3)));
        };
        RefreshingCredentialsProvider provider = RefreshingCredentialsProvider.create(tokens);
        Connection connection = await(
                BrokerExtension.client().connect(options(broker, "refresh").credentialsProvider(provider)));
        try {
            assertEquals(1, fetches.get());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (fetches.get() < 3 && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertTrue(fetches.get() >= 3, "the token was fetched again before each expiry: " + fetches.get());
            assertTrue(connection.isOpen(), "still open after several token lifetimes");
            Channel ch = await(connection.openChannel());
            await(ch.queueDeclare(QueueSpec.serverNamed()));
        } finally {
            await(connection.close());
        }
    }

    @Test
    void aRecoveredConnectionAuthenticatesWithWhatTheProviderGivesThen(Broker broker) throws Exception {
        AtomicInteger asked = new AtomicInteger();
        CredentialsProvider provider = () -> {
            asked.incrementAndGet();
            return CompletableFuture.completedFuture(Credentials.of(broker.username(), broker.password()));
        };
        String name = "warren-it CredentialsIT recovery " + System.nanoTime();
        Connection connection = await(BrokerExtension.client()
                .connect(options(broker, "recovery").connectionName(name).credentialsProvider(provider)));
        try {
            CompletableFuture<Void> recovered = new CompletableFuture<>();
            connection.addRecoveryListener(new io.warren.RecoveryListener() {
                @Override
                public void recoverySucceeded(Connection c) {
                    recovered.complete(null);
                }
            });
            assertEquals(1, asked.get());
            Rabbitmqctl.closeConnection(name, "closed by CredentialsIT");
            recovered.get(60, TimeUnit.SECONDS);
            assertEquals(2, asked.get(), "asked again for the recovery's connection.start");
            Channel ch = await(connection.openChannel());
            await(ch.queueDeclare(QueueSpec.serverNamed()));
        } finally {
            await(connection.close());
        }
    }

    @Test
    void wrongCredentialsFromTheProviderAreRefusedByTheBroker(Broker broker) {
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> await(BrokerExtension.client()
                        .connect(options(broker, "wrong")
                                .credentialsProvider(
                                        CredentialsProvider.of(broker.username(), "wrong-" + broker.password())))));
        assertInstanceOf(AuthenticationException.class, e.getCause());
        assertTrue(
                e.getCause().getMessage().contains(broker.username()),
                e.getCause().getMessage());
    }

    @Test
    void aFailingProviderFailsTheConnect(Broker broker) {
        CredentialsProvider failing = () -> CompletableFuture.failedFuture(new IllegalStateException("vault sealed"));
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> await(BrokerExtension.client()
                        .connect(options(broker, "failing").credentialsProvider(failing))));
        // the provider's failure, not the broker's refusal: a later attempt may get a token
        assertInstanceOf(ConnectionClosedException.class, e.getCause());
        assertFalse(
                e.getCause() instanceof AuthenticationException, e.getCause().toString());
        assertTrue(
                e.getCause().getMessage().contains("vault sealed"), e.getCause().getMessage());
    }

    /**
     * The token endpoint is down when the connection is lost (often for the same reason): recovery's first attempt
     * fails in the provider, and recovery tries again rather than giving up for good.
     */
    @Test
    void recoveryRetriesAProviderThatFailedOnce(Broker broker) throws Exception {
        AtomicInteger asked = new AtomicInteger();
        CredentialsProvider flaky = () -> asked.incrementAndGet() == 2
                ? CompletableFuture.failedFuture(new IllegalStateException("token endpoint unreachable"))
                : CompletableFuture.completedFuture(Credentials.of(broker.username(), broker.password()));
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client()
                    .connect(RecoveryIT.through(proxy, broker, "credentials-recovery")
                            .credentialsProvider(flaky)));
            try {
                RecoveryIT.Events events = new RecoveryIT.Events();
                c.addRecoveryListener(events);
                proxy.cutAll();
                events.awaitRecovery();
                assertEquals(List.of(true), events.willRetry, "the provider's failure was retried");
                assertTrue(asked.get() >= 3, "asked again after its failure: " + asked.get());
                Channel ch = await(c.openChannel());
                await(ch.queueDeclare(QueueSpec.serverNamed()));
            } finally {
                await(c.close());
            }
        }
    }
}
