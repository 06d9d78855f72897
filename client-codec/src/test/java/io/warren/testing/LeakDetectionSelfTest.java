package io.warren.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Proves that the leak machinery the whole build relies on catches a real leak: a buffer is dropped
 * unreleased, and the recorder must report it. The report is then taken out of the recorder (the
 * sandbox), so this deliberate leak does not fail the class.
 */
class LeakDetectionSelfTest {

    @Test
    void aDroppedBufferIsReported() {
        String marker = "deliberate-leak-" + UUID.randomUUID();
        leakOne(marker);
        List<String> reports = LeakRecorder.take(marker);
        assertEquals(1, reports.size(), "the dropped buffer must be reported exactly once: " + reports);
        assertTrue(reports.get(0).contains("release() was not called"), reports.get(0));
    }

    @Test
    void aReleasedBufferIsNotReported() {
        String marker = "released-" + UUID.randomUUID();
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(64);
        buf.touch(marker);
        buf.release();
        assertTrue(LeakRecorder.take(marker).isEmpty());
    }

    private static void leakOne(String marker) {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(64);
        buf.writeLong(42);
        buf.touch(marker); // the hint appears in the leak's records, so we find exactly this one
        // dropped here without release()
    }
}
