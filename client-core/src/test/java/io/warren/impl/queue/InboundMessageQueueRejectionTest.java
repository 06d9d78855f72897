package io.warren.impl.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.DefaultEventLoop;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A consumer context that is gone (its executor rejects tasks) can deliver nothing more: the queue
 * closes itself and disposes of everything rather than leak it, and reports the rejection.
 */
class InboundMessageQueueRejectionTest {

    private EventLoop producer;

    @BeforeEach
    void startProducer() {
        producer = new DefaultEventLoop(new DefaultThreadFactory("producer", true));
    }

    @AfterEach
    void stopProducer() {
        producer.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static final class Recording extends InboundMessageQueue<ByteBuf> {
        final AtomicInteger delivered = new AtomicInteger();
        final AtomicInteger disposed = new AtomicInteger();
        final ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();

        Recording(Executor producer, Executor consumer) {
            super(producer, consumer, 2, 4);
        }

        @Override
        protected void handleMessage(ByteBuf message) {
            delivered.incrementAndGet();
            message.release();
        }

        @Override
        protected void handleDispose(ByteBuf message) {
            disposed.incrementAndGet();
            super.handleDispose(message);
        }

        @Override
        protected void handleFailure(Throwable failure) {
            failures.add(failure);
        }
    }

    @Test
    void closeAfterTheConsumerExecutorShutDownReleasesTheQueuedBuffers() throws Exception {
        ExecutorService pool = ConsumerExecutors.workerPool(2);
        Recording queue = producer.submit(() -> new Recording(producer, pool)).get();
        queue.pause();
        List<ByteBuf> buffers = write(queue, 6);
        AbstractInboundMessageQueueTest.awaitTrue(queue::isSuspended, "the drain to stop for demand");
        ConsumerExecutors.shutdown(pool);

        queue.close(); // claims the ownership; the drain it schedules is rejected and runs here instead

        assertEquals(6, queue.disposed.get());
        assertEquals(0, queue.delivered.get());
        AbstractInboundMessageQueueTest.assertAllReleased(buffers);
        assertEquals(1, queue.failures.size());
        assertTrue(queue.failures.peek() instanceof RejectedExecutionException);
    }

    @Test
    void aConsumerThatRejectsFromTheStartGetsNothingAndLeaksNothing() throws Exception {
        Executor rejecting = task -> {
            throw new RejectedExecutionException("consumer is gone");
        };
        Recording queue =
                producer.submit(() -> new Recording(producer, rejecting)).get();
        List<ByteBuf> buffers = write(queue, 5);
        assertTrue(queue.isClosed());
        assertEquals(5, queue.disposed.get());
        assertEquals(0, queue.delivered.get());
        AbstractInboundMessageQueueTest.assertAllReleased(buffers);
        assertEquals(1, queue.failures.size(), "reported once: later writes find the queue closed");
        assertEquals(0, producer.submit(queue::pending).get());
    }

    private List<ByteBuf> write(Recording queue, int count) throws Exception {
        List<ByteBuf> buffers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            buffers.add(PooledByteBufAllocator.DEFAULT.directBuffer(8).writeInt(i));
        }
        producer.submit(() -> buffers.forEach(queue::write)).get();
        return buffers;
    }
}
