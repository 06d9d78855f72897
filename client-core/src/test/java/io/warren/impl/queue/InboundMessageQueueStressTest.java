package io.warren.impl.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.DefaultEventLoop;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Producer on an event loop, consumer on another executor, a controller thread issuing random pause,
 * fetch and resume, all started on a {@link CyclicBarrier}. Proves in-order, exactly-once delivery, that
 * deliveries never overlap, that pause and resume alternate on the producer loop and agree with the
 * queue's state, that the backlog stays bounded by the high-water mark plus one read batch, and (with
 * pooled buffers and a close at a random moment) that every buffer is delivered or disposed, once.
 *
 * <p>Random water marks, batch sizes and operation mixes come from a seed printed in every failure;
 * set {@code -Dwarren.stress.seed=...} to replay one.
 */
class InboundMessageQueueStressTest {

    private static final long TIMEOUT_SECONDS = 120;
    private static final int MESSAGES = 200_000;
    private static final int BUFFERS = 20_000;

    enum ConsumerKind {
        SAME_EVENT_LOOP("the producer's event loop"),
        OTHER_EVENT_LOOP("another event loop"),
        WORKER_POOL("a pool of 3 workers"),
        VIRTUAL_THREADS(ConsumerExecutors.virtualThreadsOrWorkerPoolName());

        private final String description;

        ConsumerKind(String description) {
            this.description = description;
        }

        @Override
        public String toString() {
            return name() + " (" + description + ")";
        }
    }

    /** The consumer side of one run: the executor the queue gets and how to recognise its threads. */
    private static final class Consumer implements AutoCloseable {
        final Executor executor;
        final BooleanSupplier onThread;
        private final AutoCloseable shutdown;

        Consumer(Executor executor, BooleanSupplier onThread, AutoCloseable shutdown) {
            this.executor = executor;
            this.onThread = onThread;
            this.shutdown = shutdown;
        }

        static Consumer create(ConsumerKind kind, EventLoop producer) {
            switch (kind) {
                case SAME_EVENT_LOOP:
                    return new Consumer(producer, producer::inEventLoop, () -> {});
                case OTHER_EVENT_LOOP: {
                    DefaultEventLoop loop = new DefaultEventLoop(new DefaultThreadFactory("consumer-loop", true));
                    return new Consumer(
                            loop,
                            loop::inEventLoop,
                            () -> loop.shutdownGracefully(0, 0, TimeUnit.SECONDS)
                                    .syncUninterruptibly());
                }
                case WORKER_POOL:
                    return marking(ConsumerExecutors.workerPool(3));
                case VIRTUAL_THREADS:
                    return marking(ConsumerExecutors.virtualThreadsOrWorkerPool());
                default:
                    throw new AssertionError(kind);
            }
        }

        private static Consumer marking(ExecutorService executor) {
            ConsumerExecutors.Marking marking = new ConsumerExecutors.Marking(executor);
            return new Consumer(marking, marking::inside, () -> ConsumerExecutors.shutdown(executor));
        }

