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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A consumer context that is gone can deliver nothing more. When its executor rejects tasks, the queue closes
 * itself, disposes of everything rather than leak it, and reports the rejection. When it accepted a drain and will
 * never run it ({@code ExecutorService.shutdownNow()} returns the tasks it dropped), {@link
 * InboundMessageQueue#close()} takes the drain back and disposes of what waits for it.
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

        queue.close(); // claims the ownership and disposes here: nothing is asked of the executor that is gone

        assertEquals(6, queue.disposed.get());
        assertEquals(0, queue.delivered.get());
        AbstractInboundMessageQueueTest.assertAllReleased(buffers);
        assertEquals(List.of(), List.copyOf(queue.failures));
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

    @Test
    void closeTakesBackADrainTheExecutorAcceptedAndNeverRan() throws Exception {
        List<Runnable> dropped = new ArrayList<>();
        Executor dropping = dropped::add; // what a pool emptied by shutdownNow() did with the task
        Recording queue =
                producer.submit(() -> new Recording(producer, dropping)).get();
        List<ByteBuf> buffers = write(queue, 5);
        assertEquals(1, dropped.size(), "one drain for the five");

        producer.submit(queue::close).get();

        assertEquals(5, queue.disposed.get());
        AbstractInboundMessageQueueTest.assertAllReleased(buffers);
        assertEquals(0, producer.submit(queue::pending).get());
        dropped.get(0).run(); // an executor that runs it after all: nothing changes
        assertEquals(0, queue.delivered.get());
        assertEquals(5, queue.disposed.get());
        assertEquals(List.of(), List.copyOf(queue.failures));
    }

    @Test
    void closeOfADrainWaitingForDemandDisposesWithoutTheExecutor() throws Exception {
        ExecutorService pool = ConsumerExecutors.workerPool(2);
        try {
            closeWhenTheExecutorDrops(pool);
        } finally {
            ConsumerExecutors.shutdown(pool);
        }
    }

    private void closeWhenTheExecutorDrops(ExecutorService pool) throws Exception {
        List<Runnable> dropped = new ArrayList<>();
        AtomicBoolean shutDownNow = new AtomicBoolean();
        Executor context = task -> {
            if (shutDownNow.get()) {
                dropped.add(task); // accepted, never to run
            } else {
                pool.execute(task);
            }
        };
        Recording queue =
                producer.submit(() -> new Recording(producer, context)).get();
        queue.pause();
        List<ByteBuf> buffers = write(queue, 6);
        AbstractInboundMessageQueueTest.awaitTrue(queue::isSuspended, "the drain to stop for demand");
        shutDownNow.set(true);

        producer.submit(queue::close).get();

        assertEquals(List.of(), dropped, "the closing thread disposed of them itself");
        assertEquals(6, queue.disposed.get());
        assertEquals(0, queue.delivered.get());
        AbstractInboundMessageQueueTest.assertAllReleased(buffers);
    }

    @Test
    void aCloseBetweenTheHandOverAndTheExecutorLeavesNothingBehind() throws Exception {
        List<Runnable> dropped = new ArrayList<>();
        AtomicReference<InboundMessageQueue<ByteBuf>> self = new AtomicReference<>();
        Executor droppingOnceClosed = task -> {
            if (self.get().isClosed()) {
                dropped.add(task); // the application shut it down after the close: shutdownNow() drops the task
            } else {
                task.run();
            }
        };
        // high-water mark 1: the first write pauses the producer between queueing and handing the drain over, and
        // the pause closes the queue there, where close() finds no drain to take back yet
        InboundMessageQueue<ByteBuf> queue = producer.submit(
                        () -> new InboundMessageQueue<ByteBuf>(producer, droppingOnceClosed, 1, 1) {
                            @Override
                            protected void handleMessage(ByteBuf message) {
                                message.release();
                            }

                            @Override
                            protected void handlePause() {
                                close();
                            }
                        })
                .get();
        self.set(queue);
        ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(8).writeInt(1);

        producer.submit(() -> queue.write(buffer)).get();

        assertEquals(1, dropped.size(), "the drain was handed to the executor after the close, and dropped");
        assertEquals(0, buffer.refCnt(), "the hand-over saw the close and disposed of the message itself");
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
