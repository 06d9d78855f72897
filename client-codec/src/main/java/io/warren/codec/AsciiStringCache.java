package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.util.AsciiString;
import io.netty.util.concurrent.FastThreadLocal;
import java.util.Arrays;

/**
 * Turns short strings read from a frame into {@link AsciiString}s without allocating when the same
 * bytes were seen recently: exchange names, routing keys, consumer tags and header names repeat on
 * every delivery.
 *
 * <p>A direct-mapped table of {@value #SIZE} entries indexed by a hash of the bytes; a hit compares the
 * bytes and returns the cached instance, a miss allocates one copy and replaces the slot. Shared by
 * all threads without locks: entries are immutable {@code AsciiString}s, safely published through
 * their final fields, so a racing reader sees either the old entry or the new one, both correct for
 * their own bytes (the bytes are always compared).
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

    private static final AsciiString[] ENTRIES = new AsciiString[SIZE];

    /** Per-thread scratch for the bytes being looked up (an indexed load on Netty's event-loop threads). */
    private static final FastThreadLocal<byte[]> SCRATCH = new FastThreadLocal<>() {
        @Override
        protected byte[] initialValue() {
            return new byte[MAX_CACHED_LENGTH];
        }
    };

    private AsciiStringCache() {
    }

    /** The shortstr at {@code index} (its length octet) of {@code buf}; the buffer's indices are not moved. */
    public static AsciiString shortString(ByteBuf buf, int index) {
        return get(buf, index + 1, buf.getUnsignedByte(index));
    }

    /** The {@code length} bytes at {@code index} of {@code buf} as an {@code AsciiString}, cached. */
    public static AsciiString get(ByteBuf buf, int index, int length) {
        if (length == 0) {
            return AsciiString.EMPTY_STRING;
        }
        if (length > MAX_CACHED_LENGTH) {
            return copy(buf, index, length);
        }
        // One checked read into a per-thread scratch array, then plain array work: every ByteBuf
        // accessor pays for bounds and reference-count checks, which would dominate byte-wise hashing.
        byte[] scratch = SCRATCH.get();
        buf.getBytes(index, scratch, 0, length);
        int slot = hash(scratch, length) & (SIZE - 1);
        AsciiString cached = ENTRIES[slot];
        if (cached != null && cached.length() == length && Arrays.equals(cached.array(), cached.arrayOffset(),
                cached.arrayOffset() + length, scratch, 0, length)) {
            return cached;
        }
        AsciiString fresh = new AsciiString(Arrays.copyOf(scratch, length), false);
        ENTRIES[slot] = fresh;
        return fresh;
    }

    private static AsciiString copy(ByteBuf buf, int index, int length) {
        byte[] bytes = new byte[length];
        buf.getBytes(index, bytes);
        return new AsciiString(bytes, false);
    }

    /**
     * A hash of the length and the first and last eight bytes: enough to spread names that share a
     * prefix ({@code amq.ctag-...}) or a suffix over the slots, and cheap; equality is always checked.
     */
    private static int hash(byte[] bytes, int length) {
        int h = length;
        int head = Math.min(length, 8);
        for (int i = 0; i < head; i++) {
            h = 31 * h + bytes[i];
        }
        for (int i = Math.max(head, length - 8); i < length; i++) {
            h = 31 * h + bytes[i];
        }
        return h ^ (h >>> 11) ^ (h >>> 22);
    }
}
