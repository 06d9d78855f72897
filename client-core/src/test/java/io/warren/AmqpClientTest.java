package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.codec.base.AmqpProtocolException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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
        try (ServerSocket s1 = new ServerSocket(0);
                ServerSocket s2 = new ServerSocket(0)) {
            a = s1.getLocalPort();
            b = s2.getLocalPort();
        }
        ConnectionOptions options =
                new ConnectionOptions().addresses(List.of(new Address("127.0.0.1", a), new Address("127.0.0.1", b)));
        ConnectionFailedException e =
                assertInstanceOf(ConnectionFailedException.class, failure(client.connect(options)));
        assertTrue(
                e.getMessage().contains("127.0.0.1:" + a) && e.getMessage().contains("127.0.0.1:" + b), e.getMessage());
        assertEquals(List.of(new Address("127.0.0.1", a), new Address("127.0.0.1", b)), e.addresses());
        assertEquals(1, e.getSuppressed().length);
        assertInstanceOf(ConnectionFailedException.class, e.getCause());
    }

    /**
     * The socket cannot even be registered (the application's loops already shut down; likewise a channel that cannot
     * be created when the process has no file descriptors left): the connect's stage fails, it neither throws nor
     * hangs (recovery's attempts go through the same path).
     */
    @Test
    void aConnectWhoseChannelCannotBeRegisteredFailsItsStage() throws Exception {
        io.netty.channel.EventLoopGroup group =
                new io.netty.channel.MultiThreadIoEventLoopGroup(1, io.netty.channel.nio.NioIoHandler.newFactory());
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        AmqpClient onDeadLoops = AmqpClient.create(new ClientOptions().eventLoopGroup(group));
        try {
            CompletionStage<Connection> stage = onDeadLoops.connect(new ConnectionOptions()
                    .addresses(List.of(new Address("127.0.0.1", 1), new Address("127.0.0.1", 2))));
            ConnectionFailedException e = assertInstanceOf(ConnectionFailedException.class, failure(stage));
            assertEquals(List.of(new Address("127.0.0.1", 1), new Address("127.0.0.1", 2)), e.addresses());
        } finally {
            onDeadLoops.close();
        }
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

    /**
     * A server on a loopback socket that answers the protocol header with {@code reply}, then reads what the
     * client sends until the client closes the socket (at most 5 s, far under the 10 s close timeout used).
     */
    private static final class GarbageServer implements AutoCloseable {
        final ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        final CompletableFuture<byte[]> received = new CompletableFuture<>();

        GarbageServer(byte[] reply) throws IOException {
            Thread t = new Thread(
                    () -> {
                        try (Socket s = socket.accept()) {
                            s.setSoTimeout(5000);
                            InputStream in = s.getInputStream();
                            in.readNBytes(8); // AMQP 0-9-1
                            s.getOutputStream().write(reply);
                            s.getOutputStream().flush();
                            received.complete(
                                    in.readAllBytes()); // until the client closes; SocketTimeoutException after 5 s
                        } catch (IOException | RuntimeException e) {
                            received.completeExceptionally(e);
                        }
                    },
                    "garbage-server");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"an HTTP answer", "a frame size of 0x7FFFFFFF"})
    void aServerThatAnswersWithGarbageFailsTheConnectWithThe501AndIsClosedAtOnce(String what) throws Exception {
        byte[] reply = what.startsWith("an HTTP")
                ? "HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII)
                : new byte[] {1, 0, 0, 0x7F, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF};
        try (GarbageServer server = new GarbageServer(reply)) {
            // a connect timeout shorter than the close timeout: the attempt must not end as a bare timeout
            ConnectionOptions options = new ConnectionOptions()
                    .address("127.0.0.1", server.socket.getLocalPort())
                    .connectionTimeout(Duration.ofSeconds(3))
                    .closeTimeout(Duration.ofSeconds(10))
                    .automaticRecovery(false);
            ConnectionClosedException e =
                    assertInstanceOf(ConnectionClosedException.class, failure(client.connect(options)));
            assertEquals(501, e.replyCode(), e.getMessage());
            AmqpProtocolException cause = assertInstanceOf(AmqpProtocolException.class, e.getCause());
            assertEquals(501, cause.replyCode());
            assertTrue(
                    e.getMessage().contains("501 FRAME_ERROR") && e.getMessage().contains("connection.start"),
                    e.getMessage());
            // the client closed the socket by itself, and told the server why first: connection.close 501
            byte[] sent = server.received.get(10, TimeUnit.SECONDS);
            byte[] close501 = {0, 10, 0, 50, 0x01, (byte) 0xF5}; // class 10, method 50, reply-code 501
            assertTrue(indexOf(sent, close501) >= 0, () -> "no connection.close 501 in " + Arrays.toString(sent));
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * A client whose loop was never used, and whose thread the JVM cannot create when close() starts it to
     * terminate (an {@link OutOfMemoryError}, as Netty rethrows it): close() completes all the same, failed with that
     * error, not left pending for ever.
     */
    @Test
    void closeCompletesWithTheErrorWhenALoopsThreadCannotStartToTerminate() throws Exception {
        ThreadFactory noThreads = r -> new Thread(r) {
            @Override
            public synchronized void start() {
                throw new OutOfMemoryError("unable to create native thread (test)");
            }
        };
        AmqpClient own = AmqpClient.create(new ClientOptions().ioThreads(2).threadFactory(noThreads));
        Throwable e = failure(own.close());
        assertInstanceOf(OutOfMemoryError.class, e);
        assertEquals(1, e.getSuppressed().length, "the other loop's is there too");
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
