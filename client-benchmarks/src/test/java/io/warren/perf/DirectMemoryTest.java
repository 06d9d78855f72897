package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;

class DirectMemoryTest {

    @Test
    void aPooledChunkCountsOnceThoughNettyCountsItToo() {
        // one direct arena, 4 MiB chunks: the first buffer takes a chunk of its own
        PooledByteBufAllocator pool = new PooledByteBufAllocator(true, 0, 1, 8192, 9);
        int chunk = pool.metric().chunkSize();
        long before = DirectMemory.used();
        ByteBuf buffer = pool.directBuffer(16);
        try {
            long grown = DirectMemory.used() - before;
            // Netty 4.2 counts its chunks even when they have a cleaner, and the JDK's pool holds them: added up, a
            // chunk counted twice (warren-perf showed 32 MiB of direct memory for 16 MiB of chunks)
            assertTrue(grown >= chunk && grown < 2L * chunk, "grown by " + grown + " for a chunk of " + chunk);
        } finally {
            buffer.release();
        }
    }

    @Test
    void peaksAreTheLargestValuesSampledOrRecorded() throws Exception {
        long[] value = {5};
        PeakSampler sampler = new PeakSampler("peak-sampler-test", 1_000_000, () -> value[0], () -> -value[0]);
        sampler.record(0, 42);
        sampler.close(); // one last round of reads: 5 and -5
        assertEquals(42, sampler.peak(0));
        assertEquals(-5, sampler.peak(1), "a gauge's peak starts from its first reading, not from 0");
    }
}
