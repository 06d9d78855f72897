package io.warren.it.fault;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy between the client under test and the broker, on loopback, in the test's JVM, that injects
 * the network's faults on command:
 * <ul>
 *   <li>{@link #cutAll()}: every proxied connection is closed at once on both sides (a reset where the OS
 *       allows it): what a pulled cable or a crashed broker looks like to the client;</li>
 *   <li>{@link #refuseNew(boolean)}: new connections are accepted and closed at once (the broker is
 *       unreachable), so a recovering client keeps failing until it is switched off;</li>
 *   <li>{@link #stall(boolean)}: a black hole. Nothing is forwarded in either direction and the sockets stay
 *       open; reading is stopped, so the bytes pile up in the kernel's buffers exactly as with a silent peer.
 *       Unstalling forwards what was held, in order;</li>
 *   <li>{@link #partition()}: a partition only the client notices. Every current connection stops forwarding and
 *       its client side is reset, while its broker side stays open and silent, as the broker sees a peer that went
 *       quiet: the broker keeps the connection (and what it owns, such as exclusive queues) until its heartbeat
 *       check gives up on it. New connections are forwarded;</li>
 *   <li>{@link #delay(Duration)}: every chunk is forwarded after the given delay, in order.</li>
 * </ul>
 * Thread-safe: the switches may be flipped from the test's thread while traffic flows.
 */
public final class FaultProxy implements AutoCloseable {

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final String targetHost;
    private final int targetPort;
    private final Channel server;
    private final Set<Pair> pairs = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong cuts = new AtomicLong();

    // any thread (volatile): the fault switches
    private volatile boolean refuseNew;
    private volatile boolean stalled;
    private volatile long delayNanos;
    /** The longest delay ever set: close() waits it out so that no delayed chunk is dropped unreleased. */
    private volatile long maxDelayNanos;

    public FaultProxy(String targetHost, int targetPort) throws InterruptedException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.server = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                // the client side reads only once the broker side is connected
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        accepted.incrementAndGet();
                        if (refuseNew) {
                            ch.config().setOption(ChannelOption.SO_LINGER, 0);
                            ch.close();
                            return;
                        }
                        ch.pipeline().addLast(new Pair(ch).front);
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
    }

    /** The port the client connects to (on 127.0.0.1). */
    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    public String host() {
        return "127.0.0.1";
    }

    /** Connections accepted so far (refused ones included). */
    public long accepted() {
        return accepted.get();
    }

    /** How many times {@link #cutAll()} closed at least one connection. */
    public long cuts() {
        return cuts.get();
    }

    /** Connections being proxied now. */
    public int activeConnections() {
        return pairs.size();
    }

    /** Closes every proxied connection on both sides; returns how many there were. */
    public int cutAll() {
        List<Pair> now = List.copyOf(pairs);
        for (Pair p : now) {
            p.cut();
        }
        if (!now.isEmpty()) {
            cuts.incrementAndGet();
        }
        return now.size();
    }

    /** Partitions every current connection (see the class comment); returns how many there were. */
    public int partition() {
        List<Pair> now = List.copyOf(pairs);
        for (Pair p : now) {
            p.partition();
        }
        return now.size();
    }

    /** While on, new connections are closed as soon as they are accepted. */
    public FaultProxy refuseNew(boolean on) {
        refuseNew = on;
        return this;
    }

    /** Black-holes every connection (current and new) while on; see the class comment. */
    public FaultProxy stall(boolean on) {
        stalled = on;
        for (Pair p : List.copyOf(pairs)) {
            p.setReading(!on);
        }
        return this;
    }

    /** Forwards every chunk after {@code delay} (zero for none). */
    public FaultProxy delay(Duration delay) {
        delayNanos = delay.toNanos();
        maxDelayNanos = Math.max(maxDelayNanos, delayNanos);
        return this;
    }

    /** Clears every fault: no refusal, no stall, no delay. */
    public FaultProxy heal() {
        refuseNew(false);
        delay(Duration.ZERO);
        stall(false);
        return this;
    }

    @Override
    public void close() throws InterruptedException {
        server.close().sync();
        cutAll();
        if (maxDelayNanos > 0) {
            // delayed chunks are scheduled tasks: let them run (and release) before the loop goes away
            TimeUnit.NANOSECONDS.sleep(maxDelayNanos + TimeUnit.MILLISECONDS.toNanos(100));
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    /** One client connection and its broker connection, on one event loop. */
    private final class Pair {
        private final Channel client;
        private volatile Channel broker;
        /** The client side was reset and the broker side left open: a close of the client side is not passed on. */
        private volatile boolean partitioned;

        final Relay front = new Relay(true);

        Pair(Channel client) {
            this.client = client;
        }

        void connectBroker() {
            pairs.add(this);
            broker = new Bootstrap()
                    .group(client.eventLoop())
                    .channel(NioSocketChannel.class)
                    .option(ChannelOption.AUTO_READ, false)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new Relay(false))
                    .connect(targetHost, targetPort)
                    .addListener((ChannelFutureListener) f -> {
                        if (f.isSuccess()) {
                            setReading(!stalled);
                        } else {
                            cut();
                        }
                    })
                    .channel();
        }

        void setReading(boolean on) {
            Channel b = broker;
            client.eventLoop().execute(() -> {
                if (b != null && b.isActive()) {
                    b.config().setAutoRead(on);
                    if (on) {
                        b.read();
                    }
                }
                if (client.isActive() && b != null && b.isActive()) {
                    client.config().setAutoRead(on);
                    if (on) {
                        client.read();
                    }
                }
            });
        }

        void partition() {
            partitioned = true;
            Channel b = broker;
            client.eventLoop().execute(() -> {
                if (b != null) {
                    b.config().setAutoRead(false); // the broker's frames stay in the kernel, unread
                }
                abort(client);
            });
        }

        void cut() {
            pairs.remove(this);
            abort(client);
            Channel b = broker;
            if (b != null) {
                abort(b);
            }
        }

        private void abort(Channel ch) {
            if (ch.isOpen()) {
                try {
                    // linger 0: the peer sees a reset, not an orderly FIN, like a broken network path
                    ch.config().setOption(ChannelOption.SO_LINGER, 0);
                } catch (RuntimeException ignored) {
                    // already closing
                }
                ch.close();
            }
        }

        private final class Relay extends ChannelInboundHandlerAdapter {
            private final boolean fromClient;

            Relay(boolean fromClient) {
                this.fromClient = fromClient;
            }

            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                if (fromClient) {
                    connectBroker();
                }
                ctx.fireChannelActive();
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                Channel peer = fromClient ? broker : client;
                if (peer == null || !peer.isActive()) {
                    ReferenceCountUtil.release(msg);
                    return;
                }
                long delay = delayNanos;
                if (delay <= 0) {
                    peer.writeAndFlush(msg);
                } else {
                    // same delay for every chunk: deadlines increase with time, so the order is kept
                    ByteBuf buf = (ByteBuf) msg;
                    ctx.executor()
                            .schedule(
                                    () -> {
                                        if (peer.isActive()) {
                                            peer.writeAndFlush(buf);
                                        } else {
                                            buf.release();
                                        }
                                    },
                                    delay,
                                    TimeUnit.NANOSECONDS);
                }
            }

            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                if (fromClient && partitioned) {
                    return; // the broker side stays open until the broker closes it, or the proxy is closed
                }
                cut();
            }

            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                if (fromClient && partitioned) {
                    return;
                }
                cut(); // a reset from either side ends the pair
            }
        }
    }
}
