package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.concurrent.DefaultEventExecutor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The head and end-octet buffers a connection reuses for single-frame publishes. */
class PublishBuffersTest {

    @Test
    void aHeadReleasedOnTheLoopIsTheNextHeadEmptyAgain() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT);
        ByteBuf head = buffers.head(40);
        head.writeLong(42).writeInt(7);
        assertTrue(head.release());
        ByteBuf again = buffers.head(60);
        try {
            assertSame(head, again, "kept and taken again: no new buffer object");
            assertEquals(1, again.refCnt());
            assertEquals(0, again.readerIndex());
            assertEquals(0, again.writerIndex());
        } finally {
            again.release();
            loop.finishAndReleaseAll();
        }
    }

    @Test
    void theEndOctetKeepsItsByteAndHasNoRoomForAnother() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT);
        ByteBuf end = buffers.endOctet();
        assertEquals(1, end.readableBytes());
        assertEquals(1, end.maxCapacity(), "a coalescing handler cannot append to it");
        end.readByte(); // the socket read it
        end.release();
        ByteBuf again = buffers.endOctet();
        try {
            assertSame(end, again);
            assertEquals(1, again.readableBytes());
            assertEquals(0xCE, again.getUnsignedByte(again.readerIndex()));
        } finally {
            again.release();
            loop.finishAndReleaseAll();
        }
    }

    @Test
    void aHeadTooLargeToKeepComesFromTheAllocatorAtItsExactSize() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT);
        ByteBuf head = buffers.head(PublishBuffers.HEAD_CAPACITY + 1);
        try {
            assertEquals(PublishBuffers.HEAD_CAPACITY + 1, head.maxCapacity());
        } finally {
            head.release();
        }
        ByteBuf next = buffers.head(PublishBuffers.HEAD_CAPACITY + 1);
        try {
            assertNotSame(head, next);
        } finally {
            next.release();
            loop.finishAndReleaseAll();
        }
    }

    @Test
    void aBufferReleasedOffTheLoopIsNotKept() throws Exception {
        DefaultEventExecutor loop = new DefaultEventExecutor();
        try {
            PublishBuffers buffers = new PublishBuffers(loop, ByteBufAllocator.DEFAULT);
            ByteBuf head = loop.submit(() -> buffers.head(10)).get(10, TimeUnit.SECONDS);
            head.release(); // on the test thread: the loop's stack is not touched
            ByteBuf next = loop.submit(() -> buffers.head(10)).get(10, TimeUnit.SECONDS);
            try {
                assertNotSame(head, next);
            } finally {
                loop.submit(() -> next.release()).get(10, TimeUnit.SECONDS);
            }
        } finally {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void aConnectionThatNeverPublishedKeepsNoStack() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT);
        assertEquals(0, buffers.keptCapacity(), "an idle connection pays for no slots");
        loop.finishAndReleaseAll();
    }

    @Test
    void theStacksGrowWithThePublishesInFlightAtOnce() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT);
        List<ByteBuf> inFlight = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            inFlight.add(buffers.head(20));
        }
        inFlight.forEach(ByteBuf::release);
        assertTrue(
                buffers.keptCapacity() >= 40 && buffers.keptCapacity() <= 80,
                "room for the 40 heads kept, not for 4096: " + buffers.keptCapacity());
        Set<ByteBuf> again = Collections.newSetFromMap(new IdentityHashMap<>());
        for (int i = 0; i < 40; i++) {
            again.add(buffers.head(20));
        }
        try {
            assertEquals(40, again.size(), "40 distinct buffers");
            assertTrue(again.containsAll(inFlight), "every kept head is taken again: none was dropped as it grew");
        } finally {
            again.forEach(ByteBuf::release);
            loop.finishAndReleaseAll();
        }
    }

    @Test
    void headsABurstLeftAreFreedDownToTheFloorOnceUnusedForATrimInterval() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT, 1_000_000);
        takeAndRelease(buffers, 200); // a burst: 200 publishes in flight at once
        assertEquals(200, buffers.keptHeads());
        loop.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        assertEquals(200, buffers.keptHeads(), "the first trim finds them all used since the start");
        loop.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        assertEquals(PublishBuffers.TRIM_FLOOR, buffers.keptHeads(), "none taken for a whole interval: freed");
        assertTrue(
                buffers.keptCapacity() <= 4 * PublishBuffers.TRIM_FLOOR,
                "slots given back too: " + buffers.keptCapacity());
        loop.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        assertEquals(-1, loop.runScheduledPendingTasks(), "at the floor no trim is scheduled");
        takeAndRelease(buffers, 40); // the kept ones are taken again, and new ones made
        assertEquals(40, buffers.keptHeads());
        loop.finishAndReleaseAll();
    }

    @Test
    void headsTakenInEveryIntervalAreKept() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT, 1_000_000);
        takeAndRelease(buffers, 100);
        for (int i = 0; i < 5; i++) {
            takeAndRelease(buffers, 100); // 100 in flight in each interval
            loop.advanceTimeBy(1, TimeUnit.MILLISECONDS);
            loop.runScheduledPendingTasks();
            assertEquals(100, buffers.keptHeads(), "interval " + i);
        }
        takeAndRelease(buffers, 30); // only 30 in flight this time: 70 went unused
        loop.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        assertEquals(30, buffers.keptHeads());
        loop.finishAndReleaseAll();
    }

    @Test
    void oneTrimFreesAtMostItsShareAndTheNextOnesTheRest() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT, 1_000_000);
        takeAndRelease(buffers, 600);
        int[] expected = {600, 600, 600 - 256, 600 - 512}; // the first trim finds them all used since the start
        for (int want : expected) {
            assertEquals(want, buffers.keptHeads());
            loop.advanceTimeBy(1, TimeUnit.MILLISECONDS);
            loop.runScheduledPendingTasks();
        }
        assertEquals(PublishBuffers.TRIM_FLOOR, buffers.keptHeads());
        loop.finishAndReleaseAll();
    }

    @Test
    void aHeadReleasedTwiceIsRefusedTheSecondTimeAndKeptOnce() {
        EmbeddedChannel loop = new EmbeddedChannel();
        PublishBuffers buffers = new PublishBuffers(loop.eventLoop(), ByteBufAllocator.DEFAULT);
        ByteBuf head = buffers.head(10);
        head.release();
        assertThrows(IllegalReferenceCountException.class, head::release);
        assertEquals(1, buffers.keptHeads(), "kept once");
        ByteBuf a = buffers.head(10);
        ByteBuf b = buffers.head(10);
        try {
            assertNotSame(a, b, "never one buffer for two publishes");
        } finally {
            a.release();
            b.release();
            loop.finishAndReleaseAll();
        }
    }

    /** Takes {@code n} heads at once and releases them all, on the embedded loop (the test's thread). */
    private static void takeAndRelease(PublishBuffers buffers, int n) {
        List<ByteBuf> inFlight = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            inFlight.add(buffers.head(20).writeInt(i));
        }
        inFlight.forEach(ByteBuf::release);
    }
}
