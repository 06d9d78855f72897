package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.impl.RawMemory;
import io.warren.codec.method.MethodTable;

/**
 * Reads AMQP frames in place: checks a frame's header, its size against the limits, its end byte and (by
 * default) its method or content-header payload, then describes it as a flyweight over the caller's buffer:
 * {@link #type()}, {@link #channel()}, {@link #payloadIndex()}, {@link #payloadSize()}. Nothing is copied,
 * allocated or reference-counted; the description holds until the next read and is only as alive as the
 * buffer. This is the codec's half of {@link FrameDecoder}, which adds the Netty side (partial frames across
 * reads, owned {@link Frame}s, the pipeline); use it directly to decode frames without a pipeline.
 *
 * <pre>
 * +------+---------+-------------+------------------+-----------+
 * | type | channel | size        | payload          | frame-end |
 * | 1    | 2       | 4 (u32)     | size bytes       | 1: 0xCE   |
 * +------+---------+-------------+------------------+-----------+
 * </pre>
 *
 * <p>Limits, all counting the whole frame (header, payload and end byte, as the spec's frame-max does):
 * <ul>
 *   <li>once {@link #setFrameMax(int)} was called after tune: the negotiated frame-max for every frame, method,
 *       content header and body alike (0 means no limit). The spec says a peer that receives a larger frame closes
 *       the connection with 501 FRAME_ERROR, and does not except content headers;</li>
 *   <li>before that: {@value Frames#FRAME_MIN_SIZE} for body frames, and {@code maxMethodFrameSize} for method
 *       and content-header frames. The spec only asks a peer to accept frames of up to frame-min-size before
 *       tuning, but a broker configured with large server properties sends a larger connection.start, and
 *       RabbitMQ's clients read it;</li>
 *   <li>heartbeat frames: empty, on channel 0.</li>
 * </ul>
 *
 * <p>Malformed input throws an {@link AmqpProtocolException} carrying the reply code to close the connection
 * with (501 FRAME_ERROR for framing, 502 SYNTAX_ERROR for fields, 503 COMMAND_INVALID for an unknown method, 505
 * UNEXPECTED_FRAME for content on channel 0 or a header of a class without content) and the offset in the
 * stream; the stream is out of step from there and a further read throws {@link IllegalStateException}. If the stream's first
 * bytes are a protocol header, the server refused the client's version: {@link ProtocolVersionMismatchException}.
 *
 * <p>Buffers are read big-endian, Netty's default order. Not thread-safe: one reader per connection, used by the
 * thread that reads it.
 */
public final class FrameReader {

    /** The largest payload a ByteBuf index can address, whatever frame-max says. */
    private static final long MAX_PAYLOAD = Integer.MAX_VALUE - Frames.FRAME_OVERHEAD;

    private final int maxMethodFrameSize;
    private final boolean validatePayloads;

    private long maxBodyPayload;
    private long maxMethodPayload;
    private int frameMax = Frames.FRAME_MIN_SIZE;
    /** Whether frame-max was negotiated: it then bounds every frame. */
    private boolean tuned;
    /** Bytes of the stream read so far: the offset errors name, and whether a protocol header may come. */
    private long streamOffset;
    /** Whether a read threw: the stream is out of step, and further reads are refused. */
    private boolean failed;

    // the frame read last
    private FrameType type;
    private int channel;
    private int payloadIndex;
    private int payloadSize;

    /**
     * @param maxMethodFrameSize the limit for method and content-header frames (whole frame, bytes) until
     *        frame-max is negotiated; at least {@value Frames#FRAME_MIN_SIZE}
     * @param validatePayloads whether to validate method and content-header payloads ({@link MethodTable#validate},
     *        {@link ContentHeader#validate}) so that views wrapped over them never read out of bounds; turn it off
     *        only when the caller validates them itself
     */
    public FrameReader(int maxMethodFrameSize, boolean validatePayloads) {
        if (maxMethodFrameSize < Frames.FRAME_MIN_SIZE) {
            throw new IllegalArgumentException(
                    "maxMethodFrameSize must be at least " + Frames.FRAME_MIN_SIZE + ": " + maxMethodFrameSize);
        }
        this.maxMethodFrameSize = maxMethodFrameSize;
        this.validatePayloads = validatePayloads;
        updateLimits();
    }

