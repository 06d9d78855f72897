package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.util.AsciiString;

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
        int hash = hash(buf, index, length);
        int slot = (hash ^ (hash >>> 16)) & (SIZE - 1);
        AsciiString cached = ENTRIES[slot];
        if (cached != null && sameBytes(cached, buf, index, length)) {
            return cached;
        }
        AsciiString fresh = copy(buf, index, length);
        ENTRIES[slot] = fresh;
        return fresh;
    }

    private static AsciiString copy(ByteBuf buf, int index, int length) {
        byte[] bytes = new byte[length];
        buf.getBytes(index, bytes);
        return new AsciiString(bytes, false);
    }

    private static int hash(ByteBuf buf, int index, int length) {
        int h = length;
        int i = index;
        int end = index + length;
        // four bytes per step: short strings are read with few bounds checks
        for (; i + 4 <= end; i += 4) {
            h = h * 0x01000193 ^ buf.getInt(i);
        }
        for (; i < end; i++) {
            h = h * 0x01000193 ^ buf.getByte(i);
        }
        return h * 0x9E3779B9;
    }

    private static boolean sameBytes(AsciiString s, ByteBuf buf, int index, int length) {
        if (s.length() != length) {
            return false;
        }
        byte[] array = s.array();
        int off = s.arrayOffset();
        for (int i = 0; i < length; i++) {
            if (array[off + i] != buf.getByte(index + i)) {
                return false;
            }
        }
        return true;
    }
}
