package io.warren.perf;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.warren.Address;
import io.warren.ConnectionOptions;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.Frames;
import io.warren.codec.ProtocolHeader;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicAck;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicCancelEncoder;
import io.warren.codec.method.BasicConsumeEncoder;
import io.warren.codec.method.BasicDeliver;
import io.warren.codec.method.BasicPublishEncoder;
import io.warren.codec.method.BasicQosEncoder;
import io.warren.codec.method.ChannelClose;
import io.warren.codec.method.ChannelOpenEncoder;
import io.warren.codec.method.ConfirmSelectEncoder;
import io.warren.codec.method.ConnectionClose;
import io.warren.codec.method.ConnectionOpenEncoder;
import io.warren.codec.method.ConnectionStartOkEncoder;
import io.warren.codec.method.ConnectionTune;
import io.warren.codec.method.ConnectionTuneOkEncoder;
import io.warren.codec.method.ExchangeDeclareEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.QueueBindEncoder;
import io.warren.codec.method.QueueDeclareEncoder;
import io.warren.codec.method.QueueDeclareOk;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Not a client: the reference point a client is measured against. Each producer writes pre-encoded
 * publishes (one buffer holding a batch of basic.publish + header + body frames, encoded once, written
 * as {@code retainedDuplicate()}s while the socket takes them) and each consumer counts basic.deliver
 * frames and acknowledges once per socket read with multiple=true. It shows what the other side (the
 * loopback peer, or a broker) can take and give when the client costs next to nothing: if a client's
 * figures come near these, the other side is the limit, not the client.
 *
 * <p>What it leaves out: publish timestamps (no latency is measured: one body serves every publish),
 * rate limiting, mandatory returns. The confirm window is kept per batch: a batch is written when the
 * publishes outstanding after it stay within {@code --confirm}. Everything runs on its own event loops
 * ({@code warren-perf-raw-*} threads, counted as client CPU).
 */
public final class RawDriver implements ClientDriver {

    private static final long RPC_TIMEOUT_SECONDS = 10;
    /** Publishes per pre-encoded batch, fewer for big bodies (about 64 KiB a batch). */
    private static final int MAX_BATCH = 256;
    /** Batches one pass writes before it lets the event loop read. */
    private static final int BATCHES_PER_PASS = 64;

    private final List<Connection> connections = new ArrayList<>();
    private RunOptions options;
    private Metrics metrics;
    private EventLoopGroup group;

    @Override
    public String name() {
        return "raw";
    }

    @Override
    public String transport() {
        return "nio"; // NioSocketChannel whatever --transport says
    }

