package io.warren.impl.connection;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * A loopback server socket with a 4 KiB receive buffer, and Warren's NIO channel connected to it as the connector
 * configures it (the connection's allocator) with a 4 KiB send buffer: the socket takes a large body only as the
 * test, the peer, reads it. One event loop of its own.
 */
final class SmallSocketServer implements AutoCloseable {

    private final MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final ServerSocketChannel server;

    /** Opens the server; a test holds it in an {@code @AutoClose} field, one per test. */
    SmallSocketServer() {
        try {
            server = ServerSocketChannel.open()
                    .setOption(StandardSocketOptions.SO_RCVBUF, 4096)
                    .bind(new InetSocketAddress("127.0.0.1", 0));
        } catch (IOException | RuntimeException e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
    }

    /** A channel connected to this server; the test closes it. */
    DirectNioSocketChannel connect() throws Exception {
        return connect(StagingBuffer.LINGER_NANOS);
    }

    /** A channel connected to this server whose staging buffer lingers {@code stagingLingerNanos}; the test closes it. */
    DirectNioSocketChannel connect(long stagingLingerNanos) throws Exception {
        return (DirectNioSocketChannel) new Bootstrap()
                .group(group)
                .channelFactory(() -> new DirectNioSocketChannel(stagingLingerNanos))
                .option(ChannelOption.ALLOCATOR, ConnectionAllocator.INSTANCE)
                .option(ChannelOption.SO_SNDBUF, 4096)
                .handler(new ChannelInboundHandlerAdapter())
                .connect(server.getLocalAddress())
                .sync()
                .channel();
    }

    /** The peer's side of the next connection; the test closes it. */
    SocketChannel accept() throws IOException {
        return server.accept();
    }

    @Override
    public void close() throws Exception {
        server.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
}
