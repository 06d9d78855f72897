package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.MethodTable;

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
 * <p>A plain inbound handler rather than a {@code ByteToMessageDecoder}: frames are parsed straight from
 * each read buffer and passed on one by one as they are found, so a read costs no output list, no
 * cumulation and no re-entry bookkeeping per frame; only a frame split across reads is copied (into a
 * cumulation that holds that one frame). Auto-read off, removal and close behave as with
 * {@code ByteToMessageDecoder}.
 *
 * <p>Each frame's payload is a retained slice of the read buffer (or of the cumulation; no copy) inside a pooled
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
public class FrameDecoder extends ChannelInboundHandlerAdapter {

    /** Default limit for method and content-header frames (whole frame): 1 MiB. */
    public static final int DEFAULT_MAX_METHOD_FRAME_SIZE = 1 << 20;

    /** The most a cumulation reserves for a partial frame before its bytes arrive: it grows as they do. */
    private static final int MAX_INITIAL_CUMULATION = 1 << 20;

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
    /** The bytes of a frame split across reads, from its first byte; null when the last read ended on a frame. */
    private ByteBuf cumulation;
    /** Whether a ByteBuf was read since the last read-complete, and whether it yielded a frame. */
    private boolean selfFiredChannelRead;
    private boolean firedChannelRead;
    /** Whether a read is being decoded, and the bytes of reads that re-entered meanwhile (null when none). */
    private boolean decoding;
    private ByteBuf deferred;
    /** Whether the channel went inactive: a partial frame is then dropped, not kept. */
    private boolean inactive;
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

    // ---- channel events ----------------------------------------------------------------------------------

