package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.MethodTable;
import java.util.List;

/**
 * Splits the inbound byte stream into {@link Frame}s.
 *
 * <pre>
 * +------+---------+-------------+------------------+-----------+
 * | type | channel | size        | payload          | frame-end |
 * | 1    | 2       | 4 (u32)     | size bytes       | 1: 0xCE   |
 * +------+---------+-------------+------------------+-----------+
 * </pre>
 *
 * <p>The size is checked as soon as the 7-byte header is readable, before the decoder waits for (and
 * the cumulation grows to hold) the payload. Limits, all counting the whole frame (header, payload
 * and end byte, as the spec's frame-max does):
 * <ul>
 *   <li>body frames: the negotiated frame-max, {@value Frames#FRAME_MIN_SIZE} until
 *       {@link #setFrameMax(int)} is called after tune; 0 means no limit;</li>
 *   <li>method and content-header frames: the larger of frame-max and {@code maxMethodFrameSize}
 *       (default {@value #DEFAULT_MAX_METHOD_FRAME_SIZE}), because RabbitMQ sends content headers
 *       larger than frame-max once a message has been dead-lettered many times (its x-death header
 *       grows), and the official Java client accepts them;</li>
 *   <li>heartbeat frames: empty, on channel 0.</li>
 * </ul>
 *
 * <p>Each frame's payload is a retained slice of the cumulation (no copy) inside a pooled
 * {@link Frame}; the next handler owns the frame and releases it. By default method and
 * content-header payloads are validated before they are passed on ({@link MethodTable#validate} and
 * {@link ContentHeader#validate}), so views wrapped over them never read out of bounds.
 *
 * <p>Malformed input is terminal: the decoder throws an {@link AmqpProtocolException} (501
 * FRAME_ERROR for framing, 502 SYNTAX_ERROR for fields, 503 COMMAND_INVALID for an unknown method,
 * 505 UNEXPECTED_FRAME for content on channel 0 or a header of a class without content), which
 * reaches {@code exceptionCaught} unwrapped, and from then on discards everything it receives. The
 * frames decoded before the bad one are still passed on. If the very first bytes are a protocol
 * header, the server refused the client's version: that is a {@link ProtocolVersionMismatchException}.
 *
 * <p>Threading: an instance belongs to one channel pipeline; every method runs on its event loop.
 */
public class FrameDecoder extends ByteToMessageDecoder {

    /** Default limit for method and content-header frames (whole frame): 1 MiB. */
    public static final int DEFAULT_MAX_METHOD_FRAME_SIZE = 1 << 20;

    /** Frames decoded per call before ByteToMessageDecoder passes them on (and they are recycled). */
    private static final int FRAMES_PER_DECODE = 16;

    /** The largest payload a ByteBuf slice can address, whatever frame-max says. */
    private static final long MAX_PAYLOAD = Integer.MAX_VALUE - Frames.FRAME_OVERHEAD;

    private final int maxMethodFrameSize;
    private final boolean validatePayloads;

    // event loop only
    private long maxBodyPayload = Frames.FRAME_MIN_SIZE - Frames.FRAME_OVERHEAD;
    private long maxMethodPayload;
    private int frameMax = Frames.FRAME_MIN_SIZE;
    private long streamOffset;
    private boolean failed;
    /** Where decoded frames come from; made on the first read, by the event loop. */
    private Frame.Pool pool;

    /** A decoder with the default method-frame limit that validates method and header payloads. */
    public FrameDecoder() {
        this(DEFAULT_MAX_METHOD_FRAME_SIZE, true);
    }

    /**
     * @param maxMethodFrameSize the limit for method and content-header frames (whole frame, bytes) when
     *        it is larger than frame-max; at least {@value Frames#FRAME_MIN_SIZE}
     * @param validatePayloads whether to validate method and content-header payloads before passing
     *        frames on; turn it off only when the next handler calls the validators itself
     */
    public FrameDecoder(int maxMethodFrameSize, boolean validatePayloads) {
        if (maxMethodFrameSize < Frames.FRAME_MIN_SIZE) {
            throw new IllegalArgumentException("maxMethodFrameSize must be at least " + Frames.FRAME_MIN_SIZE
                    + ": " + maxMethodFrameSize);
        }
        this.maxMethodFrameSize = maxMethodFrameSize;
        this.validatePayloads = validatePayloads;
        updateLimits();
    }

    /**
     * Sets the negotiated frame-max (from connection.tune-ok): 0 means unlimited, otherwise at least
     * {@value Frames#FRAME_MIN_SIZE}. Event loop only.
     */
    public void setFrameMax(int frameMax) {
        if (frameMax != 0 && frameMax < Frames.FRAME_MIN_SIZE) {
            throw new IllegalArgumentException("frameMax must be 0 (unlimited) or at least "
                    + Frames.FRAME_MIN_SIZE + ": " + frameMax);
        }
        this.frameMax = frameMax;
        updateLimits();
    }

    /** The frame-max in force: {@value Frames#FRAME_MIN_SIZE} until set, 0 for unlimited. */
    public int frameMax() {
        return frameMax;
    }

    /** Whether the decoder met malformed input and now discards everything. */
    public boolean isFailed() {
        return failed;
    }

