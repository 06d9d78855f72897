package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
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
}
