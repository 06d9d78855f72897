package io.warren.codec.base;

import io.netty.buffer.ByteBuf;
import io.netty.util.AsciiString;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.internal.MathUtil;
import io.netty.util.internal.PlatformDependent;
import io.warren.codec.impl.RawMemory;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Turns short strings read from a frame into {@link AsciiString}s without allocating when the same
 * bytes were seen recently: exchange names, routing keys, consumer tags and header names repeat on
 * every delivery.
 *
 * <p>A direct-mapped table of {@value #SIZE} entries indexed by a hash of the bytes; a hit compares the
 * bytes and returns the cached instance, a miss allocates one copy and replaces the slot. Shared by
 * all threads without locks: entries are immutable, safely published through their final fields, so a
 * racing reader sees either the old entry or the new one, both correct for their own bytes (the bytes
 * are always compared).
 *
 * <p>A lookup reads the buffer in 8-byte words (4, 2 or 1 below 8 bytes): the first and the last word
 * (overlapping when the string is shorter than 16 bytes) give the hash, and with the length they are the
 * whole string up to 16 bytes, so such a hit costs two buffer reads and two compares; longer strings
 * compare the words between. Nothing is copied and no thread-local scratch is looked up: every
 * {@code ByteBuf} read pays a bounds and reference-count check, so the fewer the better. A buffer with
 * a memory address (a pooled direct buffer, what socket reads fill) pays them once per string: its
 * words are read straight from memory after one bounds check.
 *
 * <p>The strings hold the raw bytes of the wire, which AMQP defines as UTF-8: {@code toString()} on an
 * {@code AsciiString} maps each byte to one char, which is right only for ASCII. The views'
 * {@code xxxAsString()} accessors decode UTF-8.
 */
public final class AsciiStringCache {

    /** Number of slots (a power of two). */
    static final int SIZE = 2048;

    /** Strings longer than this are not cached: they rarely repeat and would evict those that do. */
    static final int MAX_CACHED_LENGTH = 128;

    /** Big-endian words of a byte array, the order {@link ByteBuf#getLong} reads in. */
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private static final Entry[] ENTRIES = new Entry[SIZE];

    /** Whether buffers with a memory address (pooled direct ones: every socket read) are read from memory directly. */
    private static final boolean RAW = RawMemory.AVAILABLE;

    /** A cached string with its first and last word, as {@link #first} and {@link #last} read them. */
    private static final class Entry {
        final AsciiString string;
        final byte[] bytes;
        final long first;
        final long last;

        Entry(byte[] bytes, long first, long last) {
            this.string = new AsciiString(bytes, false);
            this.bytes = bytes;
            this.first = first;
            this.last = last;
        }
    }

    private AsciiStringCache() {}

    /** The shortstr at {@code index} (its length octet) of {@code buf}; the buffer's indices are not moved. */
    public static AsciiString shortString(ByteBuf buf, int index) {
        if (RAW && buf.hasMemoryAddress()) {
            // one accessibility check (in memoryAddress()) and one bounds check for the length octet and the
            // bytes, instead of both on each of the three to five reads below
            long address = buf.memoryAddress();
            checkReadable(buf, index, 1);
            int length = RawMemory.getUnsignedByte(address + index);
            checkBounds(buf, index + 1, length);
            return lookup(buf, address + index + 1, index + 1, length);
        }
        return lookup(buf, 0, index + 1, buf.getUnsignedByte(index));
    }

    /** The {@code length} bytes at {@code index} of {@code buf} as an {@code AsciiString}, cached. */
    public static AsciiString get(ByteBuf buf, int index, int length) {
        if (RAW && buf.hasMemoryAddress()) {
            long address = buf.memoryAddress();
            checkReadable(buf, index, length);
            return lookup(buf, address + index, index, length);
        }
        return lookup(buf, 0, index, length);
    }

    /**
     * The cached string for the {@code length} bytes at {@code index}. {@code at} is their memory address, which the
     * caller checked (accessible, within bounds) so that the words are read without a check each, or 0: then they
     * are read through the buffer's checked getters.
     */
    private static AsciiString lookup(ByteBuf buf, long at, int index, int length) {
        if (length == 0) {
            return AsciiString.EMPTY_STRING;
        }
        if (length > MAX_CACHED_LENGTH) {
            return new AsciiString(copy(buf, index, length), false);
        }
        long first = at != 0 ? rawFirst(at, length) : first(buf, index, length);
        long last = at != 0 ? rawLast(at, length) : last(buf, index, length);
        int slot = slot(first, last, length);
        Entry entry = ENTRIES[slot];
        if (entry != null
                && entry.first == first
                && entry.last == last
                && entry.bytes.length == length
                && (length <= 16
                        || (at != 0
                                ? rawMiddleEquals(at, length, entry.bytes)
                                : middleEquals(buf, index, length, entry.bytes)))) {
            return entry.string;
        }
        Entry fresh = new Entry(copy(buf, index, length), first, last);
        ENTRIES[slot] = fresh;
        return fresh.string;
    }

    /**
     * {@link #checkBounds}, and that {@code buf} itself is not released: {@code memoryAddress()} of a derived buffer
     * (a frame's pooled slice) checks only its root, so a slice released on its own while the read buffer lives
     * would be read silently, where ByteBuf's getters throw.
     */
    private static void checkReadable(ByteBuf buf, int index, int length) {
        if (buf.refCnt() == 0) {
            throw new IllegalReferenceCountException(0);
        }
        checkBounds(buf, index, length);
    }

    /** What {@code ByteBuf.checkIndex} does, once for a whole string: raw reads must stay inside the buffer. */
    private static void checkBounds(ByteBuf buf, int index, int length) {
        if (MathUtil.isOutOfBounds(index, length, buf.capacity())) {
            throw new IndexOutOfBoundsException(
                    "index: " + index + ", length: " + length + " (expected: range(0, " + buf.capacity() + "))");
        }
    }

    /** {@link #first} from memory. */
    private static long rawFirst(long at, int length) {
        if (length >= 8) {
            return RawMemory.getLong(at);
        }
        if (length >= 4) {
            return RawMemory.getUnsignedInt(at);
        }
        return length >= 2 ? RawMemory.getUnsignedShort(at) : RawMemory.getUnsignedByte(at);
    }

    /** {@link #last} from memory. */
    private static long rawLast(long at, int length) {
        if (length >= 8) {
            return RawMemory.getLong(at + length - 8);
        }
        if (length >= 4) {
            return RawMemory.getUnsignedInt(at + length - 4);
        }
        return length >= 2 ? RawMemory.getUnsignedShort(at + length - 2) : RawMemory.getUnsignedByte(at);
    }

    /** {@link #middleEquals} from memory; equality needs no byte order, so both sides are read natively. */
    private static boolean rawMiddleEquals(long at, int length, byte[] bytes) {
        for (int i = 8; i < length - 8; i += 8) {
            if (RawMemory.getLongNative(at + i) != PlatformDependent.getLong(bytes, i)) {
                return false;
            }
        }
        return true;
    }

    /** Bytes 0..7 as a big-endian word, or all of them (1 to 7) zero-extended. */
    private static long first(ByteBuf buf, int index, int length) {
        if (length >= 8) {
            return buf.getLong(index);
        }
        if (length >= 4) {
            return buf.getUnsignedInt(index);
        }
        return length >= 2 ? buf.getUnsignedShort(index) : buf.getUnsignedByte(index);
    }

    /** The last 8 bytes (4, 2, 1 below 8), overlapping {@link #first} when shorter than 16 (or 8, 4, 2). */
    private static long last(ByteBuf buf, int index, int length) {
        if (length >= 8) {
            return buf.getLong(index + length - 8);
        }
        if (length >= 4) {
            return buf.getUnsignedInt(index + length - 4);
        }
        return length >= 2 ? buf.getUnsignedShort(index + length - 2) : buf.getUnsignedByte(index);
    }

    /** Words 8.. up to the last one (which {@link #last} covered) compared with {@code bytes}; length > 16. */
    private static boolean middleEquals(ByteBuf buf, int index, int length, byte[] bytes) {
        for (int i = 8; i < length - 8; i += 8) {
            if (buf.getLong(index + i) != (long) LONGS.get(bytes, i)) {
                return false;
            }
        }
        return true;
    }

    /**
     * The slot of a string from its first and last words and length: two multiplies spread names that
     * share a prefix ({@code amq.ctag-...}) or a suffix over the slots; equality is always checked.
     */
    private static int slot(long first, long last, int length) {
        long h = (first * 0x9E3779B97F4A7C15L) ^ (last * 0xC2B2AE3D27D4EB4FL) ^ length;
        int folded = (int) (h ^ (h >>> 29) ^ (h >>> 47));
        return folded & (SIZE - 1);
    }

    private static byte[] copy(ByteBuf buf, int index, int length) {
        byte[] bytes = new byte[length];
        buf.getBytes(index, bytes);
        return bytes;
    }
}
