package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The client's CPU is told apart into the producer threads' part and the rest, each thread in its own part. */
class ResourceMeterTest {

    private static final long BURN_NANOS = 100_000_000L;

    @Test
    void theProducerThreadsPartHoldsTheirCpuAndNoOtherThreads() throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        assumeTrue(mx.isThreadCpuTimeSupported(), "this JVM does not measure a thread's CPU time");
        ResourceMeter meter = new ResourceMeter(null);
        CountDownLatch burnt = new CountDownLatch(2);
        CountDownLatch end = new CountDownLatch(1);
        meter.start();
        // both stay alive until the meter stops, as a run's producers and event loops do
        Thread producer = burner("warren-perf-producer-0", burnt, end);
        Thread client = burner("warren-io-test", burnt, end);
        producer.start();
        client.start();
        burnt.await();
        ResourceMeter.Usage usage = meter.stop();
        end.countDown();
        producer.join();
        client.join();

        assertNotNull(RunResult.producerCpuNanos(usage, 1), "the producer was alive at the end");
        long producerPart = usage.producerCpuNanos();
        assertTrue(producerPart >= BURN_NANOS, "the producer's own CPU is in its part: " + producerPart);
        assertTrue(producerPart < 2 * BURN_NANOS, "the other thread's CPU is not: " + producerPart);
        // the process's clock and a thread's are read apart: a small difference is theirs, not a thread counted twice
        assertTrue(
                usage.cpuNanos() - producerPart >= BURN_NANOS * 9 / 10,
                "the other thread's CPU is in the rest: " + (usage.cpuNanos() - producerPart));
    }

    @Test
    void aRunWhoseProducerEndedBeforeItTellsNoProducerShare() throws Exception {
        ResourceMeter meter = new ResourceMeter(null);
        meter.start();
        Thread producer = new Thread(() -> {}, "warren-perf-producer-0"); // a count-bound producer, done early
        producer.start();
        producer.join();
        ResourceMeter.Usage usage = meter.stop();
        assertEquals(0, usage.producerThreadsAtEnd());
        // its CPU would be in "other threads": no share is told rather than a wrong one
        assertNull(RunResult.producerCpuNanos(usage, 1));
        assertNull(RunResult.producerCpuNanos(usage, 0), "a run without producers has no producer share");
    }

    /** A chunk of its own: beyond any chunk Netty holds already. */
    private static final int CHUNK = 8 * 1024 * 1024;

    /**
     * Netty's pools outlive the Warren run that filled them; a later amqp-client run in the same JVM must not count
     * them as its direct memory, and a client on Netty must.
     */
    @Test
    void aClientNotOnNettyLeavesNettysPoolsOutOfItsDirectMemory() {
        long[] peaks = peaksWhileHeld(
                PooledByteBufAllocator.DEFAULT,
                new ResourceMeter(null, false, false),
                new ResourceMeter(null, true, false));
        assertTrue(peaks[1] >= CHUNK, "the client on Netty holds the buffer: " + peaks[1]);
        assertTrue(peaks[0] < CHUNK, "the other client does not: " + peaks[0]);
    }

    /** The in-process peer's buffers (its own allocator) are not the client's, whichever client runs. */
    @Test
    void theInProcessPeersDirectMemoryIsLeftOut() {
        long[] peaks = peaksWhileHeld(
                LoopbackPeer.ALLOC, new ResourceMeter(null, true, true), new ResourceMeter(null, true, false));
        assertTrue(peaks[1] - peaks[0] >= CHUNK, peaks[1] + " against " + peaks[0]);
    }

    /** The two meters' peak direct memory over a sample taken while {@code alloc} holds a {@link #CHUNK}. */
    private static long[] peaksWhileHeld(ByteBufAllocator alloc, ResourceMeter first, ResourceMeter second) {
        assumeTrue(DirectMemory.measured(), "this JVM does not report direct memory");
        first.start();
        second.start();
        ByteBuf held = alloc.directBuffer(CHUNK, CHUNK);
        try {
            first.sampleDirect();
            second.sampleDirect();
        } finally {
            held.release();
        }
        return new long[] {first.stop().peakDirectBytes(), second.stop().peakDirectBytes()};
    }

    /** A thread that spins until it has used {@link #BURN_NANOS} of CPU, then waits for {@code end}. */
    private static Thread burner(String name, CountDownLatch burnt, CountDownLatch end) {
        return new Thread(
                () -> {
                    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
                    long start = mx.getCurrentThreadCpuTime();
                    long spins = 0;
                    while (mx.getCurrentThreadCpuTime() - start < BURN_NANOS) {
                        spins++;
                    }
                    burnt.countDown();
                    try {
                        end.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    if (spins < 0) {
                        throw new AssertionError(); // keeps the loop's work
                    }
                },
                name);
    }
}
