package io.warren.impl.queue;

import java.util.concurrent.Executor;

/** Producer and consumer on one {@code DefaultEventLoop}: the same-thread flavour. */
class SameThreadInboundMessageQueueTest extends AbstractInboundMessageQueueTest {

    @Override
    Executor createConsumer() {
        return producer;
    }

    @Override
    void shutdownConsumer() {
        // the producer loop, shut down by the base class
    }

    @Override
    boolean onConsumerThread() {
        return producer.inEventLoop();
    }

    @Override
    boolean expectSameThread() {
        return true;
    }
}
