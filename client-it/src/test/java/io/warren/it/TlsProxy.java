package io.warren.it;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
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
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import java.net.InetSocketAddress;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.TrustManagerFactory;

/**
 * A TLS-terminating proxy in front of the broker, for tests: the broker here has no TLS listener. It
 * accepts TLS on a loopback port, optionally requires a client certificate, and relays the plain bytes to
 * the broker's AMQP port. It records the subjects of the client certificates it saw.
 */
final class TlsProxy implements AutoCloseable {

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel server;
    final List<String> clientSubjects = new CopyOnWriteArrayList<>();

    TlsProxy(KeyManagerFactory serverKey, TrustManagerFactory clientTrust, String brokerHost, int brokerPort)
            throws Exception {
        SslContextBuilder builder = SslContextBuilder.forServer(serverKey);
        if (clientTrust != null) {
            builder.trustManager(clientTrust).clientAuth(ClientAuth.REQUIRE);
        }
        SslContext ssl = builder.build();
        server = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        SslHandler tls = ssl.newHandler(ch.alloc());
                        tls.handshakeFuture().addListener(f -> {
                            if (f.isSuccess()) {
                                recordPeer(tls);
                            }
                        });
                        ch.pipeline().addLast(tls, new Frontend(brokerHost, brokerPort));
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
    }

    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    private void recordPeer(SslHandler tls) {
        try {
            Certificate[] peer = tls.engine().getSession().getPeerCertificates();
            clientSubjects.add(
                    ((X509Certificate) peer[0]).getSubjectX500Principal().getName());
        } catch (SSLPeerUnverifiedException e) {
            // no client certificate: nothing to record
        }
    }

    private final class Frontend extends ChannelInboundHandlerAdapter {
        private final String host;
        private final int port;
        private Channel backend;

        Frontend(String host, int port) {
            this.host = host;
            this.port = port;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            Channel front = ctx.channel();
            backend = new Bootstrap()
                    .group(front.eventLoop())
                    .channel(NioSocketChannel.class)
                    .handler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext b, Object msg) {
                            front.writeAndFlush(msg);
                        }

                        @Override
                        public void channelInactive(ChannelHandlerContext b) {
                            front.close();
                        }
                    })
                    .connect(host, port)
                    .addListener((ChannelFutureListener) f -> {
                        if (f.isSuccess()) {
                            front.config().setAutoRead(true);
                        } else {
                            front.close();
                        }
                    })
                    .channel();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            backend.writeAndFlush(msg);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (backend != null) {
                backend.close();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close(); // a refused handshake, for example: the test looks at the client's side
        }
    }

    @Override
    public void close() throws Exception {
        server.close().sync();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
}
