package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.local.LocalChannel;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The threading rules are asserted: a connection's loop-only entry point called from another thread fails at once
 * (tests run with -ea), instead of racing the event loop.
 */
class LoopAssertionTest {

    @Test
    void aLoopOnlyEntryPointCalledFromAnotherThreadFailsTheAssertion() throws Exception {
        assertTrue(Heartbeats.class.desiredAssertionStatus(), "tests run with assertions enabled");
        DefaultEventLoopGroup group = new DefaultEventLoopGroup(1);
        try {
            OutboundPath[] path = new OutboundPath[1];
            LocalChannel channel = new LocalChannel();
            group.register(channel).sync();
            channel.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                @Override
                public void handlerAdded(ChannelHandlerContext ctx) {
                    path[0] = new OutboundPath(ctx);
                }
            });
            // handlerAdded ran on the loop; this waits for it and publishes path[0] to this thread
            channel.eventLoop().submit(() -> {}).sync();
            Heartbeats heartbeats = new Heartbeats(path[0], UnpooledByteBufAllocator.DEFAULT, silence -> {});

            AssertionError error = assertThrows(AssertionError.class, () -> heartbeats.start(0));
            assertTrue(error.getMessage().contains("off the event loop"), error.getMessage());

            // the same call on the loop is fine
            channel.eventLoop().submit(() -> heartbeats.start(0)).sync();
            channel.close().sync();
        } finally {
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).sync();
        }
    }
}
