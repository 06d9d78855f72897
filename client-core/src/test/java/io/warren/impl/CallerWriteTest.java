package io.warren.impl;

import static io.warren.impl.PublishFixture.failure;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOption;
import io.netty.util.IllegalReferenceCountException;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.PublishFixture.TrackedBody;
import io.warren.impl.connection.CallerSockets;
import io.warren.impl.connection.DirectNioSocketChannel;
import io.warren.impl.connection.OutboundPath;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Publishes their callers write to the socket under the outbound path's writer token, over a real loopback socket
 * ({@link LoopbackPeer}): what a caller must not write, and who owns a message the socket refused or took in part.
 */
class CallerWriteTest {

    private static final BasicProperties PROPS = BasicProperties.EMPTY;

    private AmqpClient client =
            AmqpClient.create(new ClientOptions().ioThreads(1).preferNativeTransport(false));
    private LoopbackPeer peer;
    private Connection connection;
    private OutboundPath outbound;

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

    /** Connects to a new peer (recovery off) and opens a channel; callers may write whenever the path is idle. */
    private Channel open(PublishOptions publishOptions, int peerReceiveBuffer) throws Exception {
        peer = new LoopbackPeer(peerReceiveBuffer);
        connection = client.connect(new ConnectionOptions()
                        .address("127.0.0.1", peer.port())
                        .recovery(new RecoveryOptions().enabled(false))
                        .publishOptions(publishOptions))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        outbound = ((ConnectionImpl) connection).handler().outbound();
        outbound.callerWriteGap(0);
        return connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private Channel open() throws Exception {
        return open(new PublishOptions(), 64 * 1024);
    }

    private long callerWrites() {
        return outbound.callerWriteCounts()[0];
    }

    private long handOvers() {
        return outbound.callerWriteCounts()[1];
    }

    /**
     * Waits for one pass of the event loop: Netty completes a write's future before it takes the write's bytes off its
     * outbound buffer, in the same task, and a caller may write only once that buffer is empty.
     */
    private void loopPass() throws Exception {
        outbound.eventLoop().submit(() -> {}).get(10, TimeUnit.SECONDS);
    }

    private static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    /** Publishes {@code s} and waits until the peer has read it. */
    private void publishAndRead(Channel ch, String s) throws Exception {
        assertSame(
                PublishOutcome.SENT,
                ch.publish("", "q", false, PROPS, text(s)).toCompletableFuture().get(10, TimeUnit.SECONDS));
        assertEquals(s, new String(peer.nextBody(), StandardCharsets.UTF_8));
    }

    /**
     * A client that counts (metrics on) keeps the caller's write to an idle connection: the byte counter in the
     * pipeline only counts, and the caller counts the bytes it writes past it, as many as the loop's write of the same
     * message.
     */
    @Test
    void aCallerWritesWhileTheClientCountsAndItsBytesAreCounted() throws Exception {
        client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        client = AmqpClient.create(
                new ClientOptions().ioThreads(1).preferNativeTransport(false).metricsEnabled(true));
        Channel ch = open();
        long before = client.metrics().bytesWritten();
        long callers = callerWrites();
        // a publish made on the event loop is the loop's write
        outbound.eventLoop()
                .submit(() -> ch.publishNoOutcome("", "q", false, PROPS, text("same")))
                .get(10, TimeUnit.SECONDS);
        assertEquals("same", new String(peer.nextBody(), StandardCharsets.UTF_8));
        assertEquals(callers, callerWrites(), "the loop wrote it");
        long loopBytes = client.metrics().bytesWritten() - before;
        loopPass();
        before = client.metrics().bytesWritten();
        publishAndRead(ch, "same");
        assertEquals(callers + 1, callerWrites(), "its caller wrote it");
        assertEquals(loopBytes, client.metrics().bytesWritten() - before, "and counted its bytes as the pipeline does");
        assertEquals(2, client.metrics().published());
    }

    /**
     * A body the application already released is refused before anything is written or queued: taken for a caller's
     * write it used to throw under the writer token, which was never given back, and the connection wrote nothing
     * ever again.
     */
    @Test
    void aReleasedBodyIsRefusedAndTheConnectionStillWrites() throws Exception {
        Channel ch = open();
        publishAndRead(ch, "before");
        ByteBuf released = text("gone");
        released.release();
        Throwable refused = failure(ch.publish("", "q", false, PROPS, released));
        assertInstanceOf(IllegalArgumentException.class, refused);
        ByteBuf releasedToo = text("gone too");
        releasedToo.release();
        assertThrows(IllegalArgumentException.class, () -> ch.publishNoOutcome("", "q", false, PROPS, releasedToo));
        long before = callerWrites();
        publishAndRead(ch, "after");
        assertEquals(before + 1, callerWrites(), "the next publish was written by its caller: the token is free");
        assertTrue(peer.bodies.isEmpty(), "nothing of the released bodies reached the peer");
    }

    /** The path gives the token back whatever its write throws: a body's views are taken under its try. */
    @Test
    void aWriteThatThrowsGivesTheTokenBack() throws Exception {
        Channel ch = open();
        publishAndRead(ch, "before");
        assertTrue(outbound.tryTakeForCaller());
        ByteBuf head = outbound.callerHead().writeBytes(new byte[] {1, 0, 1, 0, 0, 0, 0});
        ByteBuf released = text("gone");
        released.release();
        assertThrows(IllegalReferenceCountException.class, () -> outbound.writeDirect(head, released));
        assertTrue(outbound.tryTakeForCaller(), "the token was given back");
        outbound.releaseCaller();
        publishAndRead(ch, "after");
    }

    /**
     * A body that fails in an unexpected way while its caller writes it (not the socket refusing it) fails that
     * publish, released once, instead of being queued for the event loop; the connection goes on writing.
     */
    @Test
    void aBodyThatThrowsWhileItsCallerWritesItFailsThatPublish() throws Exception {
        Channel ch = open();
        publishAndRead(ch, "before");
        BrokenBody broken = new BrokenBody(text("broken"));
        Throwable failed = failure(ch.publish("", "q", false, PROPS, broken));
        assertInstanceOf(IllegalStateException.class, failed);
        assertEquals(0, broken.refCnt(), "released once");
        long before = callerWrites();
        publishAndRead(ch, "after");
        assertEquals(before + 1, callerWrites(), "the next publish was written by its caller: the token is free");
    }

    /** callerWritesPerBurst 0: the event loop writes every publish, an idle connection's too. */
    @Test
    void noCallerWritesWhenABurstMayHaveNone() throws Exception {
        Channel ch = open(new PublishOptions().callerWritesPerBurst(0), 64 * 1024);
        for (int i = 0; i < 5; i++) {
            publishAndRead(ch, "m" + i); // one at a time: the path is idle at each
        }
        assertEquals(0, callerWrites(), "callers wrote none");
    }

    /**
     * A socket that refuses a caller's write (IOException: here its output was shut down under the connection) sends
     * the publish the event loop's way, which meets the lost connection: the future fails, the body is released once.
     */
    @Test
    void aPublishTheSocketRefusesIsOwnedAsForALostConnection() throws Exception {
        Channel ch = open();
        publishAndRead(ch, "before");
        CallerSockets.socket(outbound).shutdownOutput();
        assertTrue(outbound.tryTakeForCaller(), "idle: the next publish is offered to the socket by its caller");
        outbound.releaseCaller();
        TrackedBody body = new TrackedBody("refused".getBytes(StandardCharsets.UTF_8));
        CompletableFuture<PublishOutcome> f =
                ch.publish("", "q", false, PROPS, body).toCompletableFuture();
        ExecutionException failed = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
        assertTrue(
                failed.getCause() instanceof PublishNotConfirmedException
                        || failed.getCause() instanceof ChannelClosedException,
                () -> "failed as not written: " + failed.getCause());
        body.assertReleasedOnce();
    }

    /**
     * A caller's write the socket takes only in part is handed to the event loop with the token: its future completes
     * (SENT) only when the rest is written, and fails when the connection is lost first; the body is released either
     * way.
     */
    @Test
    void aPublishHandedOverInPartCompletesWhenWrittenWholeOrFailsWithTheConnection() throws Exception {
        Channel ch = open(new PublishOptions(), 8192);
        outbound.channel().config().setOption(ChannelOption.SO_SNDBUF, 4096);
        publishAndRead(ch, "before");
        byte[] content = filled(100_000); // one frame, far more than both sockets' buffers hold

        peer.stall();
        long handed = handOvers();
        ByteBuf body = ByteBufAllocator.DEFAULT.directBuffer(content.length).writeBytes(content);
        CompletableFuture<PublishOutcome> written =
                ch.publish("", "q", false, PROPS, body).toCompletableFuture();
        assertEquals(handed + 1, handOvers(), "taken in part by the socket, the rest handed over");
        assertFalse(written.isDone(), "not SENT before the rest is written");
        peer.resume();
        assertSame(PublishOutcome.SENT, written.get(10, TimeUnit.SECONDS));
        assertArrayEquals(content, peer.nextBody());
        assertEquals(0, body.refCnt(), "released once written");

        loopPass();
        peer.stall();
        ByteBuf lostBody = ByteBufAllocator.DEFAULT.directBuffer(content.length).writeBytes(content);
        CompletableFuture<PublishOutcome> lost =
                ch.publish("", "q", false, PROPS, lostBody).toCompletableFuture();
        assertEquals(handed + 2, handOvers(), "handed over again");
        assertFalse(lost.isDone());
        peer.cut();
        ExecutionException failed = assertThrows(ExecutionException.class, () -> lost.get(10, TimeUnit.SECONDS));
        assertInstanceOf(PublishNotConfirmedException.class, failed.getCause());
        assertEquals(0, lostBody.refCnt(), "released with the failed write");
    }

    /**
     * A heap body the channel would stage (16 KiB or more) is written by the event loop, through the connection's
     * staging buffer: written by its caller, the JDK would copy it into a direct buffer it keeps for that thread. A
     * smaller heap body and a large direct one are written by their callers.
     */
    @Test
    void onlyDirectOrSmallHeapBodiesAreWrittenByTheirCallers() throws Exception {
        Channel ch = open();
        publishAndRead(ch, "before");
        long before = callerWrites();
        int stageFrom = DirectNioSocketChannel.STAGE_FROM;
        for (int size : new int[] {100_000, 64 * 1024, stageFrom}) {
            byte[] large = filled(size);
            publishAndReceive(ch, Unpooled.wrappedBuffer(large), large);
            assertEquals(before, callerWrites(), "a heap body of " + size + " B: written by the event loop");
        }

        byte[] small = filled(stageFrom - 1); // Publisher.MAX_CALLER_HEAP_BODY
        publishAndReceive(ch, Unpooled.wrappedBuffer(small), small);
        assertEquals(before + 1, callerWrites(), "a heap body just below STAGE_FROM: written by its caller");

        byte[] large = filled(100_000);
        publishAndReceive(
                ch, ByteBufAllocator.DEFAULT.directBuffer(large.length).writeBytes(large), large);
        assertEquals(before + 2, callerWrites(), "a 100 kB direct body: written by its caller");
    }

    /** After a loop pass, publishes {@code body} (Warren owns it), waits for SENT and reads {@code bytes} at the peer. */
    private void publishAndReceive(Channel ch, ByteBuf body, byte[] bytes) throws Exception {
        loopPass();
        assertSame(
                PublishOutcome.SENT,
                ch.publish("", "q", false, PROPS, body).toCompletableFuture().get(10, TimeUnit.SECONDS));
        assertArrayEquals(bytes, peer.nextBody());
    }

    private static byte[] filled(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) (i * 31 + i / 251);
        }
        return b;
    }

    /** A body whose NIO views throw: the JDK socket cannot take it (its heap copy for the loop would work). */
    static final class BrokenBody extends io.netty.buffer.WrappedByteBuf {
        BrokenBody(ByteBuf buf) {
            super(buf);
        }

        @Override
        public java.nio.ByteBuffer nioBuffer(int index, int length) {
            throw new IllegalStateException("no NIO view of this body");
        }

        @Override
        public java.nio.ByteBuffer internalNioBuffer(int index, int length) {
            throw new IllegalStateException("no NIO view of this body");
        }
    }
}
