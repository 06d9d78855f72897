package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ConnectException;
import java.net.ServerSocket;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The entry point's failures that need no broker. */
class AmqpClientTest {

    private static AmqpClient client;

    @BeforeAll
    static void create() {
        client = AmqpClient.create(new ClientOptions().ioThreads(1));
    }

    @AfterAll
    static void close() throws Exception {
        client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static Throwable failure(CompletionStage<?> stage) throws Exception {
        try {
            stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("expected a failure");
    }

    @Test
    void nioWhenNoNativeTransportIsOnTheClasspath() {
        assertEquals("nio", client.transport());
    }

    @Test
    void aMalformedUriFailsTheStage() throws Exception {
        assertInstanceOf(IllegalArgumentException.class, failure(client.connect("http://nope")));
    }

    @Test
    void externalWithoutTlsIsRefusedBeforeConnecting() throws Exception {
        Throwable e = failure(client.connect(new ConnectionOptions().authMechanism(AuthMechanism.EXTERNAL)));
        assertInstanceOf(IllegalArgumentException.class, e);
        assertTrue(e.getMessage().contains("TLS"), e.getMessage());
    }

    @Test
    void everyAddressIsTriedAndTheFailureNamesThemAll() throws Exception {
        int a;
        int b;
        try (ServerSocket s1 = new ServerSocket(0); ServerSocket s2 = new ServerSocket(0)) {
            a = s1.getLocalPort();
            b = s2.getLocalPort();
        }
        ConnectionOptions options = new ConnectionOptions()
                .addresses(List.of(new Address("127.0.0.1", a), new Address("127.0.0.1", b)));
        ConnectionFailedException e = assertInstanceOf(ConnectionFailedException.class, failure(client.connect(options)));
        assertTrue(e.getMessage().contains("127.0.0.1:" + a) && e.getMessage().contains("127.0.0.1:" + b),
                e.getMessage());
        assertEquals(List.of(new Address("127.0.0.1", a), new Address("127.0.0.1", b)), e.addresses());
        assertEquals(1, e.getSuppressed().length);
        assertInstanceOf(ConnectionFailedException.class, e.getCause());
    }

    /** A refused TCP connect: the connection never opened, so it is not a ConnectionClosedException. */
    @Test
    void aRefusedConnectIsAConnectionFailedExceptionNamingTheAddressNotTheCredentials() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // closed again: nothing listens here
        }
        Throwable failure = failure(client.connect("amqp://alice:s3cret-pw@127.0.0.1:" + port + "/%2F"));
        ConnectionFailedException e = assertInstanceOf(ConnectionFailedException.class, failure);
        assertFalse(ConnectionClosedException.class.isInstance(failure));
        assertInstanceOf(ConnectException.class, e.getCause());
        assertEquals(List.of(new Address("127.0.0.1", port)), e.addresses());
        assertTrue(e.getMessage().startsWith("could not connect to 127.0.0.1:" + port), e.getMessage());
        assertFalse(e.getMessage().contains("s3cret-pw") || e.getMessage().contains("alice"), e.getMessage());
    }

    @Test
    void optionsAreCopiedAtConnect() {
        ConnectionOptions options = new ConnectionOptions().username("u");
        ConnectionOptions copy = new ConnectionOptions(options);
        options.username("changed");
        assertEquals("u", copy.username());
        assertTrue(copy.toString().contains("u"));
        assertTrue(!copy.toString().contains("guest\0"));
    }
}