    @Override
    public void connect(RunOptions options, Metrics metrics) throws Exception {
        this.options = options;
        this.metrics = metrics;
        if (options.rate() > 0 || options.mandatory()) {
            throw new IllegalArgumentException("the raw reference client does not pace or take returns: "
                    + "leave out --rate and --flag mandatory");
        }
        List<ConnectionOptions> uris = new ArrayList<>();
        for (String text : options.uris()) {
            // Warren's parser: the same user, password and virtual host as the Warren driver sends, decoded once;
            // its errors name no password
            uris.add(ConnectionOptions.fromUri(text));
        }
        group = new MultiThreadIoEventLoopGroup(
                Math.max(1, Runtime.getRuntime().availableProcessors() / 2),
                new DefaultThreadFactory("warren-perf-raw", true),
                NioIoHandler.newFactory());
        for (int i = 0; i < options.producers() + options.consumers(); i++) {
            ConnectionOptions uri = uris.get(i % uris.size()); // spread over --uris as the others are; no failover here
            Address address = uri.addresses().get(0);
            Connection c = new Connection(i < options.producers());
            io.netty.channel.ChannelFuture connected = new Bootstrap()
                    .group(group)
                    .channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5_000)
                    .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 512 * 1024))
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast("frames", c.frames).addLast("raw", c);
                        }
                    })
                    .connect(address.host(), address.port())
                    .sync();
            c.channel = connected.channel();
            connections.add(c);
            c.open(uri).get(RPC_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    /** The PLAIN response (RFC 4616: NUL, user, NUL, password) for {@code uri}'s user, as the Warren driver logs in. */
    static String plainResponse(ConnectionOptions uri) {
        return "\0" + uri.username() + "\0" + uri.password();
    }

    @Override
    public long declare() throws Exception {
        Connection any = connections.get(0);
        if (options.declaresExchange()) {
            any.rpc(new ExchangeDeclareEncoder().exchange(options.exchange()).type(options.exchangeType()));
        }
        long queued = 0;
        if (!options.serverNamedQueues()) {
            queued = any.rpc(new QueueDeclareEncoder()
                            .queue(options.queue())
                            .durable(true)
                            .autoDelete(options.autoDelete())
                            .arguments(options.queueArgs()))
                    .messageCount();
            if (!options.exchange().isEmpty()) {
                any.rpc(new QueueBindEncoder()
                        .queue(options.queue())
                        .exchange(options.exchange())
                        .routingKey(options.routingKey()));
            }
        }
        for (Connection c : connections) {
            if (c.producer) {
                if (options.confirms()) {
                    c.rpc(new ConfirmSelectEncoder());
                }
                c.preparePublishes(options.routingKeyFor(options.queue()));
            } else {
                if (options.serverNamedQueues()) {
                    c.queue = c.rpc(new QueueDeclareEncoder().exclusive(true).autoDelete(true)).queueName;
                    if (!options.exchange().isEmpty()) {
                        c.rpc(new QueueBindEncoder()
                                .queue(c.queue)
                                .exchange(options.exchange())
                                .routingKey(options.routingKey()));
                    }
                } else {
                    c.queue = options.queue();
                }
                if (options.qos() > 0) {
                    c.rpc(new BasicQosEncoder().prefetchCount(options.qos()));
                }
            }
        }
        return queued;
    }

    @Override
    public void startConsumers() throws Exception {
        for (Connection c : connections) {
            if (!c.producer) {
                c.rpc(new BasicConsumeEncoder()
                        .queue(c.queue)
                        .consumerTag("raw")
                        .noAck(options.autoAck()));
            }
        }
    }

    @Override
    public void startProducers() {
        for (Connection c : connections) {
            if (c.producer) {
                c.channel.eventLoop().execute(c::pumpPublishes);
            }
        }
    }

    @Override
    public void stop() {
        for (Connection c : connections) {
            c.channel.eventLoop().execute(() -> c.running = false);
        }
    }

    @Override
    public void close() {
        for (Connection c : connections) {
            c.release();
            c.channel.close();
        }
        connections.clear();
        if (group != null) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
            group = null;
        }
    }

    /** One connection with one channel (number 1): a producer or a consumer. Event loop only, but for the RPC futures. */
    private final class Connection extends ChannelInboundHandlerAdapter {
        final boolean producer;
        final FrameDecoder frames = new FrameDecoder();
        final BasicAck ack = new BasicAck();
        final BasicDeliver deliver = new BasicDeliver();
        Channel channel;
        String queue;
        int frameMax;
        volatile boolean running = true;
        // the one RPC in flight and what it waits for
        CompletableFuture<Reply> pending;
        int awaited;
        // publishing: the pre-encoded batch and the window
        ByteBuf batch;
        int batchCount;
        int publishLength;
        long published;
        long confirmed;
        boolean producerDone;
        boolean pumpScheduled;
        // consuming
        long lastDeliveryTag;
        long ackedTag;
        long received;
        boolean consumerDone;

        Connection(boolean producer) {
            this.producer = producer;
        }

        CompletableFuture<Reply> open(ConnectionOptions uri) {
            CompletableFuture<Reply> opened = expect(MethodIds.CHANNEL_OPEN_OK);
            this.vhost = uri.virtualHost();
            this.credentials = plainResponse(uri);
            channel.writeAndFlush(ProtocolHeader.encode(channel.alloc()));
            return opened;
        }

        private String vhost;
        private String credentials;

        /** Sends {@code method} on channel 1 and waits for its -ok (the method id + 1 of the same class). */
        Reply rpc(MethodEncoder method) throws Exception {
            int key = MethodIds.key(method.info().classId(), method.info().methodId() + 1);
            CompletableFuture<Reply> reply = expect(key);
            channel.writeAndFlush(Frames.method(channel.alloc(), 1, method));
            return reply.get(RPC_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }

        private synchronized CompletableFuture<Reply> expect(int key) {
            pending = new CompletableFuture<>();
            awaited = key;
            return pending;
        }

        private synchronized void complete(int key, Reply reply) {
            if (pending != null && key == awaited) {
                pending.complete(reply);
                pending = null;
            }
        }

        private synchronized void fail(Throwable cause) {
            if (pending != null) {
                pending.completeExceptionally(cause);
                pending = null;
            }
            if (running) {
                metrics.fail(cause);
            }
        }

        void preparePublishes(String routingKey) {
            int size = options.size();
            batchCount = Math.max(1, Math.min(MAX_BATCH, 65536 / Math.max(1, size)));
            BasicPublishEncoder publish =
                    new BasicPublishEncoder().exchange(options.exchange()).routingKey(routingKey);
            BasicProperties props = options.persistent()
                    ? BasicProperties.builder().persistent(true).build()
                    : BasicProperties.EMPTY;
            int maxBody = frameMax == 0 ? Math.max(1, size) : frameMax - Frames.FRAME_OVERHEAD;
            ByteBuf b = channel.alloc().directBuffer();
            for (int i = 0; i < batchCount; i++) {
                int start = b.writerIndex();
                Frames.writeMethod(b, 1, publish);
                Frames.writeContentHeader(b, 1, size, props);
                for (int left = size; left > 0; ) {
                    int n = Math.min(maxBody, left);
                    Frames.writeHeader(b, FrameType.BODY, 1, n);
                    b.writeZero(n);
                    b.writeByte(Frames.FRAME_END);
                    left -= n;
                }
                publishLength = b.writerIndex() - start;
            }
            batch = b;
        }

        /** Writes batches while the socket, the confirm window and the count allow; event loop. */
        void pumpPublishes() {
            pumpScheduled = false;
            long limit = options.producerMessages();
            for (int pass = 0; running && channel.isWritable() && pass < BATCHES_PER_PASS; pass++) {
                long n = batchCount;
                if (limit > 0) {
                    n = Math.min(n, limit - published);
                }
                if (options.confirms()) {
                    n = Math.min(n, options.confirm() - (published - confirmed));
                }
                if (n <= 0) {
                    break;
                }
                ByteBuf out =
                        n == batchCount ? batch.retainedDuplicate() : batch.retainedSlice(0, (int) n * publishLength);
                channel.writeAndFlush(out, channel.voidPromise());
                published += n;
                metrics.published((int) n);
            }
            checkProducerDone();
            if (running && channel.isWritable() && !producerDone && mayPublish() && !pumpScheduled) {
                pumpScheduled = true;
                channel.eventLoop().schedule(this::pumpPublishes, 1, TimeUnit.MICROSECONDS); // after the reads
            }
        }

        private boolean mayPublish() {
            long limit = options.producerMessages();
            return (limit == 0 || published < limit)
                    && (!options.confirms() || published - confirmed < options.confirm());
        }

        private void checkProducerDone() {
            long limit = options.producerMessages();
            if (!producerDone && limit > 0 && published >= limit && (!options.confirms() || confirmed >= published)) {
                producerDone = true;
                metrics.producerDone();
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (producer && ctx.channel().isWritable() && batch != null) {
                ctx.channel().eventLoop().execute(this::pumpPublishes);
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Frame frame = (Frame) msg;
            try {
                if (frame.type() == FrameType.METHOD) {
                    method(frame.channel(), frame.payload());
                }
            } finally {
                frame.release();
            }
        }

        private void method(int ch, ByteBuf p) {
            int at = p.readerIndex();
            int key = p.getInt(at);
            switch (key) {
                case MethodIds.BASIC_DELIVER -> {
                    if (!consumerDone) {
                        received++;
                        lastDeliveryTag = deliver.wrap(p, at).deliveryTag();
                        metrics.received(MessageBody.NO_STAMP);
                        long limit = options.consumerMessages();
                        if (limit > 0 && received >= limit) {
                            consumerDone = true;
                            metrics.consumerDone();
                            channel.write(Frames.method(
                                    channel.alloc(),
                                    1,
                                    new BasicCancelEncoder().consumerTag("raw").nowait(true)));
                        }
                    }
                }
                case MethodIds.BASIC_ACK -> {
                    long before = confirmed;
                    ack.wrap(p, at);
                    confirmed = ack.multiple() ? Math.max(confirmed, ack.deliveryTag()) : confirmed + 1;
                    metrics.confirmed((int) (confirmed - before));
                    checkProducerDone();
                    if (running && !producerDone) {
                        pumpPublishes();
                    }
                }
                case MethodIds.CONNECTION_START ->
                    channel.writeAndFlush(Frames.method(
                            channel.alloc(),
                            0,
                            new ConnectionStartOkEncoder()
                                    .clientProperties(Map.of("product", "warren-perf raw"))
                                    .mechanism("PLAIN")
                                    .response(credentials)
                                    .locale("en_US")));
                case MethodIds.CONNECTION_TUNE -> {
                    ConnectionTune tune = new ConnectionTune().wrap(p, at);
                    frameMax = (int) Math.min(Integer.MAX_VALUE, tune.frameMax());
                    frames.setFrameMax(frameMax);
                    channel.write(Frames.method(
                            channel.alloc(),
                            0,
                            new ConnectionTuneOkEncoder()
                                    .channelMax(tune.channelMax())
                                    .frameMax(tune.frameMax())
                                    .heartbeat(0)));
                    channel.writeAndFlush(
                            Frames.method(channel.alloc(), 0, new ConnectionOpenEncoder().virtualHost(vhost)));
                }
                case MethodIds.CONNECTION_OPEN_OK ->
                    channel.writeAndFlush(Frames.method(channel.alloc(), 1, new ChannelOpenEncoder()));
                case MethodIds.QUEUE_DECLARE_OK -> {
                    QueueDeclareOk ok = new QueueDeclareOk().wrap(p, at);
                    complete(key, new Reply(ok.queueAsString(), ok.messageCount()));
                }
                case MethodIds.CONNECTION_CLOSE ->
                    fail(new IllegalStateException(
                            "connection closed by the server: " + new ConnectionClose().wrap(p, at)));
                case MethodIds.CHANNEL_CLOSE ->
                    fail(new IllegalStateException("channel closed by the server: " + new ChannelClose().wrap(p, at)));
                default -> complete(key, new Reply(null, 0));
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (!producer && !options.autoAck() && lastDeliveryTag > ackedTag) {
                ctx.write(Frames.method(
                        ctx.alloc(),
                        1,
                        new BasicAckEncoder().deliveryTag(lastDeliveryTag).multiple(true)));
                ackedTag = lastDeliveryTag;
            }
            ctx.flush();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            fail(new IllegalStateException("connection lost"));
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            fail(cause);
            ctx.close();
        }

        void release() {
            running = false;
            channel.eventLoop().execute(() -> {
                if (batch != null) {
                    batch.release();
                    batch = null;
                }
            });
        }
    }

    /** What an RPC's reply carried that the driver needs. */
    /** An -ok: queue.declare-ok's queue name and message count, else null and 0. */
    private record Reply(String queueName, long messageCount) {}
}