    /**
     * Sets the negotiated frame-max (from connection.tune-ok): 0 means unlimited, otherwise at least
     * {@value Frames#FRAME_MIN_SIZE}. From now on it bounds every frame, method and content-header frames too.
     */
    public void setFrameMax(int frameMax) {
        if (frameMax != 0 && frameMax < Frames.FRAME_MIN_SIZE) {
            throw new IllegalArgumentException(
                    "frameMax must be 0 (unlimited) or at least " + Frames.FRAME_MIN_SIZE + ": " + frameMax);
        }
        this.frameMax = frameMax;
        this.tuned = true;
        updateLimits();
    }

    /** The frame-max in force: {@value Frames#FRAME_MIN_SIZE} until set, 0 for unlimited. */
    public int frameMax() {
        return frameMax;
    }

    /** The limit on method and content-header frames (whole frame) until frame-max is negotiated. */
    public int maxMethodFrameSize() {
        return maxMethodFrameSize;
    }

    private void updateLimits() {
        // frame-max counts the 7-byte header and the end byte: the payload gets frame-max - 8.
        maxBodyPayload = frameMax == 0 ? MAX_PAYLOAD : frameMax - Frames.FRAME_OVERHEAD;
        maxMethodPayload =
                tuned ? maxBodyPayload : Math.max(maxBodyPayload, maxMethodFrameSize - Frames.FRAME_OVERHEAD);
    }

    /**
     * Reads the frame at {@code in}'s reader index. When it is whole, describes it (see {@link #type()} and the
     * rest), moves the reader index past it and returns true; when more bytes are needed, returns false and
     * leaves {@code in} as it was. A header announcing a frame over the limits throws at once, before its bytes
     * are waited for. The reader keeps no reference to {@code in}: the caller owns it and keeps it alive while it
     * uses the description.
     *
     * @throws AmqpProtocolException for malformed input
     * @throws ProtocolVersionMismatchException when the stream starts with the server's protocol header
     */
    public boolean read(ByteBuf in) {
        int start = in.readerIndex();
        int end = in.writerIndex();
        if (end - start < Frames.FRAME_HEADER_SIZE) {
            return false;
        }
        long address = RawMemory.AVAILABLE && in.hasMemoryAddress() ? in.memoryAddress() : 0;
        if (!read(in, address, start, end)) {
            return false;
        }
        in.readerIndex(payloadIndex + payloadSize + 1);
        return true;
    }

    /**
     * As {@link #read(ByteBuf)} for the bytes {@code [start, end)} of {@code in} (at least a header's worth),
     * leaving its indices alone. Reads from memory when {@code address} (the buffer's memory address, or 0) is
     * not 0: the caller checked {@code in} is accessible and {@code [start, end)} readable.
     */
    boolean read(ByteBuf in, long address, int start, int end) {
        if (failed) {
            throw new IllegalStateException("the stream was malformed at stream offset " + streamOffset
                    + ": a reader cannot go on past malformed input");
        }
        try {
            return readFrame(in, address, start, end);
        } catch (RuntimeException e) {
            failed = true; // out of step with the stream from here
            throw e;
        }
    }

    private boolean readFrame(ByteBuf in, long address, int start, int end) {
        // type (8 bits), channel (16), size (32): one read when a whole frame's minimum is there, since every
        // ByteBuf accessor pays for its bounds and reference-count checks
        long header = end - start >= Frames.FRAME_OVERHEAD
                ? (address != 0 ? RawMemory.getLong(address + start) : in.getLong(start)) >>> 8
                : ((long) in.getUnsignedByte(start) << 48)
                        | ((long) in.getUnsignedShort(start + 1) << 32)
                        | in.getUnsignedInt(start + 3);
        int typeId = (int) (header >>> 48);
        if (streamOffset == 0 && typeId == 'A') {
            protocolHeader(in, start, end);
            return false;
        }
        FrameType t = FrameType.fromId(typeId);
        int ch = (int) (header >>> 32) & 0xFFFF;
        if (t == null) {
            throw frameError("unknown frame type " + typeId, null, ch, 0);
        }
        long size = header & 0xFFFFFFFFL;
        checkSize(t, ch, size);
        int n = (int) size;
        // long arithmetic: a payload near 2 GiB must not overflow the comparison
        if (end - start < (long) n + Frames.FRAME_OVERHEAD) {
            return false;
        }
        int index = start + Frames.FRAME_HEADER_SIZE;
        int endIndex = index + n;
        int endOctet = address != 0 ? RawMemory.getUnsignedByte(address + endIndex) : in.getUnsignedByte(endIndex);
        if (endOctet != Frames.FRAME_END) {
            throw frameError(
                    String.format("frame-end byte is 0x%02X, expected 0xCE (payload size %d)", endOctet, n),
                    t,
                    ch,
                    Frames.FRAME_HEADER_SIZE + n);
        }
        checkPayload(t, ch, in, index, n);
        streamOffset += n + Frames.FRAME_OVERHEAD;
        type = t;
        channel = ch;
        payloadIndex = index;
        payloadSize = n;
        return true;
    }

