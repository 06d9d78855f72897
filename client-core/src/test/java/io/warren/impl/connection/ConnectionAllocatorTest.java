package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Random;
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
    void readsAndTheLoopsOwnBuffersComeFromWarrensPoolOfSmallChunks() throws Exception {
        Channel ch = sockets.connect();
        try (SocketChannel peer = sockets.accept()) {
            CompletableFuture<ByteBuf> onLoop = new CompletableFuture<>();
            ch.eventLoop().execute(() -> onLoop.complete(ch.alloc().buffer(64)));
            ByteBuf loopBuffer = onLoop.get(10, TimeUnit.SECONDS);
            ByteBuf read = ch.alloc().ioBuffer(64);
            try {
                assertTrue(loopBuffer.isDirect());
                PooledByteBufAllocator pool = assertInstanceOf(PooledByteBufAllocator.class, loopBuffer.alloc());
                assertTrue(read.isDirect());
                assertSame(pool, read.alloc());
                // Warren's own pool, not the application's default one, in chunks of 1 MiB instead of 4 MiB
                assertNotSame(PooledByteBufAllocator.DEFAULT, pool);
                assertEquals(1 << 20, pool.metric().chunkSize());
                assertSame(pool.metric(), ConnectionAllocator.INSTANCE.metric());
            } finally {
                loopBuffer.release();
                read.release();
            }
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
