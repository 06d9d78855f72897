package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The one outbound path: order per writer, atomic items, coalesced flushes, ownership on failure. */
class OutboundPathTest {

    /**
     * Counts writes and flushes reaching the transport: each write's first int ({@code values}, for writes of 4 bytes
     * or more) and a copy of its bytes ({@code writes}).
     */
    static final class Recorder extends ChannelOutboundHandlerAdapter {
        final List<Integer> values = new ArrayList<>();
        final List<byte[]> writes = new ArrayList<>();
        int flushes;

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            ByteBuf b = (ByteBuf) msg;
            if (b.readableBytes() >= 4) {
                values.add(b.getInt(b.readerIndex()));
            }
            writes.add(io.netty.buffer.ByteBufUtil.getBytes(b));
            ctx.write(msg, promise);
        }

        /** Every write's bytes, in order: the stream on the wire. */
        byte[] stream() {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            writes.forEach(out::writeBytes);
            return out.toByteArray();
        }

        @Override
        public void flush(ChannelHandlerContext ctx) {
            flushes++;
            ctx.flush();
        }
    }

    /** A client and server {@link LocalChannel} on {@code group}, connected; the client's path is in its holder. */
    private record LocalPair(
            DefaultEventLoopGroup group,
            io.netty.channel.Channel server,
            io.netty.channel.Channel client,
            Holder holder)
            implements AutoCloseable {
        OutboundPath path() {
            return holder.path;
        }

        /** Closes both channels and shuts the group down. */
        @Override
        public void close() throws InterruptedException {
            client.close().sync();
            server.close().sync();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }

        static LocalPair open(DefaultEventLoopGroup group, String name) throws InterruptedException {
            LocalAddress address = new LocalAddress(name + "-" + System.nanoTime());
            io.netty.channel.Channel server = new ServerBootstrap()
                    .group(group)
                    .channel(LocalServerChannel.class)
                    .childHandler(new ChannelInboundHandlerAdapter())
                    .bind(address)
                    .sync()
                    .channel();
            Holder holder = new Holder();
            io.netty.channel.Channel client = new Bootstrap()
                    .group(group)
                    .channel(LocalChannel.class)
                    .handler(holder)
                    .connect(address)
                    .sync()
                    .channel();
            return new LocalPair(group, server, client, holder);
        }
    }

    static final class Holder extends ChannelInboundHandlerAdapter {
        volatile OutboundPath path;

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            path = new OutboundPath(ctx);
        }
    }

    @Test
    void heapBodiesAreStagedWithoutACopyInDirectMemoryUnlessTlsEncryptsThem() throws Exception {
        Holder plain = new Holder();
        EmbeddedChannel clear = new EmbeddedChannel(plain);
        assertTrue(plain.path.stagesHeapBodies(), "no TLS, not a native transport");
        clear.finishAndReleaseAll();
        // SslHandler encrypts each body into direct buffers that wait for the socket: the mark must not be raised there
        SslHandler tls = SslContextBuilder.forClient().build().newHandler(UnpooledByteBufAllocator.DEFAULT);
        Holder secured = new Holder();
        EmbeddedChannel encrypted = new EmbeddedChannel(tls, secured);
        assertFalse(secured.path.stagesHeapBodies(), "TLS");
        encrypted.finishAndReleaseAll();
    }

    @Test
    void writesOnTheLoopInsideAReadBatchAreFlushedOnceAtItsEnd() {
        Recorder recorder = new Recorder();
        Holder holder = new Holder();
        EmbeddedChannel ch = new EmbeddedChannel(recorder, holder);
        OutboundPath path = holder.path;
        path.beginReadBatch();
        for (int i = 0; i < 10; i++) {
            path.write(Unpooled.buffer(4).writeInt(i));
        }
        assertEquals(0, recorder.flushes);
        path.endReadBatch();
        assertEquals(1, recorder.flushes);
        // outside a batch: a flush task for the pass (EmbeddedChannel runs tasks inside each write, so
        // the coalescing across writes is shown on a real event loop in the next test)
        path.write(Unpooled.buffer(4).writeInt(10));
        ch.runPendingTasks();
        assertEquals(2, recorder.flushes);
        assertEquals(11, recorder.values.size());
        assertEquals(11, ch.outboundMessages().size());
        ch.finishAndReleaseAll();
    }

    /**
     * A task on the path that throws an Error (a listener's AssertionError, say) is logged and the path goes on.
     * Before, the Error left the drain with its flag still set: nothing offered afterwards was ever run, and every
     * later publish on the connection waited for ever.
     */
    @Test
    void aTaskThatThrowsAnErrorDoesNotStopThePath() throws Exception {
        try (LocalPair pair = LocalPair.open(new DefaultEventLoopGroup(1), "outbound-path-error")) {
            OutboundPath path = pair.path();
            // from this thread, not the loop's: queued and run by the loop's drain
            path.execute(() -> {
                throw new AssertionError("a task's Error (test)");
            });
            CompletableFuture<Void> after = new CompletableFuture<>();
            path.execute(() -> after.complete(null));
            after.get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Discarding a closed connection's queue goes on past a task that throws: before, the throw left
     * {@code discardQueued} half-way, so the tasks behind it never failed their futures and the connection's close
     * (which discards the queue before it completes its close future) stopped there.
     */
    @Test
    void discardingTheQueueGoesOnPastATaskThatThrows() throws Exception {
        try (LocalPair pair = LocalPair.open(new DefaultEventLoopGroup(1), "outbound-path-discard")) {
            OutboundPath path = pair.path();
            CountDownLatch queued = new CountDownLatch(1);
            // the loop waits in a task of its own while this thread queues two tasks behind it, then discards them
            io.netty.util.concurrent.Future<Throwable> discarding = pair.client()
                    .eventLoop()
                    .submit(() -> {
                        assertTrue(queued.await(10, TimeUnit.SECONDS));
                        try {
                            path.discardQueued(new java.io.IOException("closed (test)"));
                            return null;
                        } catch (Throwable t) {
                            return t;
                        }
                    });
            path.execute(() -> {
                throw new AssertionError("a task's Error (test)");
            });
            CompletableFuture<Void> after = new CompletableFuture<>();
            path.execute(() -> after.complete(null));
            queued.countDown();
            assertEquals(null, discarding.get(10, TimeUnit.SECONDS), "discardQueued went through");
            assertTrue(after.isDone(), "the task behind the one that threw was run");
        }
    }

    @Test
    void writesFromManyThreadsKeepEachThreadsOrderAndCoalesceFlushes() throws Exception {
        DefaultEventLoopGroup group = new DefaultEventLoopGroup(1);
        LocalAddress address = new LocalAddress("outbound-path-test-" + System.nanoTime());
        AtomicInteger received = new AtomicInteger();
        int threads = 4;
        int perThread = 5_000;
        CountDownLatch all = new CountDownLatch(1);
        List<List<Integer>> seenByWriter = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            seenByWriter.add(new ArrayList<>());
        }
        ServerBootstrap server = new ServerBootstrap()
                .group(group)
                .channel(LocalServerChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ByteBuf b = (ByteBuf) msg;
                        while (b.readableBytes() >= 8) {
                            int writer = b.readInt();
                            int seq = b.readInt();
                            seenByWriter.get(writer).add(seq);
                            if (received.incrementAndGet() == threads * perThread) {
                                all.countDown();
                            }
                        }
                        b.release();
                    }
                });
        io.netty.channel.Channel serverChannel = server.bind(address).sync().channel();
        Recorder recorder = new Recorder();
        Holder holder = new Holder();
        io.netty.channel.Channel client = new Bootstrap()
                .group(group)
                .channel(LocalChannel.class)
                .handler(new io.netty.channel.ChannelInitializer<LocalChannel>() {
                    @Override
                    protected void initChannel(LocalChannel c) {
                        c.pipeline().addLast(recorder, holder);
                    }
                })
                .connect(address)
                .sync()
                .channel();
        try {
            OutboundPath path = holder.path;
            CyclicBarrier start = new CyclicBarrier(threads);
            List<CompletableFuture<Void>> writers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int writer = t;
                writers.add(CompletableFuture.runAsync(
                        () -> {
                            try {
                                start.await();
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                            for (int i = 0; i < perThread; i++) {
                                // 8 bytes written as one item: must arrive whole and in this thread's order
                                path.write(Unpooled.buffer(8).writeInt(writer).writeInt(i));
                            }
                        },
                        java.util.concurrent.Executors.newSingleThreadExecutor()));
            }
            for (CompletableFuture<Void> w : writers) {
                w.get(30, TimeUnit.SECONDS);
            }
            assertTrue(all.await(30, TimeUnit.SECONDS), "all writes arrived: " + received.get());
            for (int t = 0; t < threads; t++) {
                List<Integer> seen = seenByWriter.get(t);
                assertEquals(perThread, seen.size());
                for (int i = 0; i < perThread; i++) {
                    assertEquals(i, seen.get(i), "writer " + t + " order");
                }
            }
            int flushes = client.eventLoop().submit(() -> recorder.flushes).get();
            assertTrue(flushes < threads * perThread, "flushes coalesced: " + flushes);
        } finally {
            client.close().sync();
            serverChannel.close().sync();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void whenTheEventLoopIsGoneQueuedWorkIsDiscardedNotLeaked() throws Exception {
        DefaultEventLoopGroup group = new DefaultEventLoopGroup(1);
        LocalPair pair = LocalPair.open(group, "outbound-path-gone");
        Holder holder = pair.holder();
        pair.server().close().sync();
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        ByteBuf buf = Unpooled.directBuffer(4).writeInt(1);
        holder.path.write(buf);
        assertEquals(0, buf.refCnt(), "released, not stranded in the queue");
        List<Throwable> discarded = new ArrayList<>();
        holder.path.execute(new OutboundPath.DiscardableTask() {
            @Override
            public void run() {
                throw new AssertionError("must not run");
            }

            @Override
            public void discard(Throwable cause) {
                discarded.add(cause);
            }
        });
        assertEquals(1, discarded.size());
    }

    /**
     * A caller's message the socket took in part is handed to the loop; a loop that refuses the drain (shut down)
     * must not strand the rest: it is released and its listener told.
     */
    @Test
    void aCallersRestHandedToALoopThatRefusesIsReleasedAndItsListenerTold() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        // the path's executor (ctx.executor()) is a group of its own, so it can be shut down under an open socket
        io.netty.util.concurrent.DefaultEventExecutorGroup pathLoop =
                new io.netty.util.concurrent.DefaultEventExecutorGroup(1);
        java.net.ServerSocket server = new java.net.ServerSocket();
        server.setReceiveBufferSize(4096);
        server.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0));
        Holder holder = new Holder();
        io.netty.channel.Channel ch = new Bootstrap()
                .group(group)
                .channel(DirectNioSocketChannel.class)
                .option(io.netty.channel.ChannelOption.SO_SNDBUF, 4096)
                .handler(new io.netty.channel.ChannelInitializer<io.netty.channel.Channel>() {
                    @Override
                    protected void initChannel(io.netty.channel.Channel c) {
                        c.pipeline().addLast(pathLoop, holder);
                    }
                })
                .connect(server.getLocalSocketAddress())
                .sync()
                .channel();
        java.net.Socket accepted = server.accept(); // never reads: the socket fills up
        ByteBuf body = Unpooled.directBuffer(4 << 20).writeZero(4 << 20);
        try {
            for (int i = 0; i < 1000 && holder.path == null; i++) {
                Thread.sleep(1); // handlerAdded runs on the path's executor
            }
            OutboundPath path = holder.path;
            path.callerWriteGap(0);
            pathLoop.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            assertTrue(path.tryTakeForCaller(), "idle, writable, open: the caller takes the token");
            ByteBuf head = path.callerHead().writeBytes(new byte[] {1, 0, 1, 0, 0, 0, 4});
            assertEquals(false, path.writeDirect(head, body), "4 MiB into a socket nobody reads: taken in part");
            List<Throwable> told = new ArrayList<>();
            path.handOver(told::add);
            assertEquals(1, told.size(), "the listener hears the refusal");
            assertEquals(0, body.refCnt(), "the rest is released, not stranded");
        } finally {
            if (body.refCnt() > 0) {
                body.release(body.refCnt());
            }
            ch.close().sync();
            accepted.close();
            server.close();
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void aWriteToAClosedChannelReleasesTheBufferAndTellsTheListener() {
        Holder holder = new Holder();
        EmbeddedChannel ch = new EmbeddedChannel(holder);
        ch.close();
        ByteBuf buf = Unpooled.directBuffer(4).writeInt(1);
        List<Throwable> causes = new ArrayList<>();
        holder.path.write(buf, causes::add);
        ch.runPendingTasks();
        assertEquals(0, buf.refCnt());
        assertEquals(1, causes.size());
        assertTrue(causes.get(0) != null);
        ch.finishAndReleaseAll();
    }

    /**
     * Writers that never let the queue empty must not starve the event loop's reads. The client's pipeline holds
     * each write until the writer has queued the next item, so the drain never finds the queue empty while the
     * writer runs; the peer answers the first bytes it gets with one byte. Unbounded, the drain would write every
     * item (and flush only at the end) before the loop reads that byte; bounded, the loop reads it between passes.
     */
    @Test
    void writersThatKeepTheQueueFullDoNotStarveTheLoopsReads() throws Exception {
        // well above one drain slice (OutboundPath.MAX_ITEMS_PER_DRAIN), small enough to fail fast unbounded
        int cap = 40 * OutboundPath.MAX_ITEMS_PER_DRAIN;
        AtomicLong offered = new AtomicLong();
        AtomicLong written = new AtomicLong();
        AtomicLong writtenWhenRead = new AtomicLong(-1);
        CountDownLatch read = new CountDownLatch(1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        // the peer on its own loop: it answers while the client's loop drains
        MultiThreadIoEventLoopGroup peerGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            io.netty.channel.Channel server = new ServerBootstrap()
                    .group(peerGroup)
                    .channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInboundHandlerAdapter() {
                        boolean answered;

                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ((ByteBuf) msg).release();
                            if (!answered) {
                                answered = true;
                                ctx.writeAndFlush(Unpooled.buffer(1).writeByte(1));
                            }
                        }
                    })
                    .bind("127.0.0.1", 0)
                    .sync()
                    .channel();
            Holder holder = new Holder();
            ChannelOutboundHandlerAdapter holdUntilNextOffered = new ChannelOutboundHandlerAdapter() {
                @Override
                public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                    long w = written.incrementAndGet();
                    while (read.getCount() > 0 && offered.get() <= w && w < cap && System.nanoTime() < deadline) {
                        Thread.onSpinWait();
                    }
                    ctx.write(msg, promise);
                }
            };
            io.netty.channel.Channel client = new Bootstrap()
                    .group(group)
                    .channel(NioSocketChannel.class)
                    .handler(new io.netty.channel.ChannelInitializer<NioSocketChannel>() {
                        @Override
                        protected void initChannel(NioSocketChannel c) {
                            c.pipeline().addLast(holdUntilNextOffered, holder, new ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                    ((ByteBuf) msg).release();
                                    writtenWhenRead.compareAndSet(-1, written.get());
                                    read.countDown();
                                }
                            });
                        }
                    })
                    .connect(server.localAddress())
                    .sync()
                    .channel();
            OutboundPath path = holder.path;
            CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
                for (int i = 0; i < cap && read.getCount() > 0; i++) {
                    path.write(Unpooled.buffer(8).writeLong(i));
                    offered.incrementAndGet();
                }
            });
            writer.get(60, TimeUnit.SECONDS);
            assertTrue(read.await(30, TimeUnit.SECONDS), "the peer's byte was read at all");
            assertTrue(
                    writtenWhenRead.get() < cap,
                    "read while the writer kept the queue full, after " + writtenWhenRead.get() + " of " + cap
                            + " writes");
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            peerGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    // ---- single-frame publishes: the end octet rides the next head ----------------------------------------

    /**
     * An outbound path on an embedded channel whose transport records every write; the frames a test writes come
     * from {@link #alloc}, which counts what is not released.
     */
    private record Wire(
            Recorder transport, EmbeddedChannel channel, OutboundPath path, UnpooledByteBufAllocator alloc) {
        /** {@code after}: handlers behind the path's own, which see its inbound events. */
        static Wire open(io.netty.channel.ChannelHandler... after) {
            Recorder transport = new Recorder();
            Holder holder = new Holder();
            EmbeddedChannel channel = new EmbeddedChannel(transport, holder);
            channel.pipeline().addLast(after);
            return new Wire(transport, channel, holder.path, new UnpooledByteBufAllocator(false));
        }

        /** A head as PublishFrames makes it: one free byte before the reader index, then {@code marker}. */
        ByteBuf head(int marker) {
            return alloc.heapBuffer(8).writerIndex(1).readerIndex(1).writeInt(marker);
        }

        ByteBuf frames(int... values) {
            return alloc.heapBuffer(values.length).writeBytes(bytes(values));
        }

        /** The end octets the path took and gave back to the connection's kept buffers. */
        int keptEndOctets() {
            return path.publishBuffers().keptEndOctets();
        }

        /** Releases what the channel holds; then every buffer the test wrote must have been released exactly once. */
        void close() {
            channel.finishAndReleaseAll();
            assertEquals(0, alloc.metric().usedHeapMemory(), "a buffer written through the path was not released");
        }
    }

    private static byte[] bytes(int... values) {
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            b[i] = (byte) values[i];
        }
        return b;
    }

    @Test
    void aRunOfPublishesCostsTwoWritesEachWithTheEndOctetInTheNextHead() {
        Wire wire = Wire.open();
        OutboundPath path = wire.path();
        List<Throwable> written = new ArrayList<>();
        path.beginReadBatch();
        for (int i = 0; i < 3; i++) {
            path.writeContent(wire.head(0x0A0B0C00 + i), wire.frames(0x50 + i), written::add);
        }
        assertEquals(
                6, wire.transport().writes.size(), "head and body per message; each end octet went into the next head");
        assertTrue(written.isEmpty(), "nothing flushed yet");

        path.endReadBatch();
        assertEquals(7, wire.transport().writes.size(), "the flush writes the last end octet first");
        assertEquals(1, wire.transport().flushes);
        org.junit.jupiter.api.Assertions.assertArrayEquals(
                bytes(
                        0x0A, 0x0B, 0x0C, 0x00, 0x50, 0xCE, 0x0A, 0x0B, 0x0C, 0x01, 0x51, 0xCE, 0x0A, 0x0B, 0x0C, 0x02,
                        0x52, 0xCE),
                wire.transport().stream());
        assertEquals(3, written.size(), "each message is reported once, when its end octet is written");
        written.forEach(org.junit.jupiter.api.Assertions::assertNull);
        wire.close();
        // three end octets written alone would have been alive together until the channel released them
        assertEquals(1, wire.keptEndOctets(), "one end-octet buffer taken (the last), and given back once written");
    }

    @Test
    void anyOtherWriteGoesAfterThePendingEndOctet() {
        Wire wire = Wire.open();
        OutboundPath path = wire.path();
        path.beginReadBatch();
        path.writeContent(wire.head(0x01020304), wire.frames(0x77), null);
        path.write(wire.frames(0x08, 0x00, 0x00));
        path.endReadBatch();
        org.junit.jupiter.api.Assertions.assertArrayEquals(
                bytes(0x01, 0x02, 0x03, 0x04, 0x77, 0xCE, 0x08, 0x00, 0x00), wire.transport().stream());
        assertEquals(
                4, wire.transport().writes.size(), "an end octet before a frame that is not a head is written alone");

        // a head without the free byte cannot carry it either
        wire.transport().writes.clear();
        path.beginReadBatch();
        path.writeContent(wire.head(0x01020304), wire.frames(0x77), null);
        path.writeContent(wire.frames(0x05), wire.frames(0x78), null);
        path.endReadBatch();
        org.junit.jupiter.api.Assertions.assertArrayEquals(
                bytes(0x01, 0x02, 0x03, 0x04, 0x77, 0xCE, 0x05, 0x78, 0xCE), wire.transport().stream());
        wire.close();
    }

    /**
     * A publisher told synchronously that the socket turned unwritable, publishing at once (as one releasing held
     * publishes does), the first time only.
     */
    private static final class PublishOnce extends ChannelInboundHandlerAdapter {
        private final java.util.function.Consumer<Wire> publish;
        Wire wire;
        boolean published;

        PublishOnce(java.util.function.Consumer<Wire> publish) {
            this.publish = publish;
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (!published) {
                published = true;
                publish.accept(wire);
            }
            ctx.fireChannelWritabilityChanged();
        }
    }

    /**
     * Netty reports writability from inside the write that crosses the mark: here a message's head. A publisher told
     * then (a writability listener, a handler, a failed promise's listener) must not write inside that message's body
     * frame: its message goes after this one's end octet.
     */
    @Test
    void aPublishMadeWhileAMessagesHeadIsWrittenGoesAfterTheMessage() {
        PublishOnce publisher = new PublishOnce(w -> {
            w.path().writeContent(w.head(0x0B0B0B0B), w.frames(0x62), null);
            w.path().write(w.frames(0x08, 0x00));
        });
        Wire wire = Wire.open(publisher);
        publisher.wire = wire;
        OutboundPath path = wire.path();
        // the first head crosses the high-water mark
        wire.channel().config().setWriteBufferWaterMark(new io.netty.channel.WriteBufferWaterMark(1, 2));
        path.beginReadBatch();
        path.writeContent(wire.head(0x0A0A0A0A), wire.frames(0x61), null);
        path.endReadBatch();
        wire.channel().runPendingTasks();
        assertTrue(publisher.published, "the head's write turned the channel unwritable");
        org.junit.jupiter.api.Assertions.assertArrayEquals(
                bytes(0x0A, 0x0A, 0x0A, 0x0A, 0x61, 0xCE, 0x0B, 0x0B, 0x0B, 0x0B, 0x62, 0xCE, 0x08, 0x00),
                wire.transport().stream(),
                () -> io.netty.buffer.ByteBufUtil.hexDump(wire.transport().stream()));
        wire.close();
    }

    @Test
    void aPublishMadeWhileAPendingEndOctetIsWrittenStillGoesBeforeTheNextWrite() {
        PublishOnce publisher = new PublishOnce(w -> w.path().writeContent(w.head(0x0B0B0B0B), w.frames(0x62), null));
        Wire wire = Wire.open(publisher);
        publisher.wire = wire;
        OutboundPath path = wire.path();
        path.beginReadBatch();
        path.writeContent(wire.head(0x0A0A0A0A), wire.frames(0x61), null);
        // the high-water mark just at what is pending: writing the held end octet crosses it
        long pending = wire.channel().unsafe().outboundBuffer().totalPendingWriteBytes();
        wire.channel().config().setWriteBufferWaterMark(new io.netty.channel.WriteBufferWaterMark(1, (int) pending));
        path.write(wire.frames(0x08, 0x00));
        path.endReadBatch();
        assertTrue(publisher.published, "the end octet's write turned the channel unwritable");
        org.junit.jupiter.api.Assertions.assertArrayEquals(
                bytes(0x0A, 0x0A, 0x0A, 0x0A, 0x61, 0xCE, 0x0B, 0x0B, 0x0B, 0x0B, 0x62, 0xCE, 0x08, 0x00),
                wire.transport().stream());
        wire.close();
    }

    @Test
    void aPendingEndOctetOnAClosedConnectionFailsItsMessageAndIsReleased() {
        Wire wire = Wire.open();
        EmbeddedChannel ch = wire.channel();
        OutboundPath path = wire.path();
        List<Throwable> written = new ArrayList<>();
        path.beginReadBatch();
        path.writeContent(wire.head(1), wire.frames(2), written::add);
        // head and body (written with the void promise) fail with the close: EmbeddedChannel reports that as the
        // pipeline's exception, where the connection handler would close the connection
        org.junit.jupiter.api.Assertions.assertThrows(java.nio.channels.ClosedChannelException.class, () -> {
            ch.close();
            ch.checkException();
        });
        assertEquals(0, wire.keptEndOctets());
        path.discardQueued(new IllegalStateException("closed"));
        assertEquals(1, written.size());
        org.junit.jupiter.api.Assertions.assertInstanceOf(
                java.nio.channels.ClosedChannelException.class, written.get(0), "the message was not written whole");
        assertEquals(1, wire.keptEndOctets(), "its end octet, written to the closed channel, was released");
        wire.close();
    }
}
