package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The eight bytes a client sends first: {@code "AMQP"}, protocol id 0, then version 0-9-1.
 *
 * <pre>
 * +-----+-----+-----+-----+-------------+-------+-------+----------+
 * | 'A' | 'M' | 'Q' | 'P' | protocol-id | major | minor | revision |
 * |  41 |  4D |  51 |  50 |      0      |   0   |   9   |    1     |
 * +-----+-----+-----+-----+-------------+-------+-------+----------+
 * </pre>
 *
 * <p>A server that does not accept this version answers with its own header and closes the socket;
 * {@link FrameDecoder} reports that as a {@link ProtocolVersionMismatchException}.
 */
public final class ProtocolHeader {

    /** The header's length in bytes. */
    public static final int LENGTH = 8;

    /** The header as a long, written in one go. */
    private static final long AMQP_0_9_1 = 0x414D5150_00000901L;

    private ProtocolHeader() {}

    /** A new buffer holding the header; the caller owns it. */
    public static ByteBuf encode(ByteBufAllocator alloc) {
        return alloc.buffer(LENGTH, LENGTH).writeLong(AMQP_0_9_1);
    }

    /** Appends the header to {@code out}. */
    public static void write(ByteBuf out) {
        out.writeLong(AMQP_0_9_1);
    }

    /** A fresh copy of the header's bytes. */
    public static byte[] bytes() {
        return new byte[] {'A', 'M', 'Q', 'P', 0, 0, 9, 1};
    }
}
