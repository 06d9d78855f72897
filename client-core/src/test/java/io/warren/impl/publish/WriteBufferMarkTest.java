package io.warren.impl.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.PublishOptions;
import org.junit.jupiter.api.Test;

/** What follows from a connection's high-water mark, before and after the raise a large publish makes. */
class WriteBufferMarkTest {

    private static final int DEFAULT = PublishOptions.DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK;

    @Test
    void theRaiseTakesTheFlushThresholdAndTheQueueMarkWithItButNotTheLargeHeapBodySize() {
        EmbeddedChannel channel = new EmbeddedChannel();
        WriteBufferMark mark = new WriteBufferMark(channel.config(), new PublishOptions(), true);
        assertEquals(DEFAULT, channel.config().getWriteBufferHighWaterMark());
        assertEquals(DEFAULT / 2, mark.flushThreshold());
        mark.publishing(DEFAULT / 4 - 1);
        assertEquals(DEFAULT, mark.high(), "a publish below a quarter of the mark keeps it");

        // a 64 KiB body: two of them filled the queue's mark, and their publisher stopped every other message
        mark.publishing(DEFAULT / 4);
        assertEquals(WriteBufferMark.LARGE_MESSAGE_MARK, channel.config().getWriteBufferHighWaterMark());
        assertEquals(WriteBufferMark.LARGE_MESSAGE_MARK / 2, channel.config().getWriteBufferLowWaterMark());
        assertEquals(WriteBufferMark.LARGE_MESSAGE_MARK / 2, mark.flushThreshold());
        assertEquals(WriteBufferMark.LARGE_MESSAGE_MARK / 2, mark.queueMark());
        // the bodies that raised it must still wait for an unwritable socket
        assertEquals(DEFAULT / 4, mark.largeHeapBody());
        channel.finishAndReleaseAll();
    }

    @Test
    void whereAWaitingHeapBodyWouldCostDirectMemoryTheMarkIsNotRaised() {
        EmbeddedChannel channel = new EmbeddedChannel();
        WriteBufferMark mark = new WriteBufferMark(channel.config(), new PublishOptions(), false);
        mark.publishing(8 << 20);
        assertEquals(DEFAULT, channel.config().getWriteBufferHighWaterMark());
        assertEquals(DEFAULT / 2, mark.flushThreshold());
        channel.finishAndReleaseAll();
    }
}
