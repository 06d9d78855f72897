package io.warren.impl.queue;

import io.netty.channel.DefaultEventLoop;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.vertx.core.impl.EventLoopExecutor;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Cross-thread hand-off of messages from a producer event loop to a consumer thread, the inbound path
 * of a consumer whose handler does not run on the connection's loop:
 *
 * <ul>
 *   <li>{@code warren}: Warren's {@link InboundMessageQueue} (cross-thread flavour);</li>
 *   <li>{@code vertx}: Vert.x 5's own {@code io.vertx.core.internal.concurrent.InboundMessageQueue};</li>
 *   <li>{@code arrayBlockingQueue}: the classic alternative, a bounded {@link ArrayBlockingQueue} that the
 *       producer {@code put}s into and a consumer thread from an executor {@code take}s from.</li>
 * </ul>
 *
 * <p>The same for all three: the producer is a Netty {@link DefaultEventLoop}; the consumer is one
 * thread (a second {@code DefaultEventLoop} for the two queues, which hand drains to it with
 * {@code execute}; a single-thread executor looping on {@code take} for the blocking queue); one
 * invocation hands {@link #BATCH} preallocated boxed integers over, started by one task on the producer
 * loop, and completes when the consumer has summed all of them into a consumer-only field, which the
 * benchmark returns. The benchmark thread parks until the consumer unparks it at the end of the batch, so
 * it does not compete for the CPU. Scores are messages per second; {@code -prof gc}'s
 * {@code gc.alloc.rate.norm} is bytes allocated per message, over all threads.
 *
 * <p>{@code backPressure=false}: water marks out of reach (and a blocking queue as large as the batch):
 * pure hand-off. {@code backPressure=true}: high-water mark {@value #HIGH_WATER_MARK}, low-water mark
 * {@value #LOW_WATER_MARK}; the producer stops on pause and carries on from resume (the queues), or
 * blocks in {@code put} on a queue of capacity {@value #HIGH_WATER_MARK} (the blocking queue).
 *
 * <p>A micro-benchmark of an internal class, so it lives in that class's package (in the benchmarks jar, on the
 * class path): the {@code io.warren.bench} tools measure through the exported API only (BenchmarkImportsTest).
 */
// explicit rather than JMH's defaults (5 forks of 5 + 5 iterations of 10 s): the settings BENCHMARKS.md's figures used
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(2)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class InboundQueueHandoffBenchmark {

    static final int BATCH = 4096;
    static final int HIGH_WATER_MARK = 256;
    static final int LOW_WATER_MARK = 128;

    /** Messages: boxed once, outside the {@code Integer} cache, so that no message is allocated per run. */
    static final Integer[] VALUES = new Integer[BATCH];

    static {
        for (int i = 0; i < BATCH; i++) {
            VALUES[i] = Integer.valueOf(1_000 + i);
        }
    }

    /** What every candidate shares: threads, the batch bookkeeping and the benchmark thread's wake-up. */
    @State(Scope.Benchmark)
    public abstract static class Handoff {
        @Param({"false", "true"})
        public boolean backPressure;

        EventLoop producer;

        // benchmark thread, read by the consumer at the end of a batch
        volatile Thread waiter;
        // consumer only (ordered across batches by the hand-off itself)
        long sum;
        int consumedInBatch;
        // written by the consumer at the end of a batch, read by the benchmark thread
        volatile long batchesDone;
        // benchmark thread only
        long batchesStarted;

        // producer loop only
        int next;
        boolean producerPaused;
        private final Runnable startBatch = () -> {
            next = 0;
            produceBatch();
        };

        void startThreads() {
            producer = new DefaultEventLoop(new DefaultThreadFactory("producer", true));
        }

        void stopThreads() {
            producer.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }

        int lowWaterMark() {
            return backPressure ? LOW_WATER_MARK : BATCH;
        }

        int highWaterMark() {
            return backPressure ? HIGH_WATER_MARK : Integer.MAX_VALUE;
        }

        /** Producer loop: writes the batch from {@link #next}, stopping when paused. */
        final void produceBatch() {
            while (next < BATCH) {
                if (producerPaused) {
                    return; // resumed by the queue's resume callback
                }
                write(VALUES[next++]);
            }
        }

        abstract void write(Integer value);

        /** Consumer thread. */
        final void consume(Integer value) {
            sum += value;
            if (++consumedInBatch == BATCH) {
                consumedInBatch = 0;
                batchesDone++;
                LockSupport.unpark(waiter);
            }
        }

        // Not named pause/resume: inside the queue subclasses those names are the queues' own demand methods.
        final void stopProducing() {
            producerPaused = true;
        }

        final void startProducing() {
            producerPaused = false;
            produceBatch();
        }

        /** Benchmark thread: one batch, producer loop to consumer. */
        final long handOffOneBatch() {
            waiter = Thread.currentThread();
            long target = ++batchesStarted;
            producer.execute(startBatch);
            while (batchesDone < target) {
                LockSupport.park(this);
            }
            return sum; // published by the volatile batchesDone
        }
    }

    @State(Scope.Benchmark)
    public static class Warren extends Handoff {
        DefaultEventLoop consumer;
        InboundMessageQueue<Integer> queue;

        @Setup(Level.Trial)
        public void setUp() {
            startThreads();
            consumer = new DefaultEventLoop(new DefaultThreadFactory("consumer", true));
            queue = new InboundMessageQueue<>(producer, consumer, lowWaterMark(), highWaterMark()) {
                @Override
                protected void handleMessage(Integer message) {
                    consume(message);
                }

                @Override
                protected void handlePause() {
                    stopProducing();
                }

                @Override
                protected void handleResume() {
                    startProducing();
                }
            };
            if (queue.isSameThread()) {
                throw new IllegalStateException("expected the cross-thread flavour");
            }
        }

        @Override
        void write(Integer value) {
            queue.write(value);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            stopThreads();
            consumer.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @State(Scope.Benchmark)
    public static class Vertx extends Handoff {
        DefaultEventLoop consumer;
        io.vertx.core.internal.concurrent.InboundMessageQueue<Integer> queue;

        @Setup(Level.Trial)
        public void setUp() {
            startThreads();
            consumer = new DefaultEventLoop(new DefaultThreadFactory("consumer", true));
            queue =
                    new io.vertx.core.internal.concurrent.InboundMessageQueue<>(
                            new EventLoopExecutor(producer),
                            new EventLoopExecutor(consumer),
                            lowWaterMark(),
                            highWaterMark()) {
                        @Override
                        protected void handleMessage(Integer message) {
                            consume(message);
                        }

                        @Override
                        protected void handlePause() {
                            stopProducing();
                        }

                        @Override
                        protected void handleResume() {
                            startProducing();
                        }
                    };
        }

        @Override
        void write(Integer value) {
            queue.write(value);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            stopThreads();
            consumer.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @State(Scope.Benchmark)
    public static class BlockingQueue extends Handoff {
        private static final Integer STOP = Integer.valueOf(-1_000);

        ExecutorService consumer;
        ArrayBlockingQueue<Integer> queue;

        @Setup(Level.Trial)
        public void setUp() {
            startThreads();
            queue = new ArrayBlockingQueue<>(backPressure ? HIGH_WATER_MARK : BATCH);
            consumer = Executors.newSingleThreadExecutor(new DefaultThreadFactory("consumer", true));
            consumer.execute(() -> {
                try {
                    while (true) {
                        Integer value = queue.take();
                        if (value == STOP) {
                            return;
                        }
                        consume(value);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }

        @Override
        void write(Integer value) {
            try {
                queue.put(value); // blocks the producer loop when full: that is this design's back-pressure
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() throws InterruptedException {
            producer.submit(() -> write(STOP)).syncUninterruptibly();
            consumer.shutdown();
            consumer.awaitTermination(10, TimeUnit.SECONDS);
            stopThreads();
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long warren(Warren state) {
        return state.handOffOneBatch();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long vertx(Vertx state) {
        return state.handOffOneBatch();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long arrayBlockingQueue(BlockingQueue state) {
        return state.handOffOneBatch();
    }
}
