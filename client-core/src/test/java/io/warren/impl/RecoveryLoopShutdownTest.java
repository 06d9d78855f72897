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
import io.warren.ConsumerHandle;
import io.warren.RecoveryOptions;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.method.ChannelCloseEncoder;
import io.warren.codec.method.MethodIds;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The application's event loop group shuts down while a connection recovers, on real loops: the loop cancels its
 * timers and closes its sockets (not always: a shutdown with no quiet period that comes in the middle of a loop round
 * ends it without), and recovery gives up as when its attempts run out, in every phase: waiting to reconnect, with an
 * attempt in flight, restoring; and while a channel alone is re-opened on the running connection. Every future
 * completes and the listeners hear the end.
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

    /**
     * The group shuts down while channel 1 alone is being re-opened on the running connection, after RabbitMQ's
     * acknowledgement timeout closed it (the peer leaves the re-open's channel.open unanswered): the connection closes,
     * the channel and its consumer end, whenWritable() completes, and the listener hears the channel's recovery failed.
     * Before, the consumer and whenWritable() waited for ever, and the listener heard only that it had started.
     */
    @Test
    void whileAChannelAloneIsReopened() throws Exception {
        try (TimingOutPeer peer = new TimingOutPeer()) {
            AmqpClient client = AmqpClient.create(new ClientOptions().eventLoopGroup(group));
            Connection connection = client.connect(new ConnectionOptions()
                            .addresses(List.of(new Address("127.0.0.1", peer.port())))
                            .recovery(new RecoveryOptions()))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            Channel channel = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            ConsumerHandle consumer =
                    channel.consume("q", d -> {}).toCompletableFuture().get(10, TimeUnit.SECONDS);
            RecordingRecoveryListener recovery = RecordingRecoveryListener.on(connection);
            peer.timeOut();
            assertTrue(peer.reopening.await(10, TimeUnit.SECONDS), "the channel's re-open reached the peer");
            CompletionStage<Void> writable = channel.whenWritable();

            group.shutdownGracefully(0, 10, TimeUnit.SECONDS).sync();
            var closed = connection.closeFuture().toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertTrue(closed.getMessage().contains("event loop shut down"), () -> "closed: " + closed);
            assertTrue(channel.closeFuture().toCompletableFuture().isDone(), "the channel's close future completed");
            assertTrue(consumer.endFuture().toCompletableFuture().isDone(), "the consumer ended");
            assertTrue(writable.toCompletableFuture().isDone(), "whenWritable() completed");
            // the loop has terminated: what it recorded is visible
            assertEquals(
                    List.of("channel 1 started 406", "channel 1 failed ConnectionClosedException"), recovery.events());
        }
    }

    /**
     * A peer that closes channel 1 as RabbitMQ's acknowledgement timeout does when the test says, and reads nothing
     * from the channel's re-open (its second channel.open) on, so that it stays unanswered.
     */
    private static final class TimingOutPeer extends SocketPeer {
        final CountDownLatch reopening = new CountDownLatch(1);
        private final CountDownLatch release = new CountDownLatch(1);
        private int opens; // the peer's thread only

        TimingOutPeer() throws IOException {
            super(0, false, "recovery-peer");
            start();
        }

        /** From the test's thread. */
        void timeOut() throws IOException {
            send(
                    1,
                    new ChannelCloseEncoder()
                            .replyCode(ReplyCode.PRECONDITION_FAILED)
                            .replyText("PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out")
                            .classId(0)
                            .methodId(0));
        }

        @Override
        protected void methodRead(int channel, int key) {
            if (key == MethodIds.CHANNEL_OPEN && ++opens == 2) {
                reopening.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        protected boolean publish(int channel, Stream st) {
            return true;
        }

        @Override
        public void close() throws IOException, InterruptedException {
            release.countDown();
            super.close();
        }
    }
}
