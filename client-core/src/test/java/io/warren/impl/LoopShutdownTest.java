package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.Address;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The application's event loop group shuts down under an open connection that does not recover, on real loops. A
 * shutdown with no quiet period that comes in the middle of a loop round ends Netty's loop without closing its
 * sockets: before, the connection's close future and a call waiting for its reply then waited for ever (in about
 * one shutdown in twenty here).
 */
class LoopShutdownTest {

    /** Enough shutdowns that the race came in every run of it before the fix. */
    private static final int SHUTDOWNS = 100;

    @Test
    void theCloseFutureAndAPendingCallCompleteWhenTheEventLoopShutsDown() throws Exception {
        for (int i = 0; i < SHUTDOWNS; i++) {
            EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
            // start-ok, tune-ok, connection.open, channel.open, then basic.qos waits for its reply
            try (HoldingPeer peer = new HoldingPeer(5, "loop-shutdown-peer")) {
                AmqpClient client = AmqpClient.create(new ClientOptions().eventLoopGroup(group));
                Connection connection = client.connect(
                                new ConnectionOptions().addresses(List.of(new Address("127.0.0.1", peer.port()))))
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS);
                Channel channel = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
                CompletableFuture<Void> qos = channel.basicQos(10).toCompletableFuture();
                assertTrue(peer.held.await(10, TimeUnit.SECONDS), "basic.qos reached the peer");

                group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();

                int shutdown = i;
                ConnectionClosedException closed;
                try {
                    closed = connection.closeFuture().toCompletableFuture().get(10, TimeUnit.SECONDS);
                } catch (TimeoutException e) {
                    throw new AssertionError("shutdown " + shutdown + ": the close future is still pending", e);
                }
                assertTrue(closed.getMessage().contains("event loop shut down"), () -> "closed: " + closed);
                ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(
                        ExecutionException.class, () -> qos.get(10, TimeUnit.SECONDS));
                assertInstanceOf(ConnectionClosedException.class, failed.getCause());
            } finally {
                group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            }
        }
    }
}
