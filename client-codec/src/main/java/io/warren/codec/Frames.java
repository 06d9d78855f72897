package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.content.SequenceHeader;
import io.warren.codec.method.MethodEncoder;

/**
 * Writes whole frames: the 7-byte header, the payload and the end byte, sized exactly before the
 * buffer is allocated.
 *
 * <pre>
 * +------+---------+-------------+------------------+-----------+
 * | type | channel | size        | payload          | frame-end |
 * | 1    | 2       | 4 (u32)     | size bytes       | 1: 0xCE   |
 * +------+---------+-------------+------------------+-----------+
 * </pre>
 *
 * <p>Every method that returns a {@link ByteBuf} returns a new buffer that the caller owns (writing it
 * to a Netty channel passes that ownership on). Methods that take an {@code out} buffer append to it.
 * For a publish (method, header and body frames) see {@link io.warren.codec.PublishFraming}.
 */
public final class Frames {

    /** Type, channel and size: the bytes before the payload. */
    public static final int FRAME_HEADER_SIZE = 7;
    /** Header plus end byte: what a frame adds to its payload. */
    public static final int FRAME_OVERHEAD = 8;
    /** The frame-end octet. */
    public static final int FRAME_END = 0xCE;
    /** The frame-max in force until tune-ok, and the smallest a peer may negotiate. */
    public static final int FRAME_MIN_SIZE = 4096;

    private static final byte[] HEARTBEAT = {8, 0, 0, 0, 0, 0, 0, (byte) FRAME_END};

    private Frames() {}

    /** The size of the whole method frame {@code encoder} would write. */
    public static int methodFrameLength(MethodEncoder encoder) {
        return encoder.encodedLength() + FRAME_OVERHEAD;
    }

    /** A new buffer holding one method frame; the caller owns (and releases) it. */
    public static ByteBuf method(ByteBufAllocator alloc, int channel, MethodEncoder encoder) {
        checkChannel(channel);
        int length = encoder.encodedLength();
        int frameLength = length + FRAME_OVERHEAD;
        ByteBuf out = alloc.buffer(frameLength, frameLength);
        try {
            writeMethod(out, channel, encoder, length);
            return out;
        } catch (RuntimeException | Error e) {
            out.release();
            throw e;
        }
    }

    /** Appends one method frame for {@code encoder} to {@code out}. */
    public static void writeMethod(ByteBuf out, int channel, MethodEncoder encoder) {
        checkChannel(channel);
        writeMethod(out, channel, encoder, encoder.encodedLength());
    }

    private static void writeMethod(ByteBuf out, int channel, MethodEncoder encoder, int length) {
        out.ensureWritable(length + FRAME_OVERHEAD);
        writeHeader(out, FrameType.METHOD, channel, length);
        int start = out.writerIndex();
        try {
            encoder.encode(out);
        } catch (IndexOutOfBoundsException e) {
            // an exactly sized buffer overflowed: the encoder wrote more than it announced
            throw changedArgument(encoder, "more than", length, e);
        }
        if (out.writerIndex() - start != length) {
            throw changedArgument(encoder, (out.writerIndex() - start) + " bytes, not", length, null);
        }
        out.writeByte(FRAME_END);
    }

    /** A new buffer holding one heartbeat frame; the caller owns (and releases) it. */
    public static ByteBuf heartbeat(ByteBufAllocator alloc) {
        return alloc.buffer(FRAME_OVERHEAD, FRAME_OVERHEAD).writeBytes(HEARTBEAT);
    }

    /** Appends one heartbeat frame to {@code out}. */
    public static void writeHeartbeat(ByteBuf out) {
        out.writeBytes(HEARTBEAT);
    }

    /**
     * A new buffer holding one content-header frame (class basic) announcing {@code bodySize} bytes;
     * the caller owns (and releases) it.
     */
    public static ByteBuf contentHeader(
            ByteBufAllocator alloc, int channel, long bodySize, BasicProperties properties) {
        checkChannel(channel);
        int length = ContentHeaderEncoder.encodedLength(properties);
        ByteBuf out = alloc.buffer(length + FRAME_OVERHEAD, length + FRAME_OVERHEAD);
        try {
            writeContentHeader(out, channel, bodySize, properties);
            return out;
        } catch (RuntimeException | Error e) {
            out.release();
            throw e;
        }
    }

    /** Appends one content-header frame (class basic) announcing {@code bodySize} bytes to {@code out}. */
    public static void writeContentHeader(ByteBuf out, int channel, long bodySize, BasicProperties properties) {
        writeContentHeader(out, channel, bodySize, properties, null, 0);
    }

    /**
     * Appends one content-header frame (class basic) announcing {@code bodySize} bytes to {@code out}, with header
     * {@code added} (null: none) set to {@code value} in the properties' headers table.
     */
    public static void writeContentHeader(
            ByteBuf out, int channel, long bodySize, BasicProperties properties, SequenceHeader added, long value) {
        checkChannel(channel);
        int length = ContentHeaderEncoder.encodedLength(properties, added);
        out.ensureWritable(length + FRAME_OVERHEAD);
        writeHeader(out, FrameType.HEADER, channel, length);
        ContentHeaderEncoder.encode(out, bodySize, properties, added, value);
        out.writeByte(FRAME_END);
    }

    /**
     * A new buffer holding one body frame with a copy of {@code body}'s readable bytes; the caller owns
     * the result and keeps ownership of {@code body}. For publishing without a copy use
     * {@link io.warren.codec.PublishFraming}; this one is for tests and peers.
     */
    public static ByteBuf body(ByteBufAllocator alloc, int channel, ByteBuf body) {
        checkChannel(channel);
        int length = body.readableBytes();
        ByteBuf out = alloc.buffer(length + FRAME_OVERHEAD, length + FRAME_OVERHEAD);
        writeHeader(out, FrameType.BODY, channel, length);
        out.writeBytes(body, body.readerIndex(), length);
        out.writeByte(FRAME_END);
        return out;
    }

    /** Appends a frame header: type, channel and payload size. */
    public static void writeHeader(ByteBuf out, FrameType type, int channel, int payloadSize) {
        out.writeByte(type.id());
        out.writeShort(channel);
        out.writeInt(payloadSize);
    }

    /** Throws {@link IllegalArgumentException} unless {@code channel} is an unsigned 16-bit number. */
    public static void checkChannel(int channel) {
        if ((channel & ~0xFFFF) != 0) {
            throw new IllegalArgumentException("channel must be within 0..65535: " + channel);
        }
    }

    private static IllegalStateException changedArgument(
            MethodEncoder encoder, String wrote, int announced, Throwable cause) {
        // Only possible when an argument (a table's Map) was modified after it was set.
        return new IllegalStateException(
                encoder.info().name() + " wrote " + wrote + " the " + announced
                        + " bytes it announced: was an argument modified after it was set?",
                cause);
    }
}
