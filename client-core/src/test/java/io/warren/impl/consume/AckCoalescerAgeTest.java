package io.warren.impl.consume;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Test;

/**
 * The delivery time of the oldest tag still waiting for the application ({@link AckCoalescer#oldestPendingSince()}),
 * which the unacknowledged-age metric reads: it follows settlements in and out of order, ignores noAck tags, and
 * survives the ring's growth and the spill of long-held tags to the stragglers.
 */
class AckCoalescerAgeTest {

    private final AckCoalescer acks = new AckCoalescer(1, UnpooledByteBufAllocator.DEFAULT);

    /** Takes (and drops) the frames, as the channel's flush does before it reads the age. */
    private long afterFlush() {
        ByteBuf frames = acks.takeFrames();
        if (frames != null) {
            frames.release();
        }
        return acks.oldestPendingSince();
    }

    @Test
    void theOldestWaitingTagsTimeFollowsSettlementsInAndOutOfOrder() {
        assertEquals(AckCoalescer.NONE, acks.oldestPendingSince());
        acks.delivered(1, false, 5); // noAck: waits for nothing
        assertEquals(AckCoalescer.NONE, acks.oldestPendingSince());
        acks.delivered(2, true, 10);
        acks.delivered(3, true, 20);
        acks.delivered(4, true, 30);
        assertEquals(10, acks.oldestPendingSince());
        acks.settle(3, AckCoalescer.ACK); // above the oldest: it still waits
        assertEquals(10, afterFlush());
        acks.settle(2, AckCoalescer.ACK);
        assertEquals(30, afterFlush(), "3 was acked already: 4 is the oldest now");
        acks.settle(4, AckCoalescer.REJECT);
        assertEquals(AckCoalescer.NONE, afterFlush());
    }

    @Test
    void aTagHeldPastTheRingsLargestSizeKeepsItsTimeAsAStraggler() {
        acks.delivered(1, true, 1);
        int n = AckCoalescer.MAX_CAPACITY + 10;
        for (int t = 2; t <= n; t++) {
            acks.delivered(t, true, 100 + t);
            acks.settle(t, AckCoalescer.ACK);
            if (t % 1000 == 0) {
                afterFlush();
            }
        }
        assertEquals(1, acks.stragglerCount(), "tag 1 spilled out of the ring");
        assertEquals(1, afterFlush(), "held the longest, it is still the oldest");
        acks.delivered(n + 1, true, 7_000_000);
        acks.settle(1, AckCoalescer.ACK);
        assertEquals(7_000_000, afterFlush());
    }
}
