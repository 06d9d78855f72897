package io.warren.perf;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.warren.codec.FrameDecoder;
import io.warren.codec.ProtocolHeader;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The loopback AMQP peer: a Netty server on 127.0.0.1 that speaks just enough AMQP 0-9-1 for a client
 * to be measured without a broker. It is a benchmark instrument, not a broker: nothing is routed or
 * stored.
 *
 * <ul>
 *   <li>Handshake: connection.start (PLAIN/AMQPLAIN, RabbitMQ's capabilities), tune (channel-max
 *       2047, frame-max 131072, heartbeat 60 s, the client's answer is obeyed, heartbeats are sent),
 *       open; channel.open/close, connection.close; confirm.select; exchange and queue
 *       declare/bind/unbind/purge/delete answered with their -ok (a server-named queue gets an
 *       {@code amq.gen-N} name); basic.qos, basic.consume (an {@code amq.ctag-N} tag when none is
 *       given), basic.cancel; basic.get answers get-empty; tx select/commit/rollback; anything else
 *       closes the channel with 540 NOT_IMPLEMENTED.</li>
 *   <li>{@link Mode#SINK}: every publish (method, header, body frames) is read and counted; a channel in
 *       confirm mode is confirmed with one basic.ack(multiple=true) per channel per socket read, so
 *       confirms are batched as a broker batches them. Consumers get nothing.</li>
 *   <li>{@link Mode#SOURCE}: as SINK for publishes, and every consumer is streamed deliveries as fast
 *       as the socket takes them: a batch of deliveries (basic.deliver, header frame and body frames,
 *       zero bodies of the configured size) is encoded once per consumer; a write patches the delivery
 *       tags into a batch buffer no write holds any more and sends it as one slice, a batch per consumer
 *       in turn. Writing stops while the channel is not writable and, without no-ack, while the prefetch
 *       (basic.qos) is used up; acks (single or multiple) reopen it. A flush every
 *       {@value PeerConnection#FLUSH_BYTES} bytes and at the end of each pass.</li>
 *   <li>{@link Mode#FLOOD}: as SOURCE, but a hostile server: basic.qos is answered and then ignored, so
 *       consumers with manual acknowledgement are streamed as fast as the socket takes deliveries, whatever
 *       their prefetch (what a client must survive without running out of memory).</li>
 * </ul>
 *
 * Frames are decoded with Warren's {@link FrameDecoder} and method views, and written with its
 * encoders. The peer's threads are named {@code warren-peer-*}: the tool leaves their CPU and
 * allocation out of the client's. Run it on its own with
 * {@code java -cp warren-perf.jar io.warren.perf.LoopbackPeer sink|source|flood [port] [body-size] [deliveries]}
 * ({@code deliveries} per consumer, 0 = no end).
 */
public final class LoopbackPeer implements AutoCloseable {

    /**
     * The peer's own pooled allocator, not the clients': its direct memory is told apart from theirs
     * ({@link #directMemory()}) and left out of a run's figure.
     */
    static final PooledByteBufAllocator ALLOC = new PooledByteBufAllocator(true);

    /** What the peer does with a client's traffic. */
    public enum Mode {
        /** Read and confirm publishes; deliver nothing. */
        SINK,
        /** Read and confirm publishes; stream deliveries to every consumer. */
        SOURCE,
        /** As {@link #SOURCE}, ignoring the prefetch (basic.qos) it accepted. */
        FLOOD
    }

    private final Mode mode;
    private final int bodySize;
    private final long deliveriesPerConsumer;
    private final EventLoopGroup group;
    private final Channel server;
    final Counters counters = new Counters();
    /**
     * From a publish's stamp ({@link MessageBody#publishNanos}, written right before the client's publish call) to
     * the peer's event loop handling the publish's first body frame, in ns: the client's whole publish path, the
     * socket and the peer's read. Recorded only while {@link #recordReceiptLatency} is on.
     */
    final Recorder receiptLatency = new Recorder(3);

    volatile boolean recordingReceipt;

    private LoopbackPeer(Mode mode, int bodySize, long deliveriesPerConsumer, int port, int threads)
            throws InterruptedException {
        this.mode = mode;
        this.bodySize = bodySize;
        this.deliveriesPerConsumer = deliveriesPerConsumer;
        this.group = new MultiThreadIoEventLoopGroup(
                threads, new DefaultThreadFactory("warren-peer", true), NioIoHandler.newFactory());
        try {
            this.server = new ServerBootstrap()
                    .group(group)
                    .channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    // Netty 4.2's default adaptive allocator has no recycled slices: FrameDecoder's retainedSlice
                    // would allocate a slice object per frame; the pooled allocator recycles them
                    .childOption(ChannelOption.ALLOCATOR, ALLOC)
                    .childOption(
                            ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 512 * 1024))
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast("protocol-header", new ProtocolHeaderHandler());
                            ch.pipeline().addLast("connection", new PeerConnection(LoopbackPeer.this));
                        }
                    })
                    .bind(new InetSocketAddress("127.0.0.1", port))
                    .sync()
                    .channel();
        } catch (InterruptedException | RuntimeException e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    /**
     * Starts a peer on an ephemeral port of 127.0.0.1.
     *
     * @param bodySize the body size of SOURCE deliveries
     * @param deliveriesPerConsumer deliveries each consumer gets in SOURCE mode; 0 = no end
     */
    public static LoopbackPeer start(Mode mode, int bodySize, long deliveriesPerConsumer) throws InterruptedException {
        return new LoopbackPeer(
                mode,
                bodySize,
                deliveriesPerConsumer,
                0,
                Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2)));
    }

    public Mode mode() {
        return mode;
    }

    int bodySize() {
        return bodySize;
    }

    long deliveriesPerConsumer() {
        return deliveriesPerConsumer;
    }

    /** The port the peer listens on. */
    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** {@code amqp://guest:guest@127.0.0.1:PORT}: any credentials are accepted. */
    public String uri() {
        return "amqp://guest:guest@127.0.0.1:" + port();
    }

    /**
     * Turns the receipt latency on or off. Off by default: a paced run turns it on (unpaced, publishes wait in the
     * socket buffers and the figure measures that queue; and the clock read per publish costs the peer throughput).
     */
    public void recordReceiptLatency(boolean on) {
        recordingReceipt = on;
    }

    /** The receipt latencies (ns) recorded since the last call, in {@code recycle} (may be null) or a new histogram. */
    public Histogram intervalReceiptLatency(Histogram recycle) {
        return receiptLatency.getIntervalHistogram(recycle);
    }

    /** Direct memory the peer's allocator holds now (every peer's: they share it). Any thread. */
    public static long directMemory() {
        return ALLOC.metric().usedDirectMemory();
    }

    /** What the peer counted since it started (publishes read, publishes confirmed, deliveries written). */
    public RunResult.PeerStats stats() {
        return new RunResult.PeerStats(counters.publishes.sum(), counters.confirms.sum(), counters.deliveries.sum());
    }

    /**
     * Publishes read whole (through their last body frame) since the peer started, without allocating: a caller
     * waiting for one message's receipt polls it. A socket read's publishes are counted once its frames are
     * handled, so their receipt latencies are recorded by then.
     */
    public long publishesRead() {
        return counters.publishes.sum();
    }

    /** Heartbeat frames written to the clients since the peer started (a test waits for them, not the clock). */
    public long heartbeatsSent() {
        return counters.heartbeats.sum();
    }

    /** Number of client connections open now. */
    public long connections() {
        return counters.connections.sum();
    }

    /** Closes the server and every connection, and waits for the threads to end. */
    @Override
    public void close() {
        server.close().awaitUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
    }

    /**
     * The peer on its own: {@code sink|source|flood [port] [body-size] [deliveries]}; prints its rates every second.
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 1 || !List.of("sink", "source", "flood").contains(args[0])) {
            System.err.println("usage: LoopbackPeer sink|source|flood [port] [body-size] [deliveries-per-consumer]");
            System.exit(2);
        }
        Mode mode = Mode.valueOf(args[0].toUpperCase(Locale.ROOT));
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 5673;
        int size = args.length > 2 ? Integer.parseInt(args[2]) : MessageBody.MIN_SIZE;
        long deliveries = args.length > 3 ? Long.parseLong(args[3]) : 0;
        try (LoopbackPeer peer = new LoopbackPeer(
                mode,
                size,
                deliveries,
                port,
                Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2)))) {
            System.out.println("loopback peer (" + args[0] + ") listening on " + peer.uri());
            RunResult.PeerStats last = peer.stats();
            while (true) {
                Thread.sleep(1000);
                RunResult.PeerStats now = peer.stats();
                System.out.printf(
                        Locale.ROOT,
                        "%d connection(s) | read %,d publishes/s | confirmed %,d/s | wrote %,d deliveries/s%n",
                        peer.connections(),
                        now.publishes() - last.publishes(),
                        now.confirms() - last.confirms(),
                        now.deliveries() - last.deliveries());
                last = now;
            }
        }
    }

    /** Counters the connections add to in batches (once per socket read or pump pass). */
    static final class Counters {
        final LongAdder publishes = new LongAdder();
        final LongAdder confirms = new LongAdder();
        final LongAdder deliveries = new LongAdder();
        final LongAdder connections = new LongAdder();
        final LongAdder heartbeats = new LongAdder();
    }

    /**
     * Reads the client's 8-byte protocol header, then hands the stream to a {@link FrameDecoder} (which
     * takes the bytes that came after the header) and tells the connection to start. A client asking for
     * another protocol gets our header back and the socket is closed, as the spec says.
     */
    static final class ProtocolHeaderHandler extends ByteToMessageDecoder {
        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
            if (in.readableBytes() < ProtocolHeader.LENGTH) {
                return;
            }
            ByteBuf expected = ProtocolHeader.encode(ctx.alloc());
            try {
                boolean ok = in.readSlice(ProtocolHeader.LENGTH).equals(expected);
                if (!ok) {
                    in.skipBytes(in.readableBytes());
                    ctx.writeAndFlush(expected.retain()).addListener(f -> ctx.close());
                    return;
                }
            } finally {
                expected.release();
            }
            FrameDecoder frames = new FrameDecoder();
            ctx.pipeline().addAfter(ctx.name(), "frames", frames);
            ctx.pipeline().get(PeerConnection.class).start(frames);
            ctx.pipeline().remove(this); // what followed the header goes on to the frame decoder
        }
    }
}