    /** The type of the frame read last. */
    public FrameType type() {
        return type;
    }

    /** The channel of the frame read last, 0 for the connection itself. */
    public int channel() {
        return channel;
    }

    /** The index of the first payload byte of the frame read last, in the buffer it was read from. */
    public int payloadIndex() {
        return payloadIndex;
    }

    /** The payload size of the frame read last. */
    public int payloadSize() {
        return payloadSize;
    }

    /** The bytes of the stream read so far (whole frames only). */
    public long streamOffset() {
        return streamOffset;
    }

    /**
     * The whole length of the frame (or protocol header) whose 7-byte header is readable at {@code start} and
     * was checked by a read that returned false: how many bytes to wait for.
     */
    long pendingFrameLength(ByteBuf in, int start) {
        if (streamOffset == 0 && in.getUnsignedByte(start) == 'A') {
            return ProtocolHeader.LENGTH;
        }
        return in.getUnsignedInt(start + 3) + Frames.FRAME_OVERHEAD;
    }

    private void checkSize(FrameType type, int channel, long size) {
        switch (type) {
            case BODY:
                if (size > maxBodyPayload) {
                    throw tooLarge(type, channel, size);
                }
                break;
            case METHOD:
            case HEADER:
                if (size > maxMethodPayload) {
                    throw tuned
                            ? tooLarge(type, channel, size)
                            : frameError(
                                    type.name().toLowerCase()
                                            + " frame of " + (size + Frames.FRAME_OVERHEAD)
                                            + " bytes exceeds maxMethodFrameSize "
                                            + maxMethodFrameSize + ", the limit until frame-max is negotiated",
                                    type,
                                    channel,
                                    3);
                }
                break;
            case HEARTBEAT:
                if (size != 0) {
                    throw frameError("heartbeat frame with a payload of " + size + " bytes", type, channel, 3);
                }
                if (channel != 0) {
                    throw frameError("heartbeat frame on channel " + channel + ", must be 0", type, channel, 1);
                }
                break;
            default:
                throw new AssertionError(type);
        }
    }

    private void checkPayload(FrameType type, int channel, ByteBuf in, int payloadIndex, int payloadSize) {
        switch (type) {
            case METHOD:
                if (validatePayloads) {
                    MethodTable.validate(in, payloadIndex, payloadSize, channel);
                }
                break;
            case HEADER:
                if (channel == 0) {
                    throw unexpected("content header on channel 0", type);
                }
                if (validatePayloads) {
                    ContentHeader.validate(in, payloadIndex, payloadSize, channel);
                }
                break;
            case BODY:
                if (channel == 0) {
                    throw unexpected("content body on channel 0", type);
                }
                break;
            default:
                break;
        }
    }

    /** Returns when the 8 bytes are not all there yet; otherwise throws. */
    private void protocolHeader(ByteBuf in, int start, int end) {
        if (end - start < ProtocolHeader.LENGTH) {
            return;
        }
        if (in.getInt(start) != 0x414D5150) { // "AMQP"
            throw frameError("unknown frame type 65", null, -1, 0);
        }
        throw new ProtocolVersionMismatchException(
                in.getUnsignedByte(start + 4),
                in.getUnsignedByte(start + 5),
                in.getUnsignedByte(start + 6),
                in.getUnsignedByte(start + 7));
    }

    private AmqpProtocolException tooLarge(FrameType type, int channel, long size) {
        return frameError(
                type.name().toLowerCase() + " frame of " + (size + Frames.FRAME_OVERHEAD) + " bytes exceeds frame-max "
                        + frameMax,
                type,
                channel,
                3);
    }

    private AmqpProtocolException frameError(String detail, FrameType type, int channel, long offsetInFrame) {
        return new AmqpProtocolException(
                ReplyCode.FRAME_ERROR,
                detail + " at stream offset " + streamOffset,
                type,
                channel,
                -1,
                -1,
                offsetInFrame);
    }

    private AmqpProtocolException unexpected(String detail, FrameType type) {
        return new AmqpProtocolException(
                ReplyCode.UNEXPECTED_FRAME, detail + " at stream offset " + streamOffset, type, 0, -1, -1, 1);
    }
}
