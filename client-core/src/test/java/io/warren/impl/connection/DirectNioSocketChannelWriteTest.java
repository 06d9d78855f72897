package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Over a real socket with small buffers, so that the socket takes every large write in parts: how Warren's NIO channel
 * writes heap buffers (through its staging buffer, each heap byte copied once) and direct ones (as they are), in order.
 */
class DirectNioSocketChannelWriteTest {

    @AutoClose
    private final SmallSocketServer sockets = new SmallSocketServer();

    /** Reads {@code length} bytes, a small read at a time (the peer is slow: the writer meets a full socket). */
    private static byte[] readAll(SocketChannel peer, int length) throws Exception {
        ByteBuffer received = ByteBuffer.allocate(length);
        ByteBuffer chunk = ByteBuffer.allocate(3000);
        while (received.hasRemaining()) {
            chunk.clear().limit(Math.min(chunk.capacity(), received.remaining()));
            if (peer.read(chunk) < 0) {
                break;
            }
            received.put(chunk.flip());
        }
        return received.array();
    }

    /** {@code size} bytes, the same ones for the same {@code seed}. */
    private static byte[] randomBytes(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static long activeDirectAllocations() {
        long active = 0;
        for (PooledByteBufAllocator pool : ConnectionAllocator.INSTANCE.pools()) {
            for (PoolArenaMetric arena : pool.metric().directArenas()) {
                active += arena.numActiveAllocations();
            }
        }
        return active;
    }

    /** What {@code task} returns, run on the channel's event loop. */
    private static <T> T onLoop(Channel ch, Callable<T> task) throws Exception {
        return ch.eventLoop().submit(task).get(10, TimeUnit.SECONDS);
    }

    /** A direct buffer from the connection's pool holding {@code bytes}; the caller (or the channel) releases it. */
    private static ByteBuf direct(Channel ch, byte[] bytes, int from, int length) throws Exception {
        CompletableFuture<ByteBuf> made = new CompletableFuture<>();
        // on the loop: the connection's allocator answers with its pooled direct buffers there
        ch.eventLoop()
                .execute(() -> made.complete(ch.alloc().directBuffer(length).writeBytes(bytes, from, length)));
        ByteBuf b = made.get(10, TimeUnit.SECONDS);
        assertTrue(b.isDirect());
        return b;
    }

    /**
     * Writes a heap body of {@code size} random bytes, checks that it arrives intact and is released once written, and
     * returns the heap bytes staged and the capacity of the last staging buffer taken.
     */
    private long[] writeHeapBody(int size, long seed) throws Exception {
        DirectNioSocketChannel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            byte[] bytes = randomBytes(size, seed);
            ByteBuf body = Unpooled.wrappedBuffer(bytes);
            CompletableFuture<Throwable> written = new CompletableFuture<>();
            ch.writeAndFlush(body).addListener(w -> written.complete(w.cause()));
            assertArrayEquals(bytes, readAll(peer, bytes.length), "the bytes arrive intact");
            assertNull(written.get(10, TimeUnit.SECONDS));
            assertEquals(0, body.refCnt(), "released once written");
            return onLoop(ch, () -> new long[] {ch.stagedBytes(), ch.lastStagingCapacity()});
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aLargeHeapBodyTakenByTheSocketInPartsIsCopiedOnceIntoTheStagingBuffer() throws Exception {
        int size = 8 << 20;
        // Handed to the socket, the 8 MiB would be copied by the JDK into a temporary direct buffer of that size,
        // which its thread keeps, and copied again, all that is left of it, at every partial write (and at the
        // write after one, which the full socket answers with 0): here it goes through the staging buffer.
        long[] staged = writeHeapBody(size, 11);
        assertEquals(size, staged[0], "every heap byte copied exactly once");
        assertEquals(StagingBuffer.CAPACITY, staged[1], "8 MiB waiting: the large staging buffer");
    }

    @Test
    void aOneMebibyteHeapBodyIsStagedWholeInOneStagingBuffer() throws Exception {
        // the broker pays per write: 16 threads' 1 MiB bodies ran 12 % faster written whole than in two halves
        int size = 1 << 20;
        long[] staged = writeHeapBody(size, 19);
        assertEquals(size, staged[0], "every heap byte staged, exactly once");
        assertTrue(staged[1] >= size, "one staging buffer holds the whole body: " + staged[1]);
    }

    /** Writes {@code bytes} as a heap body and checks that they arrive intact and the write succeeds. */
    private static void writeAndRead(Channel ch, SocketChannel peer, byte[] bytes) throws Exception {
        CompletableFuture<Throwable> written = new CompletableFuture<>();
        ch.writeAndFlush(Unpooled.wrappedBuffer(bytes)).addListener(w -> written.complete(w.cause()));
        assertArrayEquals(bytes, readAll(peer, bytes.length), "the bytes arrive intact");
        assertNull(written.get(10, TimeUnit.SECONDS));
    }

    /** Waits until {@code condition}, asked on the channel's loop, holds; fails after 10 s. */
    private static void awaitOnLoop(Channel ch, Callable<Boolean> condition, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!onLoop(ch, condition)) {
            assertTrue(System.nanoTime() < deadline, what);
            Thread.sleep(10);
        }
    }

    @Test
    void theStagingBufferGoesBackWhenNoBurstUsedItForItsLingerEvenWhenTheLastSpinEmptiedTheOutboundBuffer()
            throws Exception {
        DirectNioSocketChannel ch = sockets.connect(TimeUnit.MILLISECONDS.toNanos(50));
        try (SocketChannel peer = sockets.accept()) {
            // one write per flush: the write that takes the last bytes is a loop's last spin, after which Netty's
            // next flush finds nothing to write and never calls doWrite again
            ch.config().setWriteSpinCount(1);
            byte[] bytes = randomBytes(1 << 20, 17);
            writeAndRead(ch, peer, bytes);
            assertEquals(StagingBuffer.CAPACITY, (int) onLoop(ch, ch::lastStagingCapacity));
            awaitOnLoop(ch, () -> !ch.holdsStaging(), "an idle connection gives its staging buffer back");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aHeavyStreamKeepsItsStagingBufferFromBurstToBurst() throws Exception {
        // Its outbound buffer empties between messages: given back at each, the buffer was taken from the pool again
        // at the next, and the second of two such connections on one loop made and freed a 2 MiB chunk for it.
        DirectNioSocketChannel ch = sockets.connect(TimeUnit.HOURS.toNanos(1));
        try (SocketChannel peer = sockets.accept()) {
            byte[] bytes = randomBytes(1 << 20, 23);
            writeAndRead(ch, peer, bytes);
            assertTrue(onLoop(ch, ch::holdsStaging), "the staging buffer outlives its burst");
            writeAndRead(ch, peer, bytes);
            writeAndRead(ch, peer, bytes);
            assertEquals(1, (int) onLoop(ch, ch::stagingBuffersTaken), "one staging buffer for the three bursts");
            assertEquals(3L << 20, (long) onLoop(ch, ch::stagedBytes), "every heap byte staged, exactly once");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aSmallBodyAfterALargeBurstGoesToTheJdkAsAtTheHeadOfAnyBurst() throws Exception {
        // a lingering buffer is not a burst that has staged: a body below STAGE_FROM is not copied into it
        DirectNioSocketChannel ch = sockets.connect(TimeUnit.HOURS.toNanos(1));
        try (SocketChannel peer = sockets.accept()) {
            byte[] large = randomBytes(1 << 20, 41);
            writeAndRead(ch, peer, large);
            assertTrue(onLoop(ch, ch::holdsStaging));
            byte[] small = randomBytes(16, 43);
            writeAndRead(ch, peer, small);
            assertEquals(1L << 20, (long) onLoop(ch, ch::stagedBytes), "the 16 B body was not staged");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aLoopKeepsAtMostTwoLargeStagingBuffersBetweenBursts() throws Exception {
        // many connections that each send a large body now and then must not each hold 1 MiB
        List<DirectNioSocketChannel> channels = new ArrayList<>();
        List<SocketChannel> peers = new ArrayList<>();
        try {
            byte[] large = randomBytes(1 << 20, 47);
            for (int i = 0; i < 3; i++) {
                DirectNioSocketChannel ch = sockets.connect(TimeUnit.HOURS.toNanos(1));
                channels.add(ch);
                peers.add(sockets.accept());
                writeAndRead(ch, peers.get(i), large);
            }
            int holding = 0;
            for (DirectNioSocketChannel ch : channels) {
                holding += onLoop(ch, ch::holdsStaging) ? 1 : 0;
            }
            assertEquals(StagingBuffer.MAX_LINGERING_PER_LOOP, holding, "connections on one loop keeping one");
        } finally {
            for (DirectNioSocketChannel ch : channels) {
                ch.close().sync();
            }
            for (SocketChannel peer : peers) {
                peer.close();
            }
        }
    }

    @Test
    void aLargeBodyInFramesSmallerThanTheSmallBufferStillTakesTheLargeOne() throws Exception {
        // at a frame_max of 32 KiB a 1 MiB body reaches the socket as 32 KiB slices of one composite
        DirectNioSocketChannel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            byte[] bytes = randomBytes(1 << 20, 53);
            CompositeByteBuf frames = Unpooled.compositeBuffer(64);
            for (int off = 0; off < bytes.length; off += 32 * 1024) {
                frames.addComponent(true, Unpooled.wrappedBuffer(bytes, off, 32 * 1024));
            }
            CompletableFuture<Throwable> written = new CompletableFuture<>();
            ch.writeAndFlush(frames).addListener(w -> written.complete(w.cause()));
            assertArrayEquals(bytes, readAll(peer, bytes.length), "the bytes arrive intact");
            assertNull(written.get(10, TimeUnit.SECONDS));
            assertEquals(StagingBuffer.CAPACITY, (int) onLoop(ch, ch::lastStagingCapacity));
            assertEquals(0, frames.refCnt(), "released once written");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aLargeStagingBufferGoesBackWhenOnlyModerateBurstsFollowSoThatTheyTakeTheSmallOne() throws Exception {
        DirectNioSocketChannel ch = sockets.connect(TimeUnit.MILLISECONDS.toNanos(50));
        try (SocketChannel peer = sockets.accept()) {
            byte[] large = randomBytes(1 << 20, 29);
            writeAndRead(ch, peer, large);
            assertEquals(StagingBuffer.CAPACITY, (int) onLoop(ch, ch::lastStagingCapacity));
            byte[] moderate = randomBytes(40 * 1024, 31);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            // moderate bursts keep a staging buffer in use, but not the large one
            while (onLoop(ch, ch::lastStagingCapacity) != StagingBuffer.SMALL_CAPACITY) {
                assertTrue(System.nanoTime() < deadline, "a moderate stream takes the small staging buffer again");
                writeAndRead(ch, peer, moderate);
                Thread.sleep(5);
            }
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void sixtyFourKibBodiesTakeTheSmallStagingBufferHoweverManyWait() throws Exception {
        // a raised high-water mark keeps megabytes of them waiting; the small buffer holds one whole with its frames
        DirectNioSocketChannel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            int size = 64 * 1024;
            int count = 12;
            byte[] bytes = randomBytes(count * size, 37);
            List<ByteBuf> bodies = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                bodies.add(Unpooled.wrappedBuffer(bytes, i * size, size));
            }
            CompletableFuture<Void> queued = new CompletableFuture<>();
            ch.eventLoop().execute(() -> {
                for (int i = 0; i < count - 1; i++) {
                    ch.write(bodies.get(i));
                }
                ch.writeAndFlush(bodies.get(count - 1));
                queued.complete(null);
            });
            queued.get(10, TimeUnit.SECONDS);
            assertArrayEquals(bytes, readAll(peer, bytes.length), "the bytes arrive intact, in order");
            long[] staged = onLoop(ch, () -> new long[] {ch.stagedBytes(), ch.lastStagingCapacity()});
            assertEquals(bytes.length, staged[0], "every heap byte staged, exactly once");
            assertEquals(StagingBuffer.SMALL_CAPACITY, staged[1], "768 KiB waiting, of 64 KiB bodies");
            for (ByteBuf body : bodies) {
                assertEquals(0, body.refCnt(), "released once written");
            }
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aModerateBurstOfHeapBodiesIsStagedInTheSmallBufferEveryByteOnce() throws Exception {
        DirectNioSocketChannel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            // 120 KiB waiting: the small staging buffer (72 KiB) takes the first body and 32 KiB of the second, whose
            // last 8 KiB (below STAGE_FROM) are staged next rather than left to the JDK's temporary buffers
            int size = 40 * 1024;
            byte[] bytes = randomBytes(3 * size, 13);
            List<ByteBuf> bodies = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                bodies.add(Unpooled.wrappedBuffer(bytes, i * size, size));
            }
            CompletableFuture<Void> queued = new CompletableFuture<>();
            ch.eventLoop().execute(() -> {
                ch.write(bodies.get(0));
                ch.write(bodies.get(1));
                ch.writeAndFlush(bodies.get(2));
                queued.complete(null);
            });
            queued.get(10, TimeUnit.SECONDS);
            assertArrayEquals(bytes, readAll(peer, bytes.length), "the bytes arrive intact, in order");
            long[] staged = onLoop(ch, () -> new long[] {ch.stagedBytes(), ch.lastStagingCapacity()});
            assertEquals(bytes.length, staged[0], "every heap byte staged, exactly once");
            assertEquals(StagingBuffer.SMALL_CAPACITY, staged[1], "less than 512 KiB waiting");
            for (ByteBuf body : bodies) {
                assertEquals(0, body.refCnt(), "released once written");
            }
        } finally {
            ch.close().sync();
        }
    }

    @Test
    @Timeout(60) // a write loop that cannot make progress spins instead of failing
    void smallHeapBodiesGoToTheSocketAsNettyHandsThemOverUnstaged() throws Exception {
        DirectNioSocketChannel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            byte[] small = new byte[16];
            byte[] kib = new byte[16 * 1024 - 1]; // below DirectNioSocketChannel.STAGE_FROM
            new Random(3).nextBytes(small);
            new Random(4).nextBytes(kib);
            ByteBuf first = Unpooled.wrappedBuffer(small);
            ByteBuf second = Unpooled.wrappedBuffer(kib);
            CompletableFuture<Void> queued = new CompletableFuture<>();
            ch.eventLoop().execute(() -> {
                ch.write(first);
                ch.writeAndFlush(second);
                queued.complete(null);
            });
            queued.get(10, TimeUnit.SECONDS);
            byte[] all = new byte[small.length + kib.length];
            System.arraycopy(small, 0, all, 0, small.length);
            System.arraycopy(kib, 0, all, small.length, kib.length);
            assertArrayEquals(all, readAll(peer, all.length), "the bytes arrive intact, in order");
            // staging a small body costs the staging buffer's trip to the pool and saves nothing
            assertEquals(0, (long) onLoop(ch, ch::stagedBytes), "nothing staged");
            assertEquals(0, first.refCnt());
            assertEquals(0, second.refCnt());
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void theStagingBufferFitsInAChunkOfTheConnectionsPool() {
        // a larger one would be allocated outside the pool (Netty's "huge" allocations), and freed, at every burst
        assertTrue(StagingBuffer.CAPACITY <= ConnectionAllocator.CHUNK_SIZE / 2);
        // the small one leaves room in its chunk for the loop's reads and heads, and holds a 64 KiB body's frames
        assertTrue(StagingBuffer.SMALL_CAPACITY <= ConnectionAllocator.SMALL_CHUNK_SIZE * 3 / 4);
        assertTrue(StagingBuffer.SMALL_CAPACITY >= 64 * 1024 + 64);
    }

    @Test
    void heapAndDirectBuffersMixedAsPublishesFrameThemArriveInOrderAndAreReleasedOnce() throws Exception {
        DirectNioSocketChannel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            Random random = new Random(5);
            ByteArrayOutputStream expected = new ByteArrayOutputStream();
            List<ByteBuf> messages = new ArrayList<>();
            List<Integer> completed = new ArrayList<>();
            for (int m = 0; m < 24; m++) {
                // as PublishFraming frames a multi-frame publish: a small direct head, then body slices (heap, or
                // direct) with the 8-byte direct pieces between them; or a single direct or heap buffer
                byte[] bytes = new byte[1 + random.nextInt(300_000)];
                random.nextBytes(bytes);
                expected.write(bytes);
                ByteBuf message;
                switch (m % 4) {
                    case 0, 1 -> {
                        boolean heapBody = m % 4 == 0;
                        CompositeByteBuf composite = Unpooled.compositeBuffer(64);
                        int at = 0;
                        int head = Math.min(bytes.length, 81);
                        composite.addComponent(true, direct(ch, bytes, 0, head));
                        at += head;
                        while (at < bytes.length) {
                            int slice = Math.min(bytes.length - at, 131_064);
                            composite.addComponent(
                                    true,
                                    heapBody ? Unpooled.wrappedBuffer(bytes, at, slice) : direct(ch, bytes, at, slice));
                            at += slice;
                            int piece = Math.min(bytes.length - at, 8);
                            if (piece > 0) {
                                composite.addComponent(true, direct(ch, bytes, at, piece));
                                at += piece;
                            }
                        }
                        message = composite;
                    }
                    case 2 -> message = direct(ch, bytes, 0, bytes.length);
                    default -> message = Unpooled.wrappedBuffer(bytes);
                }
                messages.add(message);
            }
            CompletableFuture<Void> queued = new CompletableFuture<>();
            ch.eventLoop().execute(() -> {
                for (int i = 0; i < messages.size(); i++) {
                    int index = i;
                    ch.write(messages.get(i)).addListener(w -> {
                        assertTrue(ch.eventLoop().inEventLoop());
                        completed.add(w.cause() == null ? index : -1 - index);
                    });
                }
                ch.flush();
                queued.complete(null);
            });
            queued.get(10, TimeUnit.SECONDS);
            byte[] all = expected.toByteArray();
            assertArrayEquals(all, readAll(peer, all.length), "confirm: every byte in write order");
            List<Integer> order = onLoop(ch, () -> new ArrayList<>(completed));
            for (int i = 0; i < messages.size(); i++) {
                assertEquals(i, order.get(i), "each write completes in order, successfully");
                assertEquals(0, messages.get(i).refCnt(), "message " + i + " released once");
            }
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void whatIsStagedWhenTheConnectionClosesIsReleasedWithTheUnwrittenBuffers() throws Exception {
        DirectNioSocketChannel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            ByteBuf body = Unpooled.wrappedBuffer(new byte[4 << 20]);
            // the loop's first large buffer anchors its chunk for good (see ConnectionAllocator): taken before counting
            ch.eventLoop()
                    .submit(() -> ConnectionAllocator.INSTANCE
                            .stagingBuffer(StagingBuffer.CAPACITY)
                            .release())
                    .sync();
            long active = activeDirectAllocations();
            CompletableFuture<Throwable> written = new CompletableFuture<>();
            ch.writeAndFlush(body).addListener(w -> written.complete(w.cause()));
            readAll(peer, 100_000); // part of it, so that a part is staged and the rest waits
            ch.close().sync();
            assertTrue(written.get(10, TimeUnit.SECONDS) != null, "the write fails with the connection");
            assertEquals(0, body.refCnt());
            assertEquals(active, activeDirectAllocations(), "the staging buffer went back to the pool");
        }
    }
}