    /**
     * Decodes the frames in {@code msg} (a {@code ByteBuf}, released here) and passes each on as it is found;
     * anything else is passed on untouched. Frames are sliced from the read buffer itself: only the bytes of
     * a frame split across reads are copied, into the cumulation.
     */
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf)) {
            ctx.fireChannelRead(msg);
            return;
        }
        ByteBuf in = (ByteBuf) msg;
        selfFiredChannelRead = true;
        if (decoding) {
            // re-entered from a handler this one passed a frame to (an SslHandler can unwrap while that handler's
            // write is flushed): these bytes follow the rest of the read being decoded, so they wait for it
            defer(ctx, in);
            return;
        }
        decoding = true;
        try {
            decodeRead(ctx, in);
            ByteBuf next;
            while ((next = deferred) != null) {
                deferred = null;
                if (ctx.isRemoved()) {
                    ctx.fireChannelRead(next); // as the rest of the read was: the next handler owns it
                } else {
                    decodeRead(ctx, next);
                }
            }
        } finally {
            decoding = false;
        }
    }

    /** Decodes one read buffer, which is released here. */
    private void decodeRead(ChannelHandlerContext ctx, ByteBuf in) {
        try {
            if (failed) {
                return;
            }
            Frame.Pool frames = pool;
            if (frames == null || !frames.isOwner()) {
                // first read, or the channel moved to another event loop: frames come from the reading thread's pool
                pool = frames = new Frame.Pool();
            }
            if (cumulation != null && !completeCumulation(ctx, in, frames)) {
                return; // the whole read went into the partial frame
            }
            decodeFrames(ctx, in, frames);
        } catch (Throwable e) {
            // malformed input, or a failure of our own (an allocation for a partial frame): either way the stream
            // is out of step from here, so nothing more is decoded and nothing kept
            failed = true;
            releaseCumulation();
            releaseDeferred();
            throw e;
        } finally {
            in.release();
        }
    }

    /** Keeps a copy of a re-entrant read's bytes for after the read being decoded; releases {@code in}. */
    private void defer(ChannelHandlerContext ctx, ByteBuf in) {
        try {
            if (!failed && in.isReadable()) {
                ByteBuf d = deferred;
                if (d == null) {
                    deferred = d = ctx.alloc().buffer(in.readableBytes());
                }
                d.writeBytes(in);
            }
        } finally {
            in.release();
        }
    }

    /** Like {@code ByteToMessageDecoder}: asks for another read when this one yielded no frame and auto-read is off. */
    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (selfFiredChannelRead && !firedChannelRead && !ctx.channel().config().isAutoRead()) {
            ctx.read();
        }
        selfFiredChannelRead = false;
        firedChannelRead = false;
        ctx.fireChannelReadComplete();
    }

    /** A partial frame at close is dropped: the connection is gone. */
    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        inactive = true;
        releaseCumulation();
        releaseDeferred();
        ctx.fireChannelInactive();
    }

    /** Like {@code ByteToMessageDecoder}: the bytes of a partial frame are passed on to the next handler. */
    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        ByteBuf cum = cumulation;
        if (cum != null) {
            cumulation = null;
            if (cum.isReadable() && !failed) {
                ctx.fireChannelRead(cum);
                ctx.fireChannelReadComplete();
            } else {
                cum.release();
            }
        }
    }

    private void releaseDeferred() {
        ByteBuf d = deferred;
        if (d != null) {
            deferred = null;
            d.release();
        }
    }

    private void releaseCumulation() {
        ByteBuf cum = cumulation;
        if (cum != null) {
            cumulation = null;
            cum.release();
        }
    }

    // ---- decoding ----------------------------------------------------------------------------------------

    /**
     * Decodes and passes on every whole frame of {@code in} (which the caller releases); the bytes of a
     * trailing partial frame are copied into a new cumulation.
     */
    private void decodeFrames(ChannelHandlerContext ctx, ByteBuf in, Frame.Pool frames) {
        int index = in.readerIndex();
        int end = in.writerIndex();
        // a socket read is a pooled direct buffer: one accessibility check here, and every index read below lies
        // between its reader and writer index, so the headers and end bytes are read from memory unchecked
        long address = RawMemory.AVAILABLE && in.hasMemoryAddress() ? in.memoryAddress() : 0;
        while (end - index >= Frames.FRAME_HEADER_SIZE) {
            Frame frame = decodeFrame(in, address, index, end, frames);
            if (frame == null) {
                break;
            }
            // past this frame before passing it on: the next handler may close the channel or remove this one
            index += frame.payload().readableBytes() + Frames.FRAME_OVERHEAD;
            in.readerIndex(index);
            firedChannelRead = true;
            ctx.fireChannelRead(frame);
            if (failed) {
                return; // only when a handler down the pipeline re-entered this one with bad input
            }
            if (ctx.isRemoved()) {
                passOnRest(ctx, in);
                return;
            }
        }
        if (index < end && !inactive) { // closed while a frame was passed on: nothing more will complete it
            int partial = end - index;
            // room for the whole frame when its size is known (already checked against the limits), capped so a
            // header announcing a huge frame does not reserve memory before its bytes arrive
            long needed = partial >= Frames.FRAME_HEADER_SIZE ? pendingFrameLength(in, index) : Frames.FRAME_OVERHEAD;
            int capacity = (int) Math.max(partial, Math.min(needed, MAX_INITIAL_CUMULATION));
            cumulation = ctx.alloc().buffer(capacity).writeBytes(in, index, partial);
            in.readerIndex(end);
        }
    }

    /**
     * Moves bytes from {@code in} into the cumulation until it holds one whole frame, then passes that frame
     * on. Returns false when {@code in} ran out first (the frame stays partial).
     */
    private boolean completeCumulation(ChannelHandlerContext ctx, ByteBuf in, Frame.Pool frames) {
        ByteBuf cum = cumulation;
        for (;;) {
            int have = cum.readableBytes();
            if (have >= Frames.FRAME_HEADER_SIZE) {
                // checks the header as soon as it is whole, and decodes the frame once its end byte is there
                Frame frame = decodeFrame(cum, 0, cum.readerIndex(), cum.writerIndex(), frames);
                if (frame != null) {
                    // the cumulation only ever holds one frame: the payload slice now keeps it alive
                    cumulation = null;
                    cum.release();
                    firedChannelRead = true;
                    ctx.fireChannelRead(frame);
                    if (failed) {
                        return false; // a handler down the pipeline re-entered this one with bad input
                    }
                    if (ctx.isRemoved()) {
                        passOnRest(ctx, in);
                        return false;
                    }
                    return true;
                }
            }
            long needed = have >= Frames.FRAME_HEADER_SIZE ? pendingFrameLength(cum, cum.readerIndex())
                    : Frames.FRAME_HEADER_SIZE;
            int n = (int) Math.min(needed - have, in.readableBytes());
            if (n == 0) {
                return false;
            }
            cum.ensureWritable(n);
            cum.writeBytes(in, n);
        }
    }

    /** After this handler was removed by the one it passed a frame to: the rest of the read goes on, as in B2MD. */
    private static void passOnRest(ChannelHandlerContext ctx, ByteBuf in) {
        if (in.isReadable()) {
            ctx.fireChannelRead(in.readRetainedSlice(in.readableBytes()));
        }
    }

    /**
     * The length of the frame (or protocol header) at {@code start}, whose 7-byte header is readable and was
     * checked by {@link #decodeFrame}.
     */
    private long pendingFrameLength(ByteBuf in, int start) {
        if (streamOffset == 0 && in.getUnsignedByte(start) == 'A') {
            return ProtocolHeader.LENGTH;
        }
        return in.getUnsignedInt(start + 3) + Frames.FRAME_OVERHEAD;
    }

    /**
     * Decodes the frame at {@code start} (at least a header's worth of bytes before {@code end}): returns it,
     * its payload a retained slice of {@code in}, or null when more bytes are needed. Checks the header first,
     * so a frame too large is refused before its bytes are waited for. Reads with absolute indices; from
     * memory when {@code address} (the buffer's memory address, or 0) is not 0, as the caller checked
     * {@code in} is accessible and {@code [start, end)} is readable.
     */
    private Frame decodeFrame(ByteBuf in, long address, int start, int end, Frame.Pool frames) {
        // type (8 bits), channel (16), size (32): one read when a whole frame's minimum is there, since
        // every ByteBuf accessor pays for its bounds and reference-count checks
        long header = end - start >= Frames.FRAME_OVERHEAD
                ? (address != 0 ? RawMemory.getLong(address + start) : in.getLong(start)) >>> 8
                : ((long) in.getUnsignedByte(start) << 48) | ((long) in.getUnsignedShort(start + 1) << 32)
                        | in.getUnsignedInt(start + 3);
        int typeId = (int) (header >>> 48);
        if (streamOffset == 0 && typeId == 'A') {
            protocolHeader(in, start, end);
            return null;
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
            return null;
        }
        int payloadIndex = start + Frames.FRAME_HEADER_SIZE;
        int endIndex = payloadIndex + payloadSize;
        int endOctet = address != 0 ? RawMemory.getUnsignedByte(address + endIndex) : in.getUnsignedByte(endIndex);
        if (endOctet != Frames.FRAME_END) {
            throw frameError(String.format("frame-end byte is 0x%02X, expected 0xCE (payload size %d)", endOctet,
                    payloadSize), type, channel, Frames.FRAME_HEADER_SIZE + payloadSize);
        }
        checkPayload(type, channel, in, payloadIndex, payloadSize);
        streamOffset += payloadSize + Frames.FRAME_OVERHEAD;
        return frames.get(type, channel, in.retainedSlice(payloadIndex, payloadSize));
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

    /** Returns when the 8 bytes are not all there yet; otherwise throws. */
    private void protocolHeader(ByteBuf in, int start, int end) {
        if (end - start < ProtocolHeader.LENGTH) {
            return;
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
