package io.warren.impl.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.DefaultEventLoop;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The behaviour of {@link InboundMessageQueue} under one threading model, chosen by the subclass: which
 * executor consumes, and how to tell that a callback runs there. Every callback checks its thread; a
 * wrong thread, two deliveries at once or a pause/resume out of turn fails the test in
 * {@link #checkNoViolation()}.
 */
abstract class AbstractInboundMessageQueueTest {

    static final long TIMEOUT_SECONDS = 30;

    EventLoop producer;
    private TestQueue queue;

    /** The consumer context, created after {@link #producer}. */
    abstract Executor createConsumer();

    abstract void shutdownConsumer() throws Exception;

    /** Whether the current thread belongs to the consumer context. */
    abstract boolean onConsumerThread();

    abstract boolean expectSameThread();

    @BeforeEach
    void startProducer() {
        producer = new DefaultEventLoop(new DefaultThreadFactory("producer", true));
    }

    @AfterEach
    void stop() throws Exception {
        try {
            checkNoViolation();
        } finally {
            shutdownConsumer();
            producer.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private void checkNoViolation() {
        if (queue != null) {
            assertEquals(List.of(), queue.violations, "thread or turn violations");
            assertEquals(queue.expectedFailures, queue.failures.size(), () -> "failures: " + queue.failures);
        }
    }

    TestQueue newQueue(int low, int high) {
        Executor consumer = createConsumer();
        queue = call(() -> new TestQueue(producer, consumer, low, high));
        return queue;
    }

    // ------------------------------------------------------------------ tests

    @Test
    void choosesTheFlavourFromTheExecutors() {
        TestQueue q = newQueue(4, 8);
        assertEquals(expectSameThread(), q.isSameThread());
    }

    @Test
    void deliversInOrderOnTheConsumerThread() {
        TestQueue q = newQueue(4, 8);
        writeInts(q, 0, 100);
        awaitTrue(() -> q.received.size() == 100, "100 deliveries");
        assertEquals(ints(0, 100), q.receivedCopy());
        awaitIdle(q);
        assertEquals(0, pending(q));
    }

    @Test
    void noDemandParksTheFirstMessage() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        writeInts(q, 0, 5);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        assertEquals(List.of(), q.receivedCopy());
        assertEquals(5, pending(q));
    }

    @Test
    void fetchDeliversExactlyN() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        writeInts(q, 0, 10);
        awaitTrue(q::isSuspended, "the drain to stop for demand");

        q.fetch(3);
        awaitTrue(() -> q.received.size() == 3 && q.isSuspended(), "3 deliveries, then a stop");
        assertEquals(ints(0, 3), q.receivedCopy());
        assertEquals(7, pending(q));
        assertEquals(0, q.demand());

        q.fetch(2);
        awaitTrue(() -> q.received.size() == 5 && q.isSuspended(), "2 more deliveries, then a stop");
        assertEquals(ints(0, 5), q.receivedCopy());
        assertEquals(5, pending(q));
    }

    @Test
    void anUnwantedMessageIsDroppedWithoutTakingDemand() {
        TestQueue q = newQueue(4, 8);
        q.unwanted = v -> v % 2 == 0;
        q.pause();
        writeInts(q, 0, 7);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        assertEquals(List.of(0), copy(q.dropped), "dropped before it looks for demand");

        q.fetch(2);
        awaitTrue(() -> q.received.size() == 2 && q.isSuspended(), "2 deliveries, then a stop");
        assertEquals(List.of(1, 3), q.receivedCopy());
        assertEquals(List.of(0, 2, 4), copy(q.dropped));
        assertEquals(0, q.demand());
        assertEquals(2, pending(q), "5 waits for demand, then 6");

        q.fetch(1);
        awaitTrue(() -> q.dropped.size() == 4, "6 dropped after 5");
        awaitIdle(q);
        assertEquals(List.of(1, 3, 5), q.receivedCopy());
        assertEquals(List.of(0, 2, 4, 6), copy(q.dropped));
        assertEquals(0, pending(q));
    }

    @Test
    void messagesThatBecameUnwantedWhileTheDrainWaitsForDemandAreDroppedOnARecheck() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        writeInts(q, 0, 5);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        q.unwanted = v -> v < 3; // gone stale meanwhile
        q.recheckUnwanted();
        awaitTrue(() -> q.dropped.size() == 3 && q.isSuspended(), "0, 1 and 2 dropped, then a stop");
        assertEquals(List.of(0, 1, 2), copy(q.dropped));
        assertEquals(List.of(), q.receivedCopy());
        assertEquals(2, pending(q));
        assertEquals(0, q.demand(), "no demand taken");

        q.fetch(1);
        awaitTrue(() -> q.received.size() == 1 && q.isSuspended(), "3 delivered, then a stop");
        assertEquals(List.of(3), q.receivedCopy());
    }

    @Test
    void inTheHandlerPendingCountsOnlyTheMessagesNotYetHandedOver() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        writeInts(q, 0, 5);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        List<Long> seen = Collections.synchronizedList(new ArrayList<>());
        q.onMessage = m -> seen.add(q.pending());
        q.resume(); // one round hands over all five: the pending count is decremented once, at its end
        awaitTrue(() -> q.received.size() == 5, "5 deliveries");
        assertEquals(List.of(4L, 3L, 2L, 1L, 0L), copy(seen));
        awaitIdle(q);
        assertEquals(0, pending(q));
    }

    @Test
    void demandFetchedBeforeTheMessagesIsSpentOnThem() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        q.fetch(2);
        writeInts(q, 0, 5);
        awaitTrue(() -> q.received.size() == 2 && q.isSuspended(), "2 deliveries, then a stop");
        assertEquals(ints(0, 2), q.receivedCopy());
        assertEquals(3, pending(q));
    }

    @Test
    void resumeDrainsEverythingInOrder() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        writeInts(q, 0, 50);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        q.resume();
        awaitTrue(() -> q.received.size() == 50, "50 deliveries");
        assertEquals(ints(0, 50), q.receivedCopy());
        assertEquals(Long.MAX_VALUE, q.demand());
        awaitIdle(q);
    }

    @Test
    void fetchSaturatesAndRefusesNegativeAmounts() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        q.fetch(Long.MAX_VALUE - 1);
        q.fetch(5);
        assertEquals(Long.MAX_VALUE, q.demand());
        q.fetch(0);
        assertEquals(Long.MAX_VALUE, q.demand());
        assertThrows(IllegalArgumentException.class, () -> q.fetch(-1));
    }

    @Test
    void unwritableExactlyOnceAtTheHighWaterMark() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        writeInts(q, 0, 20);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        onProducer(() -> {}); // every producer callback has run
        assertEquals(1, q.pauses.get());
        assertEquals(List.of(7), q.pausedAfterWriting, "the 8th write reaches the high-water mark");
        assertEquals(0, q.resumes.get());
    }

    @Test
    void writableAgainExactlyOnceBelowTheLowWaterMark() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        writeInts(q, 0, 20);
        awaitTrue(q::isSuspended, "the drain to stop for demand");

        q.fetch(12); // 8 pending: not below 4
        awaitTrue(() -> q.received.size() == 12 && q.isSuspended(), "12 deliveries");
        onProducer(() -> {}); // a resume signal, if any, was handed over before the drain stopped
        assertEquals(0, q.resumes.get());

        q.fetch(5); // 3 pending: below 4
        awaitTrue(() -> q.received.size() == 17 && q.isSuspended(), "17 deliveries");
        awaitTrue(() -> q.resumes.get() == 1, "the resume");

        q.resume();
        awaitTrue(() -> q.received.size() == 20, "20 deliveries");
        awaitIdle(q);
        onProducer(() -> {});
        assertEquals(1, q.pauses.get());
        assertEquals(1, q.resumes.get());
        assertEquals(HandoffQueue.STATE_WRITABLE, call(() -> q.handoff().writabilityState()));
    }

    @Test
    void pauseAndResumeAlternateOverManyPeriods() {
        TestQueue q = newQueue(2, 5);
        q.pause();
        for (int period = 0; period < 5; period++) {
            int from = period * 6;
            writeInts(q, from, from + 6);
            int periodNumber = period + 1;
            awaitTrue(() -> q.isSuspended() && call(() -> q.pauses.get()) == periodNumber, "pause " + periodNumber);
            q.fetch(6);
            awaitTrue(() -> q.resumes.get() == periodNumber, "resume " + periodNumber);
        }
        awaitTrue(() -> q.received.size() == 30, "30 deliveries");
        assertEquals(ints(0, 30), q.receivedCopy());
    }

    @Test
    void fetchFromInsideHandleMessage() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        q.onMessage = m -> q.fetch(1);
        writeInts(q, 0, 20);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        q.fetch(1);
        awaitTrue(() -> q.received.size() == 20, "20 deliveries, each fetching the next");
        assertEquals(ints(0, 20), q.receivedCopy());
        awaitIdle(q);
        assertEquals(1, q.demand(), "the last delivery fetched one more");
    }

    @Test
    void pauseFromInsideHandleMessage() {
        TestQueue q = newQueue(4, 8);
        q.onMessage = m -> {
            if (m == 4) {
                q.pause();
            }
        };
        writeInts(q, 0, 10);
        awaitTrue(() -> q.received.size() == 5 && q.isSuspended(), "5 deliveries, then a stop");
        assertEquals(ints(0, 5), q.receivedCopy());
        assertEquals(5, pending(q));
        q.onMessage = m -> {};
        q.resume();
        awaitTrue(() -> q.received.size() == 10, "10 deliveries");
        assertEquals(ints(0, 10), q.receivedCopy());
    }

    @Test
    void aFailingHandlerIsReportedAndDeliveryGoesOn() {
        TestQueue q = newQueue(4, 8);
        q.expectedFailures = 1;
        q.onMessage = m -> {
            if (m == 2) {
                throw new IllegalStateException("handler failure " + m);
            }
        };
        writeInts(q, 0, 5);
        awaitTrue(() -> q.received.size() == 5, "5 deliveries");
        awaitTrue(() -> q.failures.size() == 1, "the failure report");
        assertEquals("handler failure 2", q.failures.get(0).getMessage());
    }

    @Test
    void closeReleasesEveryQueuedBuffer() {
        TestQueue q = newQueue(4, 8);
        q.pause();
        List<ByteBuf> buffers = writeBuffers(q, 0, 32);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        q.closeHere();
        awaitTrue(() -> q.disposed.size() == 32, "32 disposals");
        assertEquals(ints(0, 32), copy(q.disposed), "the parked buffer first, then in order");
        assertEquals(List.of(), copy(q.disposedInProducer));
        // waiting for demand, the queue has no drain under way: close takes the ownership and disposes at once,
        // but in the same-thread flavour off the loop, where it schedules the disposal on the loop
        assertEquals(
                expectSameThread() ? List.of() : ints(0, 32),
                copy(q.disposedByCloser),
                "disposed on the closing thread");
        assertAllReleased(buffers);
        assertEquals(List.of(), q.receivedCopy());
        assertEquals(0, pending(q));

        List<ByteBuf> late = writeBuffers(q, 32, 35);
        assertEquals(ints(0, 35), copy(q.disposed), "written after close: disposed at once");
        if (!expectSameThread()) {
            assertEquals(ints(32, 35), copy(q.disposedInProducer), "on the producer loop");
        }
        assertAllReleased(late);
        assertTrue(q.isClosed());
    }

    @Test
    void closeWhileUnwritableStillResumesTheProducer() {
        TestQueue q = newQueue(2, 4);
        q.pause();
        List<ByteBuf> buffers = writeBuffers(q, 0, 10);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        assertEquals(1, call(() -> q.pauses.get()));
        q.closeHere();
        awaitTrue(() -> q.resumes.get() == 1, "the resume balancing the pause");
        awaitTrue(() -> q.disposed.size() == 10, "10 disposals");
        assertAllReleased(buffers);
    }

    @Test
    void closeFromInsideHandleMessageDisposesTheRest() {
        TestQueue q = newQueue(4, 8);
        q.onMessage = m -> {
            if (m == 2) {
                q.close();
            }
        };
        q.pause();
        List<ByteBuf> buffers = writeBuffers(q, 0, 10);
        awaitTrue(q::isSuspended, "the drain to stop for demand");
        q.resume();
        awaitTrue(() -> q.received.size() + q.disposed.size() == 10, "10 deliveries or disposals");
        assertEquals(ints(0, 3), q.receivedCopy());
        assertEquals(ints(3, 10), copy(q.disposed));
        assertEquals(List.of(), copy(q.disposedInProducer));
        assertAllReleased(buffers);
    }

    @Test
    void closeOfAnIdleQueueDisposesLaterWrites() {
        TestQueue q = newQueue(4, 8);
        q.close();
        q.close();
        List<ByteBuf> buffers = writeBuffers(q, 0, 4);
        assertEquals(ints(0, 4), copy(q.disposed));
        assertAllReleased(buffers);
        assertEquals(List.of(), q.receivedCopy());
    }

    // ------------------------------------------------------------------ helpers

    static List<Integer> ints(int from, int to) {
        return IntStream.range(from, to).boxed().collect(Collectors.toList());
    }

    void writeInts(TestQueue q, int from, int to) {
        onProducer(() -> {
            for (int i = from; i < to; i++) {
                q.writeCounting(i);
            }
        });
    }

    List<ByteBuf> writeBuffers(TestQueue q, int from, int to) {
        List<ByteBuf> buffers = new ArrayList<>();
        for (int i = from; i < to; i++) {
            buffers.add(PooledByteBufAllocator.DEFAULT.directBuffer(16).writeInt(i));
        }
        onProducer(() -> {
            for (ByteBuf buffer : buffers) {
                q.writeCounting(buffer);
            }
        });
        return buffers;
    }

    static <T> List<T> copy(List<T> synchronizedList) {
        synchronized (synchronizedList) {
            return new ArrayList<>(synchronizedList);
        }
    }

    static void assertAllReleased(List<ByteBuf> buffers) {
        for (ByteBuf buffer : buffers) {
            assertEquals(0, buffer.refCnt(), "every buffer released");
        }
    }

    void onProducer(Runnable task) {
        producer.submit(task).syncUninterruptibly();
    }

    <T> T call(Callable<T> task) {
        return producer.submit(task).syncUninterruptibly().getNow();
    }

    /** Read on the producer loop: exact in both flavours. */
    long pending(TestQueue q) {
        return call(q::pending);
    }

    /** Waits until the queue has nothing pending and no drain is left to run. */
    void awaitIdle(TestQueue q) {
        awaitTrue(() -> pending(q) == 0, "an empty queue");
    }

    static void awaitTrue(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted waiting for " + what);
            }
        }
    }

    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                fail("timed out on a latch");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail("interrupted");
        }
    }

    /** Records what happens, checking the thread and turn of every callback. */
    final class TestQueue extends InboundMessageQueue<Object> {
        final List<Integer> received = Collections.synchronizedList(new ArrayList<>());
        final List<Integer> disposed = Collections.synchronizedList(new ArrayList<>());
        /** Disposed on the producer loop when it is not the consumer's thread. */
        final List<Integer> disposedInProducer = Collections.synchronizedList(new ArrayList<>());
        /** Disposed by {@link #close()} on the closing thread (neither the consumer's nor the producer's). */
        final List<Integer> disposedByCloser = Collections.synchronizedList(new ArrayList<>());
        /** The threads that called {@link #closeHere()}. */
        final java.util.Set<Thread> closers = java.util.concurrent.ConcurrentHashMap.newKeySet();

        final List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        final List<String> violations = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger pauses = new AtomicInteger();
        final AtomicInteger resumes = new AtomicInteger();
        final List<Integer> pausedAfterWriting = Collections.synchronizedList(new ArrayList<>());
        private final AtomicBoolean delivering = new AtomicBoolean();
        volatile Consumer<Integer> onMessage = m -> {};
        /** Which messages {@link #handleUnwanted} drops; none by default. */
        volatile java.util.function.IntPredicate unwanted = v -> false;

        final List<Integer> dropped = Collections.synchronizedList(new ArrayList<>());
        volatile int expectedFailures;

        // producer loop only
        private boolean producerPaused;
        private int writing = -1;

        TestQueue(Executor producerLoop, Executor consumer, int low, int high) {
            super(producerLoop, consumer, low, high);
        }

        void writeCounting(Object message) {
            writing = value(message);
            write(message);
        }

        /** {@link #close()}, the calling thread allowed to dispose of what it takes back. */
        void closeHere() {
            closers.add(Thread.currentThread());
            close();
        }

        List<Integer> receivedCopy() {
            return copy(received);
        }

        private static int value(Object message) {
            return message instanceof ByteBuf buffer ? buffer.getInt(0) : (Integer) message;
        }

        @Override
        protected void handleMessage(Object message) {
            if (!onConsumerThread()) {
                violations.add("handleMessage on " + Thread.currentThread());
            }
            if (!delivering.compareAndSet(false, true)) {
                violations.add("two deliveries at once");
            }
            try {
                int value = value(message);
                if (message instanceof ByteBuf buffer) {
                    buffer.release(); // the handler owns what it is given
                }
                received.add(value);
                onMessage.accept(value);
            } finally {
                delivering.set(false);
            }
        }

        @Override
        protected boolean handleUnwanted(Object message) {
            if (!onConsumerThread()) {
                violations.add("handleUnwanted on " + Thread.currentThread());
            }
            int value = value(message);
            if (!unwanted.test(value)) {
                return false;
            }
            dropped.add(value);
            super.handleDispose(message);
            return true;
        }

        @Override
        protected void handlePause() {
            if (!producer.inEventLoop()) {
                violations.add("handlePause on " + Thread.currentThread());
            }
            if (producerPaused) {
                violations.add("two pauses without a resume between");
            }
            producerPaused = true;
            pausedAfterWriting.add(writing);
            pauses.incrementAndGet();
        }

        @Override
        protected void handleResume() {
            if (!producer.inEventLoop()) {
                violations.add("handleResume on " + Thread.currentThread());
            }
            if (!producerPaused) {
                violations.add("a resume without a pause");
            }
            producerPaused = false;
            resumes.incrementAndGet();
        }

        @Override
        protected void handleDispose(Object message) {
            int value = value(message);
            boolean consumerThread = onConsumerThread();
            boolean producerThread = !consumerThread && producer.inEventLoop();
            boolean closer = !consumerThread && !producerThread && closers.contains(Thread.currentThread());
            if (!consumerThread && !producerThread && !closer) {
                violations.add("handleDispose on " + Thread.currentThread());
            }
            if (closer && delivering.get()) {
                violations.add("a disposal by close() during a delivery");
            }
            disposed.add(value);
            if (producerThread) {
                disposedInProducer.add(value);
            } else if (closer) {
                disposedByCloser.add(value);
            }
            super.handleDispose(message);
        }

        @Override
        protected void handleFailure(Throwable failure) {
            failures.add(failure);
        }
    }
}
