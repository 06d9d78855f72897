package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.impl.RawMemory;

/**
 * Splits the inbound byte stream into {@link Frame}s: the Netty side of the codec's {@link FrameReader}, which
 * parses and checks each frame (limits, end byte, method and content-header payloads; see there). The size is
 * checked as soon as a frame's 7-byte header is readable, before the decoder waits for (and the cumulation
 * grows to hold) the payload. Once frame-max is negotiated ({@link #setFrameMax(int)}) it bounds every frame;
 * before that, method frames (connection.start with a broker's large server properties) are accepted up to
 * {@code maxMethodFrameSize} (default {@value #DEFAULT_MAX_METHOD_FRAME_SIZE}).
 *
 * <p>A plain inbound handler rather than a {@code ByteToMessageDecoder}: frames are parsed straight from
 * each read buffer and passed on one by one as they are found, so a read costs no output list, no
 * cumulation and no re-entry bookkeeping per frame; only a frame split across reads is copied (into a
 * cumulation that holds that one frame). Auto-read off, removal and close behave as with
 * {@code ByteToMessageDecoder}.
 *
 * <p>Each frame's payload is a retained slice of the read buffer (or of the cumulation; no copy) inside a pooled
 * {@link Frame}; the next handler owns the frame and releases it. By default method and content-header payloads
 * are validated before they are passed on, so views wrapped over them never read out of bounds.
 *
 * <p>Malformed input is terminal: the reader's {@link AmqpProtocolException} (with the reply code to close the
 * connection with) reaches {@code exceptionCaught} unwrapped, and from then on the decoder discards everything it
 * receives. The frames decoded before the bad one are still passed on. If the very first bytes are a protocol
 * header, the server refused the client's version: that is a {@link ProtocolVersionMismatchException}.
 *
 * <p>Threading: an instance belongs to one channel pipeline; every method runs on its event loop.
 */
public class FrameDecoder extends PassThroughInboundHandler {

    /** Default limit for method and content-header frames (whole frame) until frame-max is negotiated: 1 MiB. */
    public static final int DEFAULT_MAX_METHOD_FRAME_SIZE = 1 << 20;

    /** The most a cumulation reserves for a partial frame before its bytes arrive: it grows as they do. */
    private static final int MAX_INITIAL_CUMULATION = 1 << 20;

    /** Parses and checks the frames; holds the limits. */
    private final FrameReader reader;

    // event loop only
    private boolean failed;
    /** The bytes of a frame split across reads, from its first byte; null when the last read ended on a frame. */
    private ByteBuf cumulation;
    /** Whether a ByteBuf was read since the last read-complete. */
    private boolean selfFiredChannelRead;
    /** Whether a read since the last read-complete yielded a frame. */
    private boolean firedChannelRead;
    /** Whether a read is being decoded: a read that re-enters meanwhile is deferred. */
    private boolean decoding;
    /** The bytes of reads that re-entered while a read was decoded; null when none. */
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
     * @param maxMethodFrameSize the limit for method and content-header frames (whole frame, bytes) until
     *        frame-max is negotiated; at least {@value Frames#FRAME_MIN_SIZE}
     * @param validatePayloads whether to validate method and content-header payloads before passing
     *        frames on; turn it off only when the next handler calls the validators itself
     */
    public FrameDecoder(int maxMethodFrameSize, boolean validatePayloads) {
        this.reader = new FrameReader(maxMethodFrameSize, validatePayloads);
    }

    /**
     * Sets the negotiated frame-max (from connection.tune-ok): 0 means unlimited, otherwise at least
     * {@value Frames#FRAME_MIN_SIZE}. It bounds every frame from now on, method and content-header frames
     * included. Event loop only.
     */
    public void setFrameMax(int frameMax) {
        reader.setFrameMax(frameMax);
    }

    /** The frame-max in force: {@value Frames#FRAME_MIN_SIZE} until set, 0 for unlimited. */
    public int frameMax() {
        return reader.frameMax();
    }

    /** Whether the decoder met malformed input and now discards everything. */
    public boolean isFailed() {
        return failed;
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
            ctx.fireChannelRead(frame); // a read that re-enters meanwhile is deferred, so none fails this one
            if (ctx.isRemoved()) {
                passOnRest(ctx, in);
                return;
            }
        }
        if (index < end && !inactive) { // closed while a frame was passed on: nothing more will complete it
            int partial = end - index;
            // room for the whole frame when its size is known (already checked against the limits), capped so a
            // header announcing a huge frame does not reserve memory before its bytes arrive
            long needed =
                    partial >= Frames.FRAME_HEADER_SIZE ? reader.pendingFrameLength(in, index) : Frames.FRAME_OVERHEAD;
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
        for (; ; ) {
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
                    if (ctx.isRemoved()) {
                        passOnRest(ctx, in);
                        return false;
                    }
                    return true;
                }
            }
            long needed = have >= Frames.FRAME_HEADER_SIZE
                    ? reader.pendingFrameLength(cum, cum.readerIndex())
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
     * Decodes the frame at {@code start} with the reader: returns it, its payload a retained slice of {@code in},
     * or null when more bytes are needed.
     */
    private Frame decodeFrame(ByteBuf in, long address, int start, int end, Frame.Pool frames) {
        FrameReader r = reader;
        if (!r.read(in, address, start, end)) {
            return null;
        }
        return frames.get(r.type(), r.channel(), in.retainedSlice(r.payloadIndex(), r.payloadSize()));
    }
}
