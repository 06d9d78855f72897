package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.impl.connection.OutboundPath;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Callers' writes to the socket under the writer token: cases the other caller-write tests do not cover. */
class CallerWriteReviewTest {

    private final AmqpClient client =
            AmqpClient.create(new ClientOptions().ioThreads(1).preferNativeTransport(false));
    private Peer peer;
    private Connection connection;
    private OutboundPath outbound;

    @AfterEach
    void close() throws Exception {
        try {
            if (connection != null && connection.isOpen()) {
                connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        } finally {
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            if (peer != null) {
                peer.close();
                assertEquals(java.util.List.of(), peer.errors);
            }
        }
    }

    /** Acks every publish on a confirm-mode channel at once. */
    static final class Peer extends SocketPeer {
        final AtomicLong published = new AtomicLong();
        private long confirmed; // the peer's thread only

        Peer() throws IOException {
            super(0, false, "review-peer");
            start();
        }

        @Override
        protected boolean publish(int channel, Stream st) throws IOException {
            published.incrementAndGet();
            if (st.confirmSelected) {
                send(channel, new BasicAckEncoder().deliveryTag(++confirmed).multiple(false));
            }
            return true;
        }
    }

    private Channel open(boolean confirms) throws Exception {
        peer = new Peer();
        connection = client.connect(new ConnectionOptions()
                        .address("127.0.0.1", peer.port())
                        .automaticRecovery(false))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        outbound = ((ConnectionImpl) connection).handler().outbound();
        outbound.callerWriteGap(0);
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        if (confirms) {
            ch.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        loopPass();
        return ch;
    }

    /** One pass of the event loop: what the last read batch wrote is flushed, the token given back. */
    private void loopPass() throws Exception {
        outbound.eventLoop().submit(() -> {}).get(10, TimeUnit.SECONDS);
    }

    private static ByteBuf body() {
        return ByteBufAllocator.DEFAULT.directBuffer(16).writeZero(16);
    }

    /**
     * The JDK closes an interruptible channel when a thread with its interrupt status set does blocking I/O on it.
     * A caller's write is non-blocking I/O, which the JDK does not tie to interrupts: a publishing thread that was
     * interrupted (a cancelled task) writes its publish, and the connection stays open.
     */
    @Test
    void anInterruptedPublishingThreadWritesAndTheConnectionStaysOpen() throws Exception {
        for (boolean confirms : new boolean[] {false, true}) {
            Channel ch = open(confirms);
            long before = outbound.callerWriteCounts()[0];
            CompletableFuture<CompletableFuture<PublishOutcome>> published = new CompletableFuture<>();
            Thread t = new Thread(() -> {
                Thread.currentThread().interrupt();
                published.complete(ch.publish("x", "rk", false, BasicProperties.EMPTY, body())
                        .toCompletableFuture());
            });
            t.start();
            t.join(10_000);
            assertSame(
                    confirms ? PublishOutcome.CONFIRMED : PublishOutcome.SENT,
                    published.get(10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
            assertEquals(before + 1, outbound.callerWriteCounts()[0], "written by the interrupted caller");
            assertTrue(connection.isOpen(), "the interrupt did not close the socket");
            loopPass();
            assertSame(
                    confirms ? PublishOutcome.CONFIRMED : PublishOutcome.SENT,
                    ch.publish("x", "rk", false, BasicProperties.EMPTY, body())
                            .toCompletableFuture()
                            .get(10, TimeUnit.SECONDS));
            connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            peer.close();
            assertEquals(java.util.List.of(), peer.errors);
            peer = null;
        }
    }

    /**
     * In confirm mode, a body whose NIO view throws (not the socket: nothing was written) fails that publish only, as
     * it does outside confirm mode; the connection and its other channels go on.
     */
    @Test
    void aConfirmedPublishWhoseBodyCannotBeWrittenFailsAloneAndTheConnectionGoesOn() throws Exception {
        Channel ch = open(true);
        ByteBuf broken = new CallerWriteTest.BrokenBody(body());
        CompletableFuture<PublishOutcome> f =
                ch.publish("x", "rk", false, BasicProperties.EMPTY, broken).toCompletableFuture();
        assertTrue(f.handle((o, e) -> e).get(10, TimeUnit.SECONDS) != null, "the broken publish failed");
        assertEquals(0, broken.refCnt(), "released once");
        assertTrue(connection.isOpen(), "one unwritable body did not close the connection");
        loopPass();
        assertSame(
                PublishOutcome.CONFIRMED,
                ch.publish("x", "rk", false, BasicProperties.EMPTY, body())
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS));
    }
}
