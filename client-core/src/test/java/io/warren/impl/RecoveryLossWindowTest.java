package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.Address;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.connection.Transport;
import io.warren.impl.metrics.MetricsCollector;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A publish from an application thread made while the event loop is closing the channel for a lost connection, after
 * the channel stopped being open and before recovery took it over, is held for the recovered channel like every
 * publish around it. On a real event loop: an {@code EmbeddedChannel}'s caller is always on its loop.
 */
class RecoveryLossWindowTest {

    private final MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private Peer lost;
    private Peer next;

    /** Answers the handshake and channel.open, never queue.declare; records the bodies published to it. */
    static final class Peer extends SocketPeer {
        final List<String> bodies = new CopyOnWriteArrayList<>();

        Peer(String name) throws IOException {
            super(0, false, name);
            start();
        }

        @Override
        protected boolean publish(int channel, Stream st) {
            bodies.add(st.body.toString(StandardCharsets.UTF_8));
            return true;
        }
    }

    @AfterEach
    void close() throws Exception {
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        for (Peer p : new Peer[] {lost, next}) {
            if (p != null) {
                p.close();
            }
        }
    }

    /**
     * Before, the publish was refused with "channel 1 is closed" although recovery took the channel over a moment
     * later and held the publishes made after it (QuorumQueueClusterIT failed so once on a node's stop).
     */
    @Test
    void aPublishMadeWhileTheLoopClosesTheLostChannelIsHeldForTheRecoveredOne() throws Exception {
        lost = new Peer("window-lost-peer");
        next = new Peer("window-next-peer");
        Connection connection = new Connector(group, Transport.channelClassFor(group), MetricsCollector.NOOP)
                .connect(new ConnectionOptions()
                        .addresses(
                                List.of(new Address("127.0.0.1", lost.port()), new Address("127.0.0.1", next.port())))
                        .recovery(
                                new RecoveryOptions().backoff(Duration.ofMillis(10), Duration.ofMillis(10), 1.0, 0.0)))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);

        // A declare the peer never answers: the loss fails it on the event loop, in the middle of closing the channel
        // (after it stopped being open, before recovery takes it over). Its callback keeps the loop there until this
        // thread has published.
        CountDownLatch inWindow = new CountDownLatch(1);
        CountDownLatch published = new CountDownLatch(1);
        ch.queueDeclare(QueueSpec.named("q")).whenComplete((ok, e) -> {
            inWindow.countDown();
            try {
                published.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
        });

        lost.cut();
        lost.close(); // the reconnection goes to the next peer
        assertTrue(inWindow.await(10, TimeUnit.SECONDS), "the loss reached the declare");
        assertFalse(ch.isOpen(), "the channel is being closed");
        CompletableFuture<PublishOutcome> inTheWindow = ch.publish(
                        "", "q", false, BasicProperties.EMPTY, Unpooled.copiedBuffer("window", StandardCharsets.UTF_8))
                .toCompletableFuture();
        published.countDown();
        CompletableFuture<PublishOutcome> after = ch.publish(
                        "", "q", false, BasicProperties.EMPTY, Unpooled.copiedBuffer("after", StandardCharsets.UTF_8))
                .toCompletableFuture();

        assertEquals(PublishOutcome.SENT, inTheWindow.get(10, TimeUnit.SECONDS));
        assertEquals(PublishOutcome.SENT, after.get(10, TimeUnit.SECONDS));
        assertTrue(ch.isOpen(), "the channel was recovered");
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        next.awaitEnd(10_000);
        assertEquals(List.of("window", "after"), next.bodies, "both written, in call order, on the new connection");
        assertEquals(List.of(), next.errors);
    }
}
