package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientMetrics;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.connection.OutboundPath;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A client that counts (metrics on) keeps the publishing thread's own write to an idle connection: the byte counter
 * in the pipeline only counts, and the caller counts the bytes it writes past it.
 */
class CountedCallerWriteTest {

    private final AmqpClient client = AmqpClient.create(
            new ClientOptions().ioThreads(1).preferNativeTransport(false).metricsEnabled(true));
    private LoopbackPeer peer;
    private Connection connection;

    @AfterEach
    void close() throws Exception {
        try {
            if (connection != null) {
                connection.close().toCompletableFuture().handle((v, e) -> null).get(10, TimeUnit.SECONDS);
            }
        } finally {
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            if (peer != null) {
                peer.close();
                assertEquals(java.util.List.of(), peer.errors);
            }
        }
    }

    @Test
    void aCallerWritesWhileTheClientCountsAndItsBytesAreCounted() throws Exception {
        peer = new LoopbackPeer(64 * 1024);
        connection = client.connect(new ConnectionOptions()
                        .address("127.0.0.1", peer.port())
                        .recovery(new RecoveryOptions().enabled(false)))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        OutboundPath outbound = ((ConnectionImpl) connection).handler().outbound();
        outbound.callerWriteGap(0);
        Channel ch = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
        ClientMetrics metrics = client.metrics();

        // the same message written by the event loop (a publish made on it), then by its caller
        long before = metrics.bytesWritten();
        long callerWrites = outbound.callerWriteCounts()[0];
        PublishOutcome byLoop = outbound.eventLoop()
                .submit(() -> ch.publish("", "q", false, BasicProperties.EMPTY, text("same")))
                .get(10, TimeUnit.SECONDS)
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        assertSame(PublishOutcome.SENT, byLoop);
        assertEquals("same", new String(peer.nextBody(), StandardCharsets.UTF_8));
        assertEquals(callerWrites, outbound.callerWriteCounts()[0], "the loop wrote it");
        long loopBytes = metrics.bytesWritten() - before;

        outbound.eventLoop().submit(() -> {}).get(10, TimeUnit.SECONDS); // Netty's outbound buffer is empty again
        before = metrics.bytesWritten();
        assertSame(
                PublishOutcome.SENT,
                ch.publish("", "q", false, BasicProperties.EMPTY, text("same"))
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS));
        assertEquals("same", new String(peer.nextBody(), StandardCharsets.UTF_8));
        assertEquals(callerWrites + 1, outbound.callerWriteCounts()[0], "its caller wrote it");
        assertEquals(loopBytes, metrics.bytesWritten() - before, "and counted its bytes as the pipeline does");
        assertEquals(2, metrics.published());
    }

    private static io.netty.buffer.ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }
}
