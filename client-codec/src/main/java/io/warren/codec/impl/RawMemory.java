package io.warren.codec.impl;

import io.netty.util.internal.PlatformDependent;

/**
 * Big-endian reads straight from a buffer's memory address, for the few hot paths that check a
 * buffer's accessibility and bounds once and then read several words: each {@code ByteBuf} getter
 * pays both checks again. Callers must have called {@code memoryAddress()} (which checks the buffer is
 * accessible) and proven the bytes lie inside the buffer.
 */
public final class RawMemory {

    /** Whether raw reads are possible: Netty's own direct buffers need {@code sun.misc.Unsafe} for them too. */
    public static final boolean AVAILABLE = PlatformDependent.hasUnsafe();

    private RawMemory() {}

    /** The 8 bytes at {@code address} as {@code ByteBuf.getLong} reads them, whatever the platform's order. */
    public static long getLong(long address) {
        long v = PlatformDependent.getLong(address);
        return PlatformDependent.BIG_ENDIAN_NATIVE_ORDER ? v : Long.reverseBytes(v);
    }

    /** The 4 bytes at {@code address}, unsigned, as {@code ByteBuf.getUnsignedInt} reads them. */
    public static long getUnsignedInt(long address) {
        int v = PlatformDependent.getInt(address);
        return (PlatformDependent.BIG_ENDIAN_NATIVE_ORDER ? v : Integer.reverseBytes(v)) & 0xFFFFFFFFL;
    }

    /** The 2 bytes at {@code address}, unsigned, as {@code ByteBuf.getUnsignedShort} reads them. */
    public static int getUnsignedShort(long address) {
        short v = PlatformDependent.getShort(address);
        return (PlatformDependent.BIG_ENDIAN_NATIVE_ORDER ? v : Short.reverseBytes(v)) & 0xFFFF;
    }

    /** The byte at {@code address}, unsigned. */
    public static int getUnsignedByte(long address) {
        return PlatformDependent.getByte(address) & 0xFF;
    }

    /** The 8 bytes at {@code address} in the platform's order: for equality tests, where order does not matter. */
    public static long getLongNative(long address) {
        return PlatformDependent.getLong(address);
    }
}
