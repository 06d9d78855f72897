package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.connection.Transport;
import io.warren.impl.metrics.MetricsCollector;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Publishing calls that reach the outbound path after its event loop has gone: what they hand the loop is discarded,
 * and every future they return must still complete (and every buffer be released), or the application waits forever.
 */
class PublishShutdownRaceTest {

    private final MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final StopInAwaitingConfirm metrics = new StopInAwaitingConfirm();
    private Peer peer;

    @AfterEach
    void close() throws Exception {
        metrics.go.countDown();
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        if (peer != null) {
            peer.close();
        }
    }

    /**
     * Metrics that stop the one publishing thread named {@code target} in {@code awaitingConfirm}: a caller's
     * confirm-mode publish calls it holding the outbound path's writer token, its sequence number taken, before it
     * records the publish for the confirm tracker. Stands for the publishing thread descheduled at that point.
     */
    static final class StopInAwaitingConfirm implements MetricsCollector {
        volatile Thread target;
        final CountDownLatch stopped = new CountDownLatch(1);
        final CountDownLatch go = new CountDownLatch(1);

        @Override
        public void awaitingConfirm() {
            if (Thread.currentThread() == target) {
                target = null;
                stopped.countDown();
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** Answers the handshake, channel.open and confirm.select; takes publishes and never confirms them. */
    static final class Peer extends SocketPeer {
        Peer() throws IOException {
            super(0, false, "shutdown-race-peer");
            start();
        }

        @Override
        protected boolean publish(int channel, Stream st) {
            return true;
        }
    }

    private Connection connect() throws Exception {
        peer = new Peer();
        Connection connection = new io.warren.impl.Connector(group, Transport.channelClassFor(group), metrics)
                .connect(new ConnectionOptions()
                        .address("127.0.0.1", peer.port())
                        .automaticRecovery(false))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        ((ConnectionImpl) connection).handler().outbound().callerWriteGap(0);
        return connection;
    }

    /** One pass of the event loop: the read batch that completed the last RPC is over and flushed. */
    private static void loopPass(OutboundPath outbound) throws Exception {
        outbound.eventLoop().submit(() -> {}).get(10, TimeUnit.SECONDS);
    }

    /**
     * A caller numbers its confirm-mode publish under the writer token; meanwhile the connection is lost (the channel
     * fails what is outstanding) and the client's event loop ends. The caller records the publish after that: the
     * record cannot be taken by the loop any more, so whoever finds the loop gone must fail the publish's future.
     */
    @Test
    void aCallersConfirmedPublishRecordedAfterTheLossCompletesWhenTheLoopHasEnded() throws Exception {
        Connection connection = connect();
        OutboundPath outbound = ((ConnectionImpl) connection).handler().outbound();
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        ch.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);
        loopPass(outbound);

        ByteBuf body = ByteBufAllocator.DEFAULT.directBuffer(16).writeZero(16);
        CompletableFuture<CompletableFuture<PublishOutcome>> returned = new CompletableFuture<>();
        Thread publisher = new Thread(
                () -> returned.complete(ch.publish("x", "rk", false, BasicProperties.EMPTY, body)
                        .toCompletableFuture()),
                "publisher");
        metrics.target = publisher;
        publisher.start();
        assertTrue(metrics.stopped.await(10, TimeUnit.SECONDS), "the publish was numbered by its caller");

        peer.cut();
        ch.closeFuture().toCompletableFuture().get(10, TimeUnit.SECONDS); // the loss reached the channel
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync(); // and the loop has run its last task

        metrics.go.countDown();
        publisher.join(10_000);
        CompletableFuture<PublishOutcome> f = returned.getNow(null);
        assertNotNull(f, "publish returned");
        assertEquals(0, body.refCnt(), "the body was released");
        // nothing is left that could complete it later: the loop is gone
        assertTrue(f.isDone(), "the publish's future completed (it never will otherwise)");
        ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, f::get);
        assertInstanceOf(PublishNotConfirmedException.class, e.getCause());
    }

    /**
     * After the client's event loop ended, a channel's whenWritable and confirmSelect are refused, not left pending
     * forever (confirmSelect's frame, allocated before the hand-over, must not leak with them).
     */
    @Test
    void whenWritableAndConfirmSelectCompleteAfterTheLoopHasEnded() throws Exception {
        Connection connection = connect();
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        peer.cut();
        ch.closeFuture().toCompletableFuture().get(10, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();

        CompletionStage<Void> writable = ch.whenWritable();
        CompletionStage<Void> selected = ch.confirmSelect();
        assertTrue(writable.toCompletableFuture().isDone(), "whenWritable completed");
        assertTrue(selected.toCompletableFuture().isDone(), "confirmSelect completed");
        ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> selected.toCompletableFuture().get());
        assertInstanceOf(AmqpException.class, e.getCause());
    }
}
