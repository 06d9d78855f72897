package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PoolChunkListMetric;
import io.netty.buffer.PoolChunkMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;

/** Over a real socket: what Warren's NIO channel does with the buffers its allocator gives and the heap it is given. */
class ConnectionAllocatorTest {

    @AutoClose
    private final SmallSocketServer sockets = new SmallSocketServer();

    @Test
    void aHeapBodyIsWrittenAsItIsWithoutAPooledDirectCopy() throws Exception {
        Channel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            byte[] bytes = new byte[1 << 20]; // a large body: eight frames' worth at RabbitMQ's frame-max
            new Random(7).nextBytes(bytes);
            // as the publisher writes a body: a slice of the caller's wrapped array
            ByteBuf wrapped = Unpooled.wrappedBuffer(bytes);
            ByteBuf body = wrapped.retainedSlice(0, bytes.length);
            wrapped.release();
            CompletableFuture<Object> inBuffer = new CompletableFuture<>();
            CompletableFuture<Throwable> written = new CompletableFuture<>();
            ch.eventLoop().execute(() -> {
                ch.writeAndFlush(body).addListener(w -> written.complete(w.cause()));
                // what Netty keeps until the socket has taken it all: the body itself, not a copy in the pool
                inBuffer.complete(ch.unsafe().outboundBuffer().current());
            });
            assertSame(body, inBuffer.get(10, TimeUnit.SECONDS));
            ByteBuffer received = ByteBuffer.allocate(bytes.length);
            while (received.hasRemaining()) {
                if (peer.read(received) < 0) {
                    break;
                }
            }
            assertEquals(null, written.get(10, TimeUnit.SECONDS));
            assertArrayEquals(bytes, received.array(), "the bytes arrive intact");
            assertEquals(0, body.refCnt(), "released once written");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void readsAndTheLoopsOwnBuffersComeFromWarrensPoolsSmallOnesFromSmallChunks() throws Exception {
        Channel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            PooledByteBufAllocator small = ConnectionAllocator.INSTANCE.pools()[0];
            PooledByteBufAllocator large = ConnectionAllocator.INSTANCE.pools()[1];
            // Warren's own pools, not the application's default one: 128 KiB and 2 MiB chunks instead of 4 MiB
            assertNotSame(PooledByteBufAllocator.DEFAULT, small);
            assertNotSame(PooledByteBufAllocator.DEFAULT, large);
            assertEquals(128 << 10, small.metric().chunkSize());
            assertEquals(2 << 20, large.metric().chunkSize());
            ByteBuf[] buffers = ch.eventLoop()
                    .submit(() -> new ByteBuf[] {
                        ch.alloc().buffer(64), // a method frame
                        ch.alloc().ioBuffer(2048), // a read's first guess
                        ch.alloc().ioBuffer(ConnectionAllocator.SMALL_MAX),
                        ch.alloc().ioBuffer(64 * 1024), // a busy consumer's read
                        ch.alloc().buffer(128 * 1024 + 8), // a frame cumulation at RabbitMQ's frame-max
                        ConnectionAllocator.INSTANCE.stagingBuffer(ConnectionAllocator.SMALL_STAGING_MAX),
                        ConnectionAllocator.INSTANCE.stagingBuffer(ConnectionAllocator.SMALL_STAGING_MAX + 1)
                    })
                    .get(10, TimeUnit.SECONDS);
            try {
                PooledByteBufAllocator[] expected = {small, small, small, large, large, small, large};
                for (int i = 0; i < buffers.length; i++) {
                    assertTrue(buffers[i].isDirect(), "buffer " + i);
                    assertSame(expected[i], buffers[i].alloc(), "buffer " + i);
                }
                // buffers held in both pools: at least a chunk of each
                assertTrue(
                        ConnectionAllocator.INSTANCE.metric().usedDirectMemory() >= (128 << 10) + (2 << 20),
                        "the allocator's metric counts both pools");
            } finally {
                for (ByteBuf b : buffers) {
                    b.release();
                }
            }
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aFastThreadLocalThreadThatNeverCleansUpTakesNoAnchor() throws Exception {
        // an application's own thread, its run() overridden: its fast thread-locals are never removed, so an anchor
        // taken there would pin a chunk until the thread object is collected (and be reported as a leak then)
        long[] active = new long[2];
        Throwable[] failure = new Throwable[1];
        FastThreadLocalThread thread = new FastThreadLocalThread() {
            @Override
            public void run() {
                try {
                    active[0] = largeActiveAllocations();
                    ConnectionAllocator.INSTANCE.directBuffer(64 * 1024).release();
                    active[1] = largeActiveAllocations();
                } catch (Throwable t) {
                    failure[0] = t;
                }
            }
        };
        assertFalse(thread.willCleanupFastThreadLocals());
        thread.start();
        thread.join(10_000);
        assertEquals(null, failure[0]);
        assertEquals(active[0], active[1], "nothing of the large pool is left held by that thread");
    }

    /** Buffers of the large pool not yet given back, in every arena. */
    private static long largeActiveAllocations() {
        long active = 0;
        for (PoolArenaMetric arena :
                ConnectionAllocator.INSTANCE.pools()[1].metric().directArenas()) {
            active += arena.numActiveAllocations();
        }
        return active;
    }

    /** The large pool's chunks now, by identity. */
    private static Set<PoolChunkMetric> largeChunks() {
        Set<PoolChunkMetric> chunks = Collections.newSetFromMap(new IdentityHashMap<>());
        for (PoolArenaMetric arena :
                ConnectionAllocator.INSTANCE.pools()[1].metric().directArenas()) {
            for (PoolChunkListMetric list : arena.chunkLists()) {
                list.forEach(chunks::add);
            }
        }
        return chunks;
    }

    @Test
    void aLoopThatTakesAndGivesBackItsLargeStagingBufferKeepsOneChunk() throws Exception {
        Channel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            // a heavy stream's bursts: the large staging buffer taken and given back, again and again
            int made = ch.eventLoop()
                    .submit(() -> {
                        Set<PoolChunkMetric> before = largeChunks();
                        Set<PoolChunkMetric> seen = Collections.newSetFromMap(new IdentityHashMap<>());
                        for (int burst = 0; burst < 20; burst++) {
                            ByteBuf staging = ConnectionAllocator.INSTANCE.stagingBuffer(StagingBuffer.CAPACITY);
                            seen.addAll(largeChunks());
                            staging.release();
                        }
                        seen.removeAll(before);
                        return seen.size();
                    })
                    .get(10, TimeUnit.SECONDS);
            // Netty frees a chunk whose last buffer goes back; each burst would then make (and zero) a new one
            assertTrue(made <= 1, "the same chunk served every burst: " + made + " chunks made");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aFrameEncodedOnAnApplicationThreadIsOnTheHeapAndStillReachesThePeer() throws Exception {
        Channel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            // an application thread (this one) encoding an RPC: no arena, no chunk bound to it
            ByteBuf frame = ch.alloc().buffer(8, 8).writeLong(0x0102030405060708L);
            assertFalse(frame.isDirect());
            assertFalse(frame.alloc() instanceof PooledByteBufAllocator);
            ch.writeAndFlush(frame).sync();
            ByteBuffer received = ByteBuffer.allocate(8);
            while (received.hasRemaining() && peer.read(received) >= 0) {
                // until all 8 bytes are in
            }
            assertEquals(0x0102030405060708L, received.getLong(0));
            assertEquals(0, frame.refCnt());
        } finally {
            ch.close().sync();
        }
    }
}
