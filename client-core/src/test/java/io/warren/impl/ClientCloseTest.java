package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.Address;
import io.warren.AmqpClient;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link AmqpClient#close()} against connects: made after it, and in flight on the application's loops. */
class ClientCloseTest {

    private EventLoopGroup group;

    @BeforeEach
    void loops() {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    @AfterEach
    void shutDown() {
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static Throwable failure(CompletionStage<?> stage) throws Exception {
        try {
            stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("expected a failure");
    }

    @Test
    void aConnectAfterCloseFailsAtOnce() throws Exception {
        AmqpClient client = AmqpClient.create(new ClientOptions().eventLoopGroup(group));
        client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        Throwable e = failure(client.connect(new ConnectionOptions().addresses(List.of(new Address("127.0.0.1", 1)))));
        assertInstanceOf(IllegalStateException.class, e);
    }

    /**
     * The handshake is at connection.open when the client closes; open-ok comes after: the connection it opened is
     * closed, its connect fails, and close() completes only then (the application's loops keep running, so nothing
     * else would close it).
     */
    @Test
    void aConnectInFlightAtCloseHasItsConnectionClosed() throws Exception {
        try (HoldingPeer peer = new HoldingPeer(3, "hold-open")) { // connection.open waits for open-ok
            AmqpClient client = AmqpClient.create(new ClientOptions().eventLoopGroup(group));
            CompletionStage<Connection> connect =
                    client.connect(new ConnectionOptions().addresses(List.of(new Address("127.0.0.1", peer.port()))));
            assertTrue(peer.held.await(10, TimeUnit.SECONDS));
            CompletableFuture<Void> closed = client.close().toCompletableFuture();
            assertFalse(closed.isDone());
            peer.release();
            assertInstanceOf(IllegalStateException.class, failure(connect));
            closed.get(10, TimeUnit.SECONDS);
            peer.awaitEnd(10_000);
            assertTrue(peer.errors.isEmpty(), peer.errors.toString());
        }
    }
}