        @Override
        public void close() {
            try {
                shutdown.close();
            } catch (Exception e) {
                throw new AssertionError("consumer executor shutdown failed", e);
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(ConsumerKind.class)
    void randomDemandDeliversEverythingOnceInOrder(ConsumerKind kind) throws Exception {
        long seed = seed();
        SplittableRandom random = new SplittableRandom(seed);
        int low = 1 + random.nextInt(32);
        int high = low + random.nextInt(64);
        int maxBatch = 1 + random.nextInt(64);
        String run = kind + " seed=" + seed + " low=" + low + " high=" + high + " maxBatch=" + maxBatch;

        EventLoop producerLoop = new DefaultEventLoop(new DefaultThreadFactory("producer", true));
        try (Consumer consumer = Consumer.create(kind, producerLoop)) {
            StressQueue queue = producerLoop
                    .submit(() -> new StressQueue(
                            producerLoop, consumer, low, high, random.split(), maxBatch, MESSAGES, false))
                    .get();
            CyclicBarrier start = new CyclicBarrier(3);
            producerLoop.execute(() -> {
                awaitBarrier(start);
                queue.produceBatch();
            });
            Controller controller = new Controller(queue, random.split(), start, false);
            controller.start();
            awaitBarrier(start);

            if (!queue.done.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                fail("not everything was delivered: " + queue.describe() + " " + run);
            }
            controller.finish();
            awaitProducerWritable(producerLoop, queue, run);

            assertEquals(List.of(), new ArrayList<>(queue.violations), run);
            assertEquals(MESSAGES, queue.expected, run);
            assertEquals(MESSAGES, queue.deliveredCount.get(), run);
            long[] producerView = producerLoop
                    .submit(() -> new long[] {queue.pauses, queue.resumes, queue.maxPending})
                    .get();
            assertEquals(producerView[0], producerView[1], "every pause has its resume: " + run);
            assertTrue(
                    producerView[2] <= high + maxBatch - 1,
                    "backlog " + producerView[2] + " over high-water mark + batch: " + run);
        } finally {
            producerLoop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(ConsumerKind.class)
    void closeAtARandomMomentReleasesEveryBufferOnce(ConsumerKind kind) throws Exception {
        long seed = seed();
        SplittableRandom random = new SplittableRandom(seed);
        int low = 1 + random.nextInt(16);
        int high = low + random.nextInt(32);
        int maxBatch = 1 + random.nextInt(32);
        String run = kind + " seed=" + seed + " low=" + low + " high=" + high + " maxBatch=" + maxBatch;

        EventLoop producerLoop = new DefaultEventLoop(new DefaultThreadFactory("producer", true));
        try (Consumer consumer = Consumer.create(kind, producerLoop)) {
            StressQueue queue = producerLoop
                    .submit(() ->
                            new StressQueue(producerLoop, consumer, low, high, random.split(), maxBatch, BUFFERS, true))
                    .get();
            CyclicBarrier start = new CyclicBarrier(3);
            producerLoop.execute(() -> {
                awaitBarrier(start);
                queue.produceBatch();
            });
            Controller controller = new Controller(queue, random.split(), start, true);
            controller.start();
            awaitBarrier(start);

            if (!queue.done.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                fail("not every buffer was delivered or disposed: " + queue.describe() + " " + run);
            }
            controller.finish();
            awaitProducerWritable(producerLoop, queue, run);

            assertEquals(List.of(), new ArrayList<>(queue.violations), run);
            assertTrue(queue.isClosed(), run);
            assertEquals(BUFFERS, queue.deliveredCount.get() + queue.disposedCount.get(), run);
            assertEquals(queue.deliveredCount.get(), queue.expected, "delivered in order: " + run);
            for (ByteBuf buffer : queue.buffers) {
                assertEquals(0, buffer.refCnt(), "every buffer released exactly once: " + run);
            }
            long[] producerView = producerLoop
                    .submit(() -> new long[] {queue.pauses, queue.resumes})
                    .get();
            assertEquals(producerView[0], producerView[1], "every pause has its resume, across close: " + run);
        } finally {
            producerLoop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /**
     * One {@code fetch(1)} per delivery, issued the moment the previous delivery is seen: each fetch
     * races the drain that has just found no demand and is putting the ownership at rest. A lost
     * wake-up leaves the last message undelivered for ever, since no other fetch follows.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(ConsumerKind.class)
    void fetchRacingTheDrainThatStopsNeverLosesAWakeUp(ConsumerKind kind) throws Exception {
        int messages = 20_000;
        EventLoop producerLoop = new DefaultEventLoop(new DefaultThreadFactory("producer", true));
        try (Consumer consumer = Consumer.create(kind, producerLoop)) {
            AtomicInteger delivered = new AtomicInteger();
            Queue<String> violations = new ConcurrentLinkedQueue<>();
            InboundMessageQueue<Integer> queue = producerLoop
                    .submit(() ->
                            new InboundMessageQueue<Integer>(producerLoop, consumer.executor, 1, Integer.MAX_VALUE) {
                                @Override
                                protected void handleMessage(Integer message) {
                                    if (message != delivered.get()) {
                                        violations.add("expected " + delivered.get() + " but got " + message);
                                    }
                                    delivered.incrementAndGet();
                                }
                            })
                    .get();
            queue.pause();
            CyclicBarrier start = new CyclicBarrier(2);
            producerLoop.execute(() -> {
                awaitBarrier(start);
                for (int i = 0; i < messages; i++) {
                    queue.write(i);
                }
            });
            awaitBarrier(start);
            for (int i = 0; i < messages; i++) {
                queue.fetch(1);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                for (int spins = 0; delivered.get() <= i; spins++) {
                    if (System.nanoTime() > deadline) {
                        fail("lost wake-up: fetch(1) number " + (i + 1) + " delivered nothing; " + kind + " pending="
                                + queue.pending());
                    }
                    if (spins < 100) {
                        Thread.onSpinWait();
                    } else {
                        Thread.yield();
                    }
                }
            }
            assertEquals(messages, delivered.get());
            assertEquals(List.of(), new ArrayList<>(violations));
        } finally {
            producerLoop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static long seed() {
        String fixed = System.getProperty("warren.stress.seed");
        return fixed != null
                ? Long.parseLong(fixed)
                : ThreadLocalRandom.current().nextLong();
    }

    private static void awaitProducerWritable(EventLoop producerLoop, StressQueue queue, String run) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        // Everything is consumed, so the last drain round commits (the last handler returns before the
        // count drops) and a pending writable-again signal must reach the producer.
        while (!producerLoop
                .submit(() -> queue.pending() == 0
                        && !queue.producerPaused
                        && queue.handoff().writabilityState() == HandoffQueue.STATE_WRITABLE)
                .get()) {
            if (System.nanoTime() > deadline) {
                fail("the producer was never resumed: " + queue.describe() + " " + run);
            }
            Thread.sleep(1);
        }
    }

    private static void awaitBarrier(CyclicBarrier barrier) {
        try {
            barrier.await(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("the parties did not all start", e);
        }
    }

    /** Random pause, fetch and resume from its own thread until the run is over; optionally a close. */
    private static final class Controller extends Thread {
        private final StressQueue queue;
        private final SplittableRandom random;
        private final CyclicBarrier start;
        private final boolean closeOnce;
        private volatile boolean stop;
        private volatile Throwable failure;

        Controller(StressQueue queue, SplittableRandom random, CyclicBarrier start, boolean closeOnce) {
            super("controller");
            setDaemon(true);
            this.queue = queue;
            this.random = random;
            this.start = start;
            this.closeOnce = closeOnce;
        }

        @Override
        public void run() {
            try {
                awaitBarrier(start);
                // Close once a random share of the messages has been delivered, so it lands mid-stream.
                int closeAt = closeOnce ? random.nextInt(queue.total / 2) : -1;
                while (!stop) {
                    int op = random.nextInt(100);
                    if (op < 25) {
                        queue.pause();
                    } else if (op < 80) {
                        queue.fetch(1 + random.nextInt(64));
                    } else if (op < 85) {
                        queue.resume();
                    } else {
                        Thread.yield();
                    }
                    if (closeAt >= 0 && !queue.isClosed() && queue.deliveredCount.get() >= closeAt) {
                        queue.close();
                    }
                    LockSupport.parkNanos(random.nextInt(20_000));
                }
            } catch (Throwable t) {
                failure = t;
            }
        }

        void finish() throws InterruptedException {
            stop = true;
            join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
            if (failure != null) {
                throw new AssertionError("controller failed", failure);
            }
        }
    }

    private static final class StressQueue extends InboundMessageQueue<Object> {
        private final EventLoop producerLoop;
        private final BooleanSupplier onConsumerThread;
        private final int maxBatch;
        private final int total;
        private final boolean useBuffers;
        final CountDownLatch done = new CountDownLatch(1);
        final Queue<String> violations = new ConcurrentLinkedQueue<>();
        final AtomicInteger deliveredCount = new AtomicInteger();
        final AtomicInteger disposedCount = new AtomicInteger();
        final List<ByteBuf> buffers = new ArrayList<>();
        private final AtomicBoolean delivering = new AtomicBoolean();

        // producer loop only
        private final SplittableRandom producerRandom;
        private int next;
        private boolean batchScheduled;
        boolean producerPaused;
        long pauses;
        long resumes;
        long maxPending;

        // consumer context only: plain fields, kept coherent across consumer threads by the queue itself
        int expected;

        StressQueue(
                EventLoop producerLoop,
                Consumer consumer,
                int low,
                int high,
                SplittableRandom random,
                int maxBatch,
                int total,
                boolean useBuffers) {
            super(producerLoop, consumer.executor, low, high);
            this.producerLoop = producerLoop;
            this.onConsumerThread = consumer.onThread;
            this.producerRandom = random;
            this.maxBatch = maxBatch;
            this.total = total;
            this.useBuffers = useBuffers;
        }

        /** Producer loop: one read batch, written whole even if the queue pauses the producer halfway. */
        void produceBatch() {
            batchScheduled = false;
            if (producerPaused || next == total) {
                return;
            }
            int batch = 1 + producerRandom.nextInt(maxBatch);
            for (int i = 0; i < batch && next < total; i++) {
                Object message;
                if (useBuffers) {
                    ByteBuf buffer =
                            PooledByteBufAllocator.DEFAULT.directBuffer(4).writeInt(next);
                    synchronized (buffers) {
                        buffers.add(buffer);
                    }
                    message = buffer;
                } else {
                    message = next;
                }
                next++;
                write(message);
                maxPending = Math.max(maxPending, pending());
            }
            scheduleBatch();
        }

        private void scheduleBatch() {
            if (!batchScheduled && !producerPaused && next < total) {
                batchScheduled = true;
                producerLoop.execute(this::produceBatch);
            }
        }

        @Override
        protected void handleMessage(Object message) {
            if (!onConsumerThread.getAsBoolean()) {
                violations.add("handleMessage on " + Thread.currentThread());
            }
            if (!delivering.compareAndSet(false, true)) {
                violations.add("two deliveries at once");
            }
            int value;
            if (message instanceof ByteBuf buffer) {
                value = buffer.getInt(0);
                buffer.release();
            } else {
                value = (Integer) message;
            }
            if (value != expected) {
                violations.add("expected " + expected + " but got " + value);
            }
            expected = value + 1;
            // Demand changes from inside the handler too.
            int op = ThreadLocalRandom.current().nextInt(1000);
            if (op == 0) {
                pause();
            } else if (op < 5) {
                fetch(1);
            }
            delivering.set(false);
            deliveredCount.incrementAndGet();
            countDownIfComplete();
        }

        @Override
        protected void handleDispose(Object message) {
            if (!onConsumerThread.getAsBoolean() && !producerLoop.inEventLoop()) {
                // close() took the drain back: the controller disposes (never in the same-thread flavour, whose queue
                // only the loop touches), and never while a delivery runs
                if (!(Thread.currentThread() instanceof Controller) || isSameThread()) {
                    violations.add("handleDispose on " + Thread.currentThread());
                } else if (delivering.get()) {
                    violations.add("a disposal by close() during a delivery");
                }
            }
            super.handleDispose(message);
            disposedCount.incrementAndGet();
            countDownIfComplete();
        }

        private void countDownIfComplete() {
            // Whichever of two concurrent increments comes last sees both.
            if (deliveredCount.get() + disposedCount.get() == total) {
                done.countDown();
            }
        }

        @Override
        protected void handlePause() {
            if (!producerLoop.inEventLoop()) {
                violations.add("handlePause on " + Thread.currentThread());
            }
            if (producerPaused) {
                violations.add("two pauses without a resume between");
            }
            if (handoff().writabilityState() == HandoffQueue.STATE_WRITABLE) {
                violations.add("paused while the queue is writable");
            }
            producerPaused = true;
            pauses++;
        }

        @Override
        protected void handleResume() {
            if (!producerLoop.inEventLoop()) {
                violations.add("handleResume on " + Thread.currentThread());
            }
            if (!producerPaused) {
                violations.add("a resume without a pause");
            }
            if (handoff().writabilityState() != HandoffQueue.STATE_WRITABLE) {
                violations.add("resumed while the queue is not writable");
            }
            producerPaused = false;
            resumes++;
            // Sometimes produce in the resume's own stack (re-entrant), sometimes as a new task.
            if (producerRandom.nextBoolean() && !batchScheduled) {
                produceBatch();
            } else {
                scheduleBatch();
            }
        }

        @Override
        protected void handleFailure(Throwable failure) {
            violations.add("failure: " + failure);
        }

        String describe() {
            return "delivered=" + deliveredCount.get() + " disposed=" + disposedCount.get() + " pending=" + pending()
                    + " demand=" + demand() + " suspended=" + isSuspended() + " closed=" + isClosed();
        }
    }
}
