package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
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
}
