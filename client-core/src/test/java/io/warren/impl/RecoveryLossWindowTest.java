package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.Address;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.RecoveryOptions;
import io.warren.RecoveryOptions.PublishDuringRecovery;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.MethodIds;
import io.warren.impl.connection.Transport;
import io.warren.impl.metrics.MetricsCollector;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
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

    /**
     * Answers the handshake and channel.open, never queue.declare; records the bodies published to it, and in
     * {@code wire} those bodies and the queue.declares in the order it read them.
     */
    static final class Peer extends SocketPeer {
        final List<String> bodies = new CopyOnWriteArrayList<>();
        final List<String> wire = new CopyOnWriteArrayList<>();

        Peer(String name) throws IOException {
            super(0, false, name);
            start();
        }

        @Override
        protected boolean publish(int channel, Stream st) {
            String body = st.body.toString(StandardCharsets.UTF_8);
            bodies.add(body);
            wire.add(body);
            return true;
        }

        @Override
        protected void methodRead(int channel, int key) {
            if (key == MethodIds.QUEUE_DECLARE) {
                wire.add("queue.declare");
            }
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
        Connection connection = connect(new RecoveryOptions());
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        CountDownLatch published = new CountDownLatch(1);
        holdTheLoopInTheLossWindow(ch, published);
        CompletableFuture<PublishOutcome> inTheWindow = publish(ch, "window");
        published.countDown();
        CompletableFuture<PublishOutcome> after = publish(ch, "after");

        assertEquals(PublishOutcome.SENT, inTheWindow.get(10, TimeUnit.SECONDS));
        assertEquals(PublishOutcome.SENT, after.get(10, TimeUnit.SECONDS));
        assertTrue(ch.isOpen(), "the channel was recovered");
        assertWrittenInCallOrder(connection, "window", "after");
    }

    /** Closes {@code connection}, then: the next peer read {@code bodies}, in that order, and found no fault. */
    private void assertWrittenInCallOrder(Connection connection, String... bodies) throws Exception {
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        next.awaitEnd(10_000);
        assertEquals(List.of(bodies), next.bodies, "written, in call order, on the new connection");
        assertEquals(List.of(), next.errors);
    }

    /**
     * The "retry in the failure callback" pattern: the declare the loss fails is answered by a publish from its
     * callback, on the event loop inside the channel's close. Recovery takes the channel over a moment later, so the
     * publish is held for the recovered channel, before the application's next one (before, it was refused: "channel 1
     * is closed").
     */
    @Test
    void aPublishFromACallbackOnTheLoopInsideTheLossIsHeldForTheRecoveredOne() throws Exception {
        Connection connection = connect(new RecoveryOptions());
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        CompletableFuture<CompletableFuture<PublishOutcome>> retried = new CompletableFuture<>();
        ch.queueDeclare(QueueSpec.named("q")).whenComplete((ok, e) -> {
            try {
                retried.complete(publish(ch, "retry"));
            } catch (RuntimeException refused) {
                retried.completeExceptionally(refused);
            }
        });
        lost.cut();
        lost.close(); // the reconnection goes to the next peer
        CompletableFuture<PublishOutcome> retry = retried.get(10, TimeUnit.SECONDS);
        CompletableFuture<PublishOutcome> after = publish(ch, "after");

        assertEquals(PublishOutcome.SENT, retry.get(10, TimeUnit.SECONDS));
        assertEquals(PublishOutcome.SENT, after.get(10, TimeUnit.SECONDS));
        assertWrittenInCallOrder(connection, "retry", "after");
    }

    /**
     * Publishes made on the event loop inside the loss keep their call order on the recovered channel: one from a
     * callback while the channel was being closed (queued behind the close), then one made once the channel holds
     * (here from the callback of another channel's declare). Before, the second took its place at once, ahead of the
     * first (review).
     */
    @Test
    void publishesOnTheLoopInsideTheLossKeepTheirCallOrder() throws Exception {
        Connection connection = connect(new RecoveryOptions());
        Channel a = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        Channel b = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        List<CompletableFuture<PublishOutcome>> made = new CopyOnWriteArrayList<>();
        a.queueDeclare(QueueSpec.named("q")).whenComplete((ok, e) -> made.add(publish(a, "x")));
        b.queueDeclare(QueueSpec.named("q")).whenComplete((ok, e) -> made.add(publish(a, "y")));
        lost.cut();
        lost.close();
        assertTrue(next.await(() -> next.bodies.size() >= 2), "both written: " + next.bodies);
        assertEquals(List.of("x", "y"), next.bodies, "call order, on the loop's thread");
        for (CompletableFuture<PublishOutcome> f : made) {
            assertEquals(PublishOutcome.SENT, f.get(10, TimeUnit.SECONDS));
        }
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /**
     * A method held for the recovered channel keeps its call order with such a publish: the declare called on the loop
     * after the publish goes after it (before, it took its place at once, ahead of the publish).
     */
    @Test
    void aMethodHeldOnTheLoopInsideTheLossGoesAfterAPublishMadeBeforeIt() throws Exception {
        Connection connection = connect(new RecoveryOptions());
        Channel a = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        Channel b = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        a.queueDeclare(QueueSpec.named("q")).whenComplete((ok, e) -> publish(a, "x"));
        b.queueDeclare(QueueSpec.named("q")).whenComplete((ok, e) -> a.queueDeclare(QueueSpec.named("z")));
        lost.cut();
        lost.close();
        assertTrue(next.await(() -> next.wire.size() >= 2), "both sent: " + next.wire);
        assertEquals(List.of("x", "queue.declare"), next.wire, "call order, on the loop's thread");
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /**
     * In confirm mode the same with a retry from a failed publish's callback: the declare's retry was made first, and
     * goes first (review: before, the publish's retry overtook it).
     */
    @Test
    void aRetryFromAFailedPublishDoesNotOvertakeAnEarlierRetryFromTheLoop() throws Exception {
        Connection connection = connect(new RecoveryOptions());
        Channel a = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        a.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);
        CompletableFuture<PublishOutcome> unconfirmed = publish(a, "p"); // the first peer confirms nothing
        a.queueDeclare(QueueSpec.named("q")).whenComplete((ok, e) -> publish(a, "x"));
        unconfirmed.whenComplete((o, e) -> publish(a, "y"));
        assertTrue(lost.await(() -> !lost.bodies.isEmpty()), "p written before the loss");
        assertEquals(List.of("p"), lost.bodies, "p written before the loss");
        lost.cut();
        lost.close();
        assertTrue(next.await(() -> next.bodies.size() >= 2), "both written: " + next.bodies);
        assertEquals(List.of("x", "y"), next.bodies, "call order, on the loop's thread");
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /** Publishes {@code body} to queue q through the default exchange; its outcome. */
    static CompletableFuture<PublishOutcome> publish(Channel ch, String body) {
        return ch.publish("", "q", false, BasicProperties.EMPTY, Unpooled.copiedBuffer(body, StandardCharsets.UTF_8))
                .toCompletableFuture();
    }

    /**
     * Without recovery the same publish from the callback is refused as before: nothing will carry it, and its future
     * says so at once.
     */
    @Test
    void withoutRecoveryAPublishFromTheCallbackIsRefused() throws Exception {
        Connection connection = connect(new RecoveryOptions().enabled(false));
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        CompletableFuture<CompletableFuture<PublishOutcome>> retried = new CompletableFuture<>();
        ByteBuf body = Unpooled.copiedBuffer("retry", StandardCharsets.UTF_8);
        ch.queueDeclare(QueueSpec.named("q"))
                .whenComplete((ok, e) -> retried.complete(
                        ch.publish("", "q", false, BasicProperties.EMPTY, body).toCompletableFuture()));
        lost.cut();
        CompletableFuture<PublishOutcome> retry = retried.get(10, TimeUnit.SECONDS);
        ExecutionException failed = assertThrows(ExecutionException.class, () -> retry.get(10, TimeUnit.SECONDS));
        assertTrue(failed.getCause() instanceof AmqpException, String.valueOf(failed.getCause()));
        assertEquals(0, body.refCnt(), "the refused body was released");
    }

    /** A connection to the first peer, recovering to the next with {@code recovery}'s settings and a 10 ms backoff. */
    private Connection connect(RecoveryOptions recovery) throws Exception {
        lost = new Peer("window-lost-peer");
        next = new Peer("window-next-peer");
        return connect(group, lost, next, recovery);
    }

    /** A connection on {@code group} to {@code first}, recovering to {@code next} with a 10 ms backoff. */
    static Connection connect(
            MultiThreadIoEventLoopGroup group, SocketPeer first, SocketPeer next, RecoveryOptions recovery)
            throws Exception {
        return connect(group, first, next, recovery, MetricsCollector.NOOP);
    }

    /** As the other {@code connect} with a group, counting in {@code metrics}. */
    static Connection connect(
            MultiThreadIoEventLoopGroup group,
            SocketPeer first,
            SocketPeer next,
            RecoveryOptions recovery,
            MetricsCollector metrics)
            throws Exception {
        return new Connector(group, Transport.channelClassFor(group), metrics)
                .connect(new ConnectionOptions()
                        .addresses(
                                List.of(new Address("127.0.0.1", first.port()), new Address("127.0.0.1", next.port())))
                        .recovery(recovery.backoff(Duration.ofMillis(10), Duration.ofMillis(10), 1.0, 0.0)))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
    }

    /**
     * Cuts the first peer's socket and returns with the event loop held in the middle of closing {@code ch} (after it
     * stopped being open, before recovery takes it over) until {@code published} is counted down: a declare the peer
     * never answers is failed by the loss there, and its callback waits.
     */
    private void holdTheLoopInTheLossWindow(Channel ch, CountDownLatch published) throws Exception {
        CountDownLatch inWindow = new CountDownLatch(1);
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
    }

    /**
     * Under FAIL_FAST a publishNoOutcome in that window is refused on the caller's thread, as one a moment later is
     * (review: with the first version of the window's fix it was queued and dropped silently).
     */
    @Test
    void underFailFastAPublishNoOutcomeInTheWindowIsRefusedOnTheCallersThread() throws Exception {
        Connection connection = connect(new RecoveryOptions().publishDuringRecovery(PublishDuringRecovery.FAIL_FAST));
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        CountDownLatch published = new CountDownLatch(1);
        holdTheLoopInTheLossWindow(ch, published);
        ByteBuf body = Unpooled.copiedBuffer("window", StandardCharsets.UTF_8);
        try {
            assertThrows(
                    AmqpException.class,
                    () -> ch.publishNoOutcome("", "q", false, BasicProperties.EMPTY, body),
                    "refused on the caller's thread");
        } finally {
            published.countDown();
        }
        assertEquals(0, body.refCnt(), "the refused body was released");
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
}
