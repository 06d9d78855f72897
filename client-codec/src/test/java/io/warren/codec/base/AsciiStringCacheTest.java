package io.warren.codec.base;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The cache compares whole words: every length class (1, 2-3, 4-7, 8-16, longer) must still see every byte. */
class AsciiStringCacheTest {

    private static String text(int length, char fill) {
        StringBuilder b = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            b.append((char) ('a' + (i * 7 + fill) % 26));
        }
        return b.toString();
    }

    private static ByteBuf direct(String s, int at) {
        byte[] bytes = s.getBytes(StandardCharsets.US_ASCII);
        return Unpooled.directBuffer(at + bytes.length).writeZero(at).writeBytes(bytes);
    }

    @Test
    void everyLengthHitsForTheSameBytesWhereverTheyLie() {
        for (int length = 1; length <= AsciiStringCache.MAX_CACHED_LENGTH + 2; length++) {
            String s = text(length, 'q');
            ByteBuf heap = Unpooled.wrappedBuffer(s.getBytes(StandardCharsets.US_ASCII));
            ByteBuf offset = direct(s, 5);
            AsciiString first = AsciiStringCache.get(heap, 0, length);
            AsciiString second = AsciiStringCache.get(offset, 5, length);
            assertEquals(s, first.toString(), "length " + length);
            assertEquals(s, second.toString(), "length " + length);
            if (length <= AsciiStringCache.MAX_CACHED_LENGTH) {
                assertSame(first, second, "length " + length);
            } else {
                assertNotSame(first, second, "longer strings are not cached, length " + length);
            }
            heap.release();
            offset.release();
        }
    }

    @Test
    void aDifferenceInAnyByteIsAMiss() {
        // same length, same first and last words: only the byte at i differs, for every i and length class
        for (int length : new int[] {1, 2, 3, 5, 8, 12, 16, 17, 24, 25, 40, 128}) {
            String s = text(length, 'c');
            for (int i = 0; i < length; i++) {
                char[] other = s.toCharArray();
                other[i] = other[i] == 'Z' ? 'Y' : 'Z';
                String t = new String(other);
                ByteBuf a = direct(s, 0);
                ByteBuf b = direct(t, 0);
                AsciiString cached = AsciiStringCache.get(a, 0, length);
                AsciiString looked = AsciiStringCache.get(b, 0, length);
                assertEquals(t, looked.toString(), "length " + length + ", byte " + i);
                assertNotSame(cached, looked);
                assertEquals(s, AsciiStringCache.get(a, 0, length).toString());
                a.release();
                b.release();
            }
        }
    }

    @Test
    void prefixesOfOneAnotherAreDifferentStrings() {
        ByteBuf buf = direct("amq.ctag-0123456789abcdef", 0);
        for (int length = 1; length <= buf.readableBytes(); length++) {
            assertEquals(
                    "amq.ctag-0123456789abcdef".substring(0, length),
                    AsciiStringCache.get(buf, 0, length).toString());
        }
        buf.release();
    }

    @Test
    void theBufferIndicesDoNotMove() {
        ByteBuf buf = direct("xxbench.routing.key", 2);
        buf.readerIndex(1);
        AsciiStringCache.get(buf, 4, 17);
        assertEquals(1, buf.readerIndex());
        assertEquals(buf.capacity(), buf.writerIndex());
        buf.release();
    }

    @Test
    void aStringRunningPastTheBufferIsRefusedOnEveryPath() {
        // the direct buffers' words are read from memory after one bounds check: it must hold as ByteBuf's does
        ByteBuf direct = Unpooled.directBuffer(8).writeByte(20).writeBytes(new byte[] {'a', 'b', 'c'});
        ByteBuf slice = direct.slice(0, 4);
        ByteBuf heap = Unpooled.buffer(8).writeByte(20).writeBytes(new byte[] {'a', 'b', 'c'});
        for (ByteBuf buf : new ByteBuf[] {direct, slice, heap}) {
            assertThrows(IndexOutOfBoundsException.class, () -> AsciiStringCache.shortString(buf, 0), buf.toString());
            assertThrows(IndexOutOfBoundsException.class, () -> AsciiStringCache.shortString(buf, -1), buf.toString());
            assertThrows(IndexOutOfBoundsException.class, () -> AsciiStringCache.get(buf, 1, 20), buf.toString());
        }
        assertEquals(new AsciiString("abc"), AsciiStringCache.get(slice, 1, 3));
        assertThrows(IndexOutOfBoundsException.class, () -> AsciiStringCache.get(slice, 2, 3));
        direct.release();
        heap.release();
    }

    @Test
    void aReleasedDirectBufferIsNotRead() {
        ByteBuf buf = direct("amq.ctag-bench", 0);
        buf.release();
        assertThrows(io.netty.util.IllegalReferenceCountException.class, () -> AsciiStringCache.get(buf, 0, 14));
    }

    @Test
    void aReleasedSliceIsNotReadWhileItsReadBufferLives() {
        // a frame's payload: a pooled retained slice, released on its own while other frames keep the read alive
        ByteBuf read = io.netty.buffer.PooledByteBufAllocator.DEFAULT
                .directBuffer(32)
                .writeByte(14)
                .writeBytes("amq.ctag-bench".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        ByteBuf payload = read.retainedSlice(0, 15);
        assertEquals(new AsciiString("amq.ctag-bench"), AsciiStringCache.shortString(payload, 0));
        payload.release();
        try {
            assertThrows(
                    io.netty.util.IllegalReferenceCountException.class, () -> AsciiStringCache.shortString(payload, 0));
            assertThrows(
                    io.netty.util.IllegalReferenceCountException.class, () -> AsciiStringCache.get(payload, 1, 14));
        } finally {
            read.release();
        }
    }
}