    private void updateLimits() {
        // frame-max counts the 7-byte header and the end byte: the payload gets frame-max - 8.
        maxBodyPayload = frameMax == 0 ? MAX_PAYLOAD : frameMax - Frames.FRAME_OVERHEAD;
        maxMethodPayload = Math.max(maxBodyPayload, maxMethodFrameSize - Frames.FRAME_OVERHEAD);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (failed) {
            in.skipBytes(in.readableBytes());
            return;
        }
        Frame.Pool frames = pool;
        if (frames == null || !frames.isOwner()) {
            // first read, or the channel moved to another event loop: frames come from the reading thread's pool
            pool = frames = new Frame.Pool();
        }
        int index = in.readerIndex();
        int end = in.writerIndex();
        try {
            // A bounded batch: ByteToMessageDecoder passes these on before calling again, so a large read
            // does not keep more frames alive at once than the pool holds.
            for (int n = 0; n < FRAMES_PER_DECODE && end - index >= Frames.FRAME_HEADER_SIZE; n++) {
                int next = decodeFrame(in, index, end, frames, out);
                if (next < 0) {
                    break;
                }
                index = next;
            }
        } catch (AmqpProtocolException e) {
            failed = true;
            in.skipBytes(in.readableBytes());
            throw e;
        }
        in.readerIndex(index);
    }

    /**
     * Decodes the frame at {@code start} into {@code out}; returns the index after it, or -1 when more
     * bytes are needed (nothing consumed). Reads with absolute indices: the caller moves the reader index
     * once per batch.
     */
    private int decodeFrame(ByteBuf in, int start, int end, Frame.Pool frames, List<Object> out) {
        // type (8 bits), channel (16), size (32): one read when a whole frame's minimum is there, since
        // every ByteBuf accessor pays for its bounds and reference-count checks
        long header = end - start >= Frames.FRAME_OVERHEAD
                ? in.getLong(start) >>> 8
                : ((long) in.getUnsignedByte(start) << 48) | ((long) in.getUnsignedShort(start + 1) << 32)
                        | in.getUnsignedInt(start + 3);
        int typeId = (int) (header >>> 48);
        if (streamOffset == 0 && typeId == 'A') {
            return protocolHeader(in, start, end);
        }
        FrameType type = FrameType.fromId(typeId);
        int channel = (int) (header >>> 32) & 0xFFFF;
        if (type == null) {
            throw frameError("unknown frame type " + typeId, null, channel, 0);
        }
        long size = header & 0xFFFFFFFFL;
        checkSize(type, channel, size);
        int payloadSize = (int) size;
        // long arithmetic: a payload near 2 GiB must not overflow the comparison
        if (end - start < (long) payloadSize + Frames.FRAME_OVERHEAD) {
            return -1;
        }
        int payloadIndex = start + Frames.FRAME_HEADER_SIZE;
        int endIndex = payloadIndex + payloadSize;
        int endOctet = in.getUnsignedByte(endIndex);
        if (endOctet != Frames.FRAME_END) {
            throw frameError(String.format("frame-end byte is 0x%02X, expected 0xCE (payload size %d)", endOctet,
                    payloadSize), type, channel, Frames.FRAME_HEADER_SIZE + payloadSize);
        }
        checkPayload(type, channel, in, payloadIndex, payloadSize);
        out.add(frames.get(type, channel, in.retainedSlice(payloadIndex, payloadSize)));
        streamOffset += payloadSize + Frames.FRAME_OVERHEAD;
        return endIndex + 1;
    }

    private void checkSize(FrameType type, int channel, long size) {
        switch (type) {
            case BODY:
                if (size > maxBodyPayload) {
                    throw frameError("body frame of " + (size + Frames.FRAME_OVERHEAD) + " bytes exceeds frame-max "
                            + frameMax, type, channel, 3);
                }
                break;
            case METHOD:
            case HEADER:
                if (size > maxMethodPayload) {
                    throw frameError(type.name().toLowerCase() + " frame of " + (size + Frames.FRAME_OVERHEAD)
                            + " bytes exceeds the limit of " + (maxMethodPayload + Frames.FRAME_OVERHEAD)
                            + " bytes (frame-max " + frameMax + ", maxMethodFrameSize " + maxMethodFrameSize + ")",
                            type, channel, 3);
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

    private int protocolHeader(ByteBuf in, int start, int end) {
        if (end - start < ProtocolHeader.LENGTH) {
            return -1;
        }
        if (in.getInt(start) != 0x414D5150) { // "AMQP"
            throw frameError("unknown frame type 65", null, -1, 0);
        }
        throw new ProtocolVersionMismatchException(in.getUnsignedByte(start + 4), in.getUnsignedByte(start + 5),
                in.getUnsignedByte(start + 6), in.getUnsignedByte(start + 7));
    }

    private AmqpProtocolException frameError(String detail, FrameType type, int channel, long offsetInFrame) {
        return new AmqpProtocolException(ReplyCode.FRAME_ERROR, detail + " at stream offset " + streamOffset, type,
                channel, -1, -1, offsetInFrame);
    }

    private AmqpProtocolException unexpected(String detail, FrameType type) {
        return new AmqpProtocolException(ReplyCode.UNEXPECTED_FRAME, detail + " at stream offset " + streamOffset,
                type, 0, -1, -1, 1);
    }
}
