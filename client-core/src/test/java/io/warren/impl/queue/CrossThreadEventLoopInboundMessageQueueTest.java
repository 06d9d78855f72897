package io.warren.impl.queue;

import io.netty.channel.DefaultEventLoop;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/** Producer on one event loop, consumer on another: the cross-thread flavour with a serial consumer. */
class CrossThreadEventLoopInboundMessageQueueTest extends AbstractCrossThreadInboundMessageQueueTest {

    private DefaultEventLoop consumer;

    @Override
    Executor createConsumer() {
        consumer = new DefaultEventLoop(new DefaultThreadFactory("consumer-loop", true));
        return consumer;
    }

    @Override
    void shutdownConsumer() {
        if (consumer != null) {
            consumer.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Override
    boolean onConsumerThread() {
        return consumer.inEventLoop();
    }

    @Override
    boolean expectSameThread() {
        return false;
    }
}
