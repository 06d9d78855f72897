package io.warren.impl.queue;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import org.junit.jupiter.api.DisplayName;

/**
 * Consumer on a virtual-thread-per-task executor (JDK 21+): every drain runs on a new thread. On JDK 17
 * the same suite runs on a cached worker pool instead (see {@link ConsumerExecutors}).
 */
@DisplayName("CrossThreadVirtualThreadInboundMessageQueueTest (virtual threads, or a cached worker pool before JDK 21)")
class CrossThreadVirtualThreadInboundMessageQueueTest extends AbstractCrossThreadInboundMessageQueueTest {

    private ExecutorService executor;
    private ConsumerExecutors.Marking consumer;

    @Override
    Executor createConsumer() {
        executor = ConsumerExecutors.virtualThreadsOrWorkerPool();
        consumer = new ConsumerExecutors.Marking(executor);
        return consumer;
    }

    @Override
    void shutdownConsumer() throws InterruptedException {
        if (executor != null) {
            ConsumerExecutors.shutdown(executor);
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
