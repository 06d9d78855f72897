package io.warren.perf;

import io.netty.buffer.ByteBuf;

/**
 * The layout of a benchmark message body, shared by every driver so latency is measured the same way.
 *
 * <pre>
 *  0               8       12                 size
 *  +---------------+-------+------ ... -------+
 *  | publish time  | MARK  | zero padding     |
 *  | System.nano-  | int   |                  |
 *  | Time(), long  |       |                  |
 *  +---------------+-------+------ ... -------+
 * </pre>
 *
 * Producers and consumers run in one JVM, so {@code System.nanoTime()} values are comparable. A body
 * without the {@link #MARK} (the loopback peer's pre-encoded deliveries carry zeros) has no publish time
 * and its delivery is counted without a latency sample. Big-endian, like {@link ByteBuf}'s defaults.
 */
public final class MessageBody {

    /** The smallest body: the publish time and the mark. PerfTest's minimum is 12 bytes too. */
    public static final int MIN_SIZE = 12;

    /** "WARR": tells a stamped body from the peer's zeros. */
    public static final int MARK = 0x57415252;

    /** No publish time in this body. */
    public static final long NO_STAMP = Long.MIN_VALUE;

    private static final int TIME_OFFSET = 0;
    private static final int MARK_OFFSET = 8;

    private MessageBody() {}

    /** Writes {@code publishNanos} and the mark into the first 12 bytes of {@code body}. */
    public static void stamp(byte[] body, long publishNanos) {
        putLong(body, TIME_OFFSET, publishNanos);
        putInt(body, MARK_OFFSET, MARK);
    }

    /**
     * Writes {@code publishNanos} and the mark at {@code body}'s reader index without moving any index.
     * The caller keeps ownership of {@code body}.
     */
    public static void stamp(ByteBuf body, long publishNanos) {
        int at = body.readerIndex();
        body.setLong(at + TIME_OFFSET, publishNanos);
        body.setInt(at + MARK_OFFSET, MARK);
    }

    /** The publish time in {@code body}, or {@link #NO_STAMP}. */
    public static long publishNanos(byte[] body) {
        if (body.length < MIN_SIZE || getInt(body, MARK_OFFSET) != MARK) {
            return NO_STAMP;
        }
        return getLong(body, TIME_OFFSET);
    }

    /**
     * The publish time in {@code body} (read from its reader index, no index moved), or {@link #NO_STAMP}.
     * The caller keeps ownership of {@code body}.
     */
    public static long publishNanos(ByteBuf body) {
        int at = body.readerIndex();
        if (body.readableBytes() < MIN_SIZE || body.getInt(at + MARK_OFFSET) != MARK) {
            return NO_STAMP;
        }
        return body.getLong(at + TIME_OFFSET);
    }

    private static void putLong(byte[] b, int at, long v) {
        putInt(b, at, (int) (v >>> 32));
        putInt(b, at + 4, (int) v);
    }

    private static void putInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    private static long getLong(byte[] b, int at) {
        return ((long) getInt(b, at) << 32) | (getInt(b, at + 4) & 0xFFFF_FFFFL);
    }

    private static int getInt(byte[] b, int at) {
        return (b[at] & 0xFF) << 24 | (b[at + 1] & 0xFF) << 16 | (b[at + 2] & 0xFF) << 8 | (b[at + 3] & 0xFF);
    }
}
