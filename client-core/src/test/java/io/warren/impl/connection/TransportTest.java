package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.warren.AmqpClient;
import io.warren.ClientOptions;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class TransportTest {

    @Test
    void withoutNativeTransportsOnTheClasspathItIsNio() {
        Transport t = Transport.best(true);
        assertEquals("nio", t.name());
        assertEquals(DirectNioSocketChannel.class, t.channelClass());
        assertEquals("nio", Transport.best(false).name());
    }

    @Test
    void anApplicationsNioGroupGetsNioSocketChannels() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            assertEquals(DirectNioSocketChannel.class, Transport.channelClassFor(group));
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void aGroupWhoseLoopsServeNoSocketIsRefusedWhenTheClientIsCreated() throws Exception {
        // a plain SingleThreadEventLoop: no IoHandler, so no socket channel registers on it (each connect would fail)
        DefaultEventLoopGroup group = new DefaultEventLoopGroup(1);
        try {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> AmqpClient.create(new ClientOptions().eventLoopGroup(group)));
            assertTrue(e.getMessage().contains(DefaultEventLoopGroup.class.getName()), e.getMessage());
            assertTrue(e.getMessage().contains("IoEventLoop"), e.getMessage());
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
