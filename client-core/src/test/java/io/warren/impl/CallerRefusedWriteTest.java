package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.impl.connection.CallerSockets;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.metrics.CountingMetrics;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A publish that its caller offers to the socket and the socket refuses (an IOException: nothing written; here the JDK
 * socket's output was shut down under the connection, as an interrupted publishing thread's write closes it) was never
 * written, so it is treated as one: held for the recovered channel under
 * {@link RecoveryOptions.PublishDuringRecovery#WAIT}, and otherwise failed as not having reached the broker. Before, in
 * confirm mode it failed with the connection's written publishes, as one that may have reached the broker, and
 * outside it the event loop wrote it to the broken connection and failed it ("could not be written").
 */
class CallerRefusedWriteTest {

    private final MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final CountingMetrics metrics = new CountingMetrics();
    private Peer first;
    private Peer next;

    /** Answers the handshake, channel.open and confirm.select; acks every publish; records the bodies. */
    static final class Peer extends SocketPeer {
        final List<String> bodies = new CopyOnWriteArrayList<>();
        private long tag;

        Peer(String name) throws IOException {
            super(0, false, name);
            start();
        }

        @Override
        protected boolean publish(int channel, Stream st) throws IOException {
            bodies.add(st.body.toString(StandardCharsets.UTF_8));
            send(channel, new BasicAckEncoder().deliveryTag(++tag).multiple(false));
            return true;
        }
    }

    @AfterEach
    void close() throws Exception {
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        for (Peer p : new Peer[] {first, next}) {
            if (p != null) {
                p.close();
            }
        }
    }

    @Test
    void underWaitTheRefusedPublishIsHeldAndConfirmedOnTheRecoveredChannel() throws Exception {
        Connection connection = connect(new RecoveryOptions());
        Channel ch = confirming(connection);
        CompletableFuture<PublishOutcome> refused = publishRefused(connection, ch, "refused");
        first.close(); // the reconnection goes to the next peer

        assertEquals(PublishOutcome.CONFIRMED, refused.get(10, TimeUnit.SECONDS));
        assertEquals(List.of("refused"), next.bodies, "written once, on the new connection");
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertEquals(List.of(), next.errors);
    }

    /** Outside confirm mode the same: the refused publish goes the event loop's way, and recovery carries it over. */
    @Test
    void withoutConfirmsTheRefusedPublishIsHeldAndSentOnTheRecoveredChannel() throws Exception {
        Connection connection = connect(new RecoveryOptions());
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        CompletableFuture<PublishOutcome> refused = publishRefused(connection, ch, "refused");
        first.close();

        assertEquals(PublishOutcome.SENT, refused.get(10, TimeUnit.SECONDS));
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        next.awaitEnd(10_000);
        assertEquals(List.of("refused"), next.bodies, "written once, on the new connection");
        assertEquals(List.of(), next.errors);
    }

    /**
     * A publish queued right behind the refused one is not written to the connection that is going either: both are
     * carried over, in call order, and each counts once as published (review: the second was written into the closed
     * channel and failed, and in confirm mode the refused one counted as published, unconfirmed and confirmed).
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aPublishQueuedBehindTheRefusedOneIsCarriedOverWithIt(boolean confirmMode) throws Exception {
        Connection connection = connect(new RecoveryOptions());
        Channel ch = confirmMode
                ? confirming(connection)
                : connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        OutboundPath outbound = ((ConnectionImpl) connection).handler().outbound();
        CountDownLatch loopHeld = new CountDownLatch(1);
        outbound.eventLoop().execute(() -> {
            try {
                loopHeld.await(10, TimeUnit.SECONDS); // the loop meets both tasks only once both are queued
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        CompletableFuture<PublishOutcome> refused = publishRefused(connection, ch, "p1");
        CompletableFuture<PublishOutcome> queued = RecoveryLossWindowTest.publish(ch, "p2");
        loopHeld.countDown();
        first.close();

        PublishOutcome expected = confirmMode ? PublishOutcome.CONFIRMED : PublishOutcome.SENT;
        assertEquals(expected, refused.get(10, TimeUnit.SECONDS));
        assertEquals(expected, queued.get(10, TimeUnit.SECONDS));
        connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        next.awaitEnd(10_000); // SENT says written to the socket, not read by the peer yet
        assertEquals(List.of("p1", "p2"), next.bodies, "both carried over, in call order");
        assertEquals(confirmMode ? 3 : 2, metrics.published(), "each written publish once (the first one's too)");
        assertEquals(0, metrics.unconfirmed());
        assertEquals(0, metrics.failedToPublish());
    }

    @Test
    void withoutRecoveryTheRefusedPublishFailsAsNotWritten() throws Exception {
        Connection connection = connect(new RecoveryOptions().enabled(false));
        Channel ch = confirming(connection);
        ByteBuf body = Unpooled.copiedBuffer("refused", StandardCharsets.UTF_8);
        CompletableFuture<PublishOutcome> refused = publishRefused(connection, ch, body);
        first.close();

        ExecutionException failed = assertThrows(ExecutionException.class, () -> refused.get(10, TimeUnit.SECONDS));
        PublishNotConfirmedException e = assertInstanceOf(PublishNotConfirmedException.class, failed.getCause());
        assertFalse(e.mayHaveReachedBroker(), "nothing of it was written: " + e);
        assertEquals(0, body.refCnt(), "the body was released");
    }

    /** A connection to the first peer, recovering to the next with {@code recovery}'s settings and a 10 ms backoff. */
    private Connection connect(RecoveryOptions recovery) throws Exception {
        first = new Peer("refused-first-peer");
        next = new Peer("refused-next-peer");
        return RecoveryLossWindowTest.connect(group, first, next, recovery, metrics);
    }

    /** A channel in confirm mode whose first publish was confirmed: the outbound path is idle. */
    private static Channel confirming(Connection connection) throws Exception {
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        ch.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertEquals(
                PublishOutcome.CONFIRMED,
                RecoveryLossWindowTest.publish(ch, "before").get(10, TimeUnit.SECONDS));
        return ch;
    }

    private CompletableFuture<PublishOutcome> publishRefused(Connection connection, Channel ch, String body)
            throws Exception {
        return publishRefused(connection, ch, Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
    }

    /**
     * Publishes {@code body} with the first peer's reading stalled (it sees nothing of what follows) and the JDK
     * socket's output shut down under the connection: its caller offers it to the socket, which refuses it.
     */
    private CompletableFuture<PublishOutcome> publishRefused(Connection connection, Channel ch, ByteBuf body)
            throws Exception {
        OutboundPath outbound = ((ConnectionImpl) connection).handler().outbound();
        outbound.callerWriteGap(0);
        first.stall();
        CallerSockets.socket(outbound).shutdownOutput();
        assertTrue(outbound.tryTakeForCaller(), "idle: the publish is offered to the socket by its caller");
        outbound.releaseCaller();
        long written = outbound.callerWriteCounts()[0];
        CompletableFuture<PublishOutcome> f =
                ch.publish("", "q", false, BasicProperties.EMPTY, body).toCompletableFuture();
        assertEquals(written, outbound.callerWriteCounts()[0], "not written");
        return f;
    }
}
