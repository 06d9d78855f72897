package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.ProtocolHeader;
import io.warren.codec.base.FrameType;
import io.warren.codec.method.ConnectionStart;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The first word with the real broker, below the client: a TCP connection, the protocol header, and
 * the broker's {@code connection.start} decoded by Warren's own {@link FrameDecoder} and
 * {@link ConnectionStart} view.
 */
@ExtendWith(BrokerExtension.class)
class BrokerSmokeIT {

    @Test
    void brokerConnectionStartDecodes(Broker broker) throws Exception {
        record Start(int major, int minor, Map<String, Object> serverProperties, String mechanisms, String locales) {}
        CompletableFuture<Start> start = new CompletableFuture<>();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            Channel channel = new Bootstrap()
                    .group(group)
                    .channel(NioSocketChannel.class)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new FrameDecoder(), new SimpleChannelInboundHandler<Frame>() {
                                @Override
                                protected void channelRead0(ChannelHandlerContext ctx, Frame frame) {
                                    // SimpleChannelInboundHandler releases the frame (and its payload) after this.
                                    assertEquals(FrameType.METHOD, frame.type());
                                    assertEquals(0, frame.channel());
                                    ConnectionStart view = new ConnectionStart()
                                            .wrap(
                                                    frame.payload(),
                                                    frame.payload().readerIndex());
                                    start.complete(new Start(
                                            view.versionMajor(),
                                            view.versionMinor(),
                                            view.serverProperties().toMap(),
                                            view.mechanismsAsString(),
                                            view.localesAsString()));
                                    ctx.close();
                                }

                                @Override
                                public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                    start.completeExceptionally(cause);
                                    ctx.close();
                                }
                            });
                        }
                    })
                    .connect(broker.host(), broker.port())
                    .sync()
                    .channel();
            channel.writeAndFlush(ProtocolHeader.encode(channel.alloc())).sync();

            Start decoded = start.get(10, TimeUnit.SECONDS);
            assertEquals(0, decoded.major());
            assertEquals(9, decoded.minor());
            assertEquals("RabbitMQ", decoded.serverProperties().get("product"));
            assertNotNull(decoded.serverProperties().get("version"));
            Map<?, ?> capabilities =
                    assertInstanceOf(Map.class, decoded.serverProperties().get("capabilities"));
            assertEquals(Boolean.TRUE, capabilities.get("publisher_confirms"));
            assertEquals(Boolean.TRUE, capabilities.get("basic.nack"));
            assertTrue(decoded.mechanisms().contains("PLAIN"), decoded.mechanisms());
            assertTrue(decoded.locales().contains("en_US"), decoded.locales());
            channel.closeFuture().await(5, TimeUnit.SECONDS);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
