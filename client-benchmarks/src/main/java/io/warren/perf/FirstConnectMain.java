package io.warren.perf;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.warren.AmqpClient;
import io.warren.Connection;
import io.warren.codec.PassThroughInboundHandler;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Connects once in a fresh JVM, closes, and exits: what an application pays for its first connection (class
 * loading, static initialisers, event loops, the handshake). Run it as a whole process, several times,
 * alternating the clients:
 *
 * <pre>
 *   /usr/bin/time -f %e java -cp ... io.warren.perf.FirstConnectMain warren amqp://guest:guest@localhost:5672
 *   /usr/bin/time -f %e java -cp ... io.warren.perf.FirstConnectMain amqp-client amqp://guest:guest@localhost:5672
 * </pre>
 *
 * It prints the milliseconds of each phase since {@code main} started ({@code -q}: nothing), so that the
 * process time splits into JVM start, client creation, connect and close. Count the classes loaded with
 * {@code -verbose:class | grep -c '^\['}. On a loaded machine compare the processes' CPU time (user + sys) rather
 * than their wall time.
 *
 * <p>What the first connect costs beyond amqp-client's (JDK 17, Netty 4.2), measured and explained in
 * BENCHMARKS.md ("First connect in a fresh JVM"): mostly Netty's own start-up (its classes, {@code
 * PlatformDependent}, the JIT compiling them), two allocators (the channel config's default and Warren's pooled
 * one) and Netty's JFR listener ({@code -Dio.netty.jfr.enabled=false}, the application's choice: a JVM-wide Netty
 * setting). Warren's own part avoids what a fresh JVM pays dearly for: no annotation for Netty to read on the
 * connection's handlers, no lambda or regular expression on the connect and close paths, its own channel id
 * (Netty's reads every network interface), and event loops whose termination starts no other thread (Netty's
 * group's would start its global executor's, which kept the JVM a second after {@code main}). Class data sharing ({@code -XX:ArchiveClassesAtExit} once, then {@code
 * -XX:SharedArchiveFile}) takes most of the class loading away for both clients. Timed side by side in whole
 * processes:
 *
 * <pre>
 *   hyperfine -N -w 1 -r 10 "java -cp ... io.warren.perf.FirstConnectMain warren URI -q" \
 *       "java -cp ... io.warren.perf.FirstConnectMain amqp-client URI -q" \
 *       "java -cp ... io.warren.perf.FirstConnectMain netty URI -q"
 * </pre>
 *
 * <p>{@code netty} is no AMQP client but the floor under any client built on Netty: Netty's NIO event loop and
 * {@code Bootstrap} as an application would use them, connecting, writing the AMQP protocol header and waiting for the
 * broker's first frame (connection.start), then closing the socket. Warren's first connect costs what it costs above
 * that.
 */
public final class FirstConnectMain {

    public static void main(String[] args) throws Exception {
        long t0 = System.nanoTime();
        String client = args.length > 0 ? args[0] : "warren";
        String uri = args.length > 1 ? args[1] : "amqp://guest:guest@localhost:5672/%2F";
        boolean quiet = args.length > 2 && args[2].equals("-q");
        long created;
        long connected;
        if (client.equals("warren")) {
            AmqpClient c = AmqpClient.create();
            created = System.nanoTime();
            Connection connection = c.connect(uri).toCompletableFuture().get(30, TimeUnit.SECONDS);
            connected = System.nanoTime();
            connection.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            c.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } else if (client.equals("amqp-client")) {
            com.rabbitmq.client.ConnectionFactory f =
                    AmqpClientDriver.factory(uri); // a refused URI is named without its password
            created = System.nanoTime();
            com.rabbitmq.client.Connection connection = f.newConnection();
            connected = System.nanoTime();
            connection.close();
        } else if (client.equals("netty")) {
            created = System.nanoTime();
            NettyFloor floor = new NettyFloor();
            floor.connect(URI.create(uri));
            connected = System.nanoTime();
            floor.close();
        } else {
            throw new IllegalArgumentException("usage: FirstConnectMain warren|amqp-client|netty [uri] [-q]");
        }
        long closed = System.nanoTime();
        if (!quiet) {
            System.out.printf(
                    "%s: create %.1f ms, connect %.1f ms, close %.1f ms (since main)%n",
                    client, (created - t0) / 1e6, (connected - t0) / 1e6, (closed - t0) / 1e6);
        }
    }

    private FirstConnectMain() {}

    /**
     * Netty alone: a one-thread NIO group (daemon threads, never shut down, so that its termination starts no other
     * thread and the JVM exits with {@code main}), a channel that sends the protocol header and completes
     * {@link #firstFrame} at the first bytes the broker sends back. Like Warren's handlers it is a
     * {@link PassThroughInboundHandler}: reading Netty's {@code @Skip} costs a fresh JVM tens of milliseconds, which
     * would raise the floor.
     */
    private static final class NettyFloor extends PassThroughInboundHandler {
        private static final byte[] PROTOCOL_HEADER = {'A', 'M', 'Q', 'P', 0, 0, 9, 1};

        private final CompletableFuture<Void> firstFrame = new CompletableFuture<>();
        private io.netty.channel.Channel channel;

        void connect(URI uri) throws Exception {
            EventLoopGroup group = new MultiThreadIoEventLoopGroup(
                    1, new DefaultThreadFactory("netty-floor", true), NioIoHandler.newFactory());
            int port = uri.getPort() < 0 ? 5672 : uri.getPort();
            channel = new Bootstrap()
                    .group(group)
                    .channel(NioSocketChannel.class)
                    .handler(this)
                    .connect(uri.getHost(), port)
                    .sync()
                    .channel();
            channel.writeAndFlush(Unpooled.wrappedBuffer(PROTOCOL_HEADER));
            firstFrame.get(30, TimeUnit.SECONDS);
        }

        void close() throws Exception {
            channel.close().sync();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ((ByteBuf) msg).release();
            firstFrame.complete(null);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            firstFrame.completeExceptionally(new IllegalStateException("closed before the broker's first frame"));
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            firstFrame.completeExceptionally(cause);
            ctx.close();
        }
    }
}
