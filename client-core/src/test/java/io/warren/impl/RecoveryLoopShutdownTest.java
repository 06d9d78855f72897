package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.Address;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.RecoveryOptions;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The application's event loop group shuts down while a connection recovers, on real loops: the loop cancels its
 * timers and closes its sockets (not always: a shutdown with no quiet period that comes in the middle of a loop round
 * ends it without), and recovery gives up as when its attempts run out, in every phase: waiting to reconnect, with an
 * attempt in flight, restoring. Every future completes and the listeners hear the end.
 */
class RecoveryLoopShutdownTest {

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final HoldingPeer first;
    private HoldingPeer second;

    RecoveryLoopShutdownTest() throws IOException {
        first = new HoldingPeer(Integer.MAX_VALUE, "recovery-peer");
    }

    @AfterEach
    void close() throws Exception {
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        first.close();
        if (second != null) {
            second.close();
        }
    }

    /** A connection through the group to {@link #first} then {@code then}, with one channel open, its qos set. */
    private final class Recovering {
        final Connection connection;
        final Channel channel;
        final RecordingRecoveryListener recovery;

        Recovering(Duration backoff, HoldingPeer then) throws Exception {
            this(new RecoveryOptions().backoff(backoff, backoff, 1.0, 0.0), then);
        }

        Recovering(RecoveryOptions recoveryOptions, HoldingPeer then) throws Exception {
            List<Address> addresses = then == null
                    ? List.of(new Address("127.0.0.1", first.port()))
                    : List.of(new Address("127.0.0.1", first.port()), new Address("127.0.0.1", then.port()));
            AmqpClient client = AmqpClient.create(new ClientOptions().eventLoopGroup(group));
            connection = client.connect(
                            new ConnectionOptions().addresses(addresses).recovery(recoveryOptions))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            channel = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            // restored after the channel.open: a peer that holds it knows the restore has begun
            channel.basicQos(0, 10, false).toCompletableFuture().get(10, TimeUnit.SECONDS);
            recovery = RecordingRecoveryListener.on(connection);
        }

        /** The first peer resets the connection and accepts no other. */
        void lose() throws Exception {
            first.cut();
            first.close();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!connection.isRecovering() && System.nanoTime() < end) {
                Thread.sleep(1);
            }
            assertTrue(connection.isRecovering(), "recovering");
        }

        /** Shuts the group down and checks that everything ended, as when recovery's attempts run out. */
        void shutDownAndExpectTheEnd() throws Exception {
            shutDownAndExpectTheEnd(0);
        }

        /**
         * As {@link #shutDownAndExpectTheEnd()}, with a quiet period: the loop closes its sockets at once and runs
         * what they complete, while it already counts as shutting down.
         */
        void shutDownAndExpectTheEnd(long quietSeconds) throws Exception {
            CompletionStage<Void> writable = channel.whenWritable();
            assertFalse(connection.closeFuture().toCompletableFuture().isDone());
            group.shutdownGracefully(quietSeconds, quietSeconds + 10, TimeUnit.SECONDS)
                    .sync();
            var closed = connection.closeFuture().toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertTrue(closed.getMessage().contains("event loop shut down"), () -> "closed: " + closed);
            assertTrue(channel.closeFuture().toCompletableFuture().isDone(), "the channel's close future completed");
            assertTrue(writable.toCompletableFuture().isDone(), "whenWritable() completed");
            assertFalse(connection.isRecovering());
            // the loop has terminated: what it recorded is visible
            assertEquals(List.of("recovery started", "recovery failed"), recovery.events());
        }
    }

    @Test
    void whileWaitingToReconnect() throws Exception {
        Recovering r = new Recovering(Duration.ofMinutes(1), null);
        r.lose();
        r.shutDownAndExpectTheEnd();
    }

    @Test
    void whileAnAttemptIsInFlight() throws Exception {
        shutDownWhileAnAttemptIsInFlight(0);
    }

    private void shutDownWhileAnAttemptIsInFlight(long quietSeconds) throws Exception {
        second = new HoldingPeer(3, "recovery-peer"); // start-ok, tune-ok, then connection.open waits
        Recovering r = new Recovering(Duration.ofMillis(1), second);
        r.lose();
        assertTrue(second.held.await(10, TimeUnit.SECONDS), "the attempt reached connection.open");
        r.shutDownAndExpectTheEnd(quietSeconds);
    }

    /**
     * The attempt's socket, closed by the shutting-down loop, fails the attempt on that loop: the listeners hear that
     * recovery gave up, not first that it will retry.
     */
    @Test
    void whileAnAttemptIsInFlightAndTheLoopRunsOnForAQuietPeriod() throws Exception {
        shutDownWhileAnAttemptIsInFlight(1);
    }

    /** An attempt that fails once maxDuration has passed is the last: no "will retry" before the end. */
    @Test
    void anAttemptThatFailsAfterMaxDurationIsToldAsTheLast() throws Exception {
        Duration backoff = Duration.ofMinutes(1); // the wait is cut to maxDuration: one attempt, at the deadline
        Recovering r = new Recovering(
                new RecoveryOptions().backoff(backoff, backoff, 1.0, 0.0).maxDuration(Duration.ofMillis(200)), null);
        r.lose(); // the first peer is closed: the attempt is refused
        var closed = r.connection.closeFuture().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertTrue(closed.getMessage().contains("maxDuration"), () -> "closed: " + closed);
        group.submit(() -> {}).sync(); // what the loop recorded is visible
        assertEquals(List.of("recovery started", "recovery failed"), r.recovery.events());
    }

    @Test
    void whileRestoring() throws Exception {
        second = new HoldingPeer(
                5, "recovery-peer"); // the handshake and channel.open (the restore has begun), then basic.qos waits
        Recovering r = new Recovering(Duration.ofMillis(1), second);
        r.lose();
        assertTrue(second.held.await(10, TimeUnit.SECONDS), "the restore reached basic.qos");
        r.shutDownAndExpectTheEnd();
    }
}
