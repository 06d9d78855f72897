package io.warren.impl.queue;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;

/**
 * Consumer on a pool of three workers: successive drains land on different threads, so only the
 * queue's ownership keeps them apart and ordered.
 */
class CrossThreadWorkerPoolInboundMessageQueueTest extends AbstractCrossThreadInboundMessageQueueTest {

    private ExecutorService pool;
    private ConsumerExecutors.Marking consumer;

    @Override
    Executor createConsumer() {
        pool = ConsumerExecutors.workerPool(3);
        consumer = new ConsumerExecutors.Marking(pool);
        return consumer;
    }

    @Override
    void shutdownConsumer() throws InterruptedException {
        if (pool != null) {
            ConsumerExecutors.shutdown(pool);
        }
    }

    @Override
    boolean onConsumerThread() {
        return consumer.inside();
    }

    @Override
    boolean expectSameThread() {
        return false;
    }
}
