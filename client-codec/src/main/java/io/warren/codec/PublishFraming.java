package io.warren.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundInvoker;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.EventExecutor;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.content.SequenceHeader;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicPublishEncoder;
import io.warren.codec.method.MethodEncoder;

/**
 * Frames a message for the wire without copying its body: the method frame and the content-header
 * frame go into one pooled buffer, sized exactly before it is allocated; the body is cut at
 * frame-max - 8 into retained slices of the caller's buffer, each wrapped in its 7-byte frame header
 * and 0xCE end byte, and everything is returned as one {@link CompositeByteBuf}.
 *
 * <pre>
 * head buffer (one allocation)                                        caller's body (no copy)
 * +--------------------+--------------------+-----------------+      +----------------------+
 * | method frame       | header frame       | body hdr #1 (7) |  ... | slice #1             |
 * +--------------------+--------------------+-----------------+      +----------------------+
 * | CE + body hdr #2 (8) | CE + body hdr #3 (8) | ... | CE (1) |       | slice #2 | slice #3 |
 * +----------------------+----------------------+-----+--------+
 * composite: [head up to body hdr #1] [slice #1] [CE + hdr #2] [slice #2] ... [slice #n] [CE]
 * </pre>
 *
 * <p>The 7 + 1 byte pieces around the slices live after the head frames in the same buffer and are
 * added as slices of it, so a publish costs one buffer allocation whatever the number of body
 * frames (slices and the composite come from Netty's recyclers with a pooled allocator). An empty
 * body sends no body frame: the result is then the head buffer alone.
 *
 * <p><b>Ownership.</b> The caller's reference to {@code body} passes to the framing: the framing
 * releases it exactly once, whether it returns or throws (the returned buffer holds its own
 * references to the body's memory). The caller owns the returned buffer; writing it to a channel
 * passes that on. Do not touch the body's bytes until the returned buffer is released: they are
 * sent from where they lie.
 *
 * <p>The hot publisher encodes nothing per message: keep one {@link BasicPublishEncoder} per channel
 * with {@link ShortString} exchange and routing key, and reuse {@link BasicProperties} objects (they
 * encode themselves once).
 */
public final class PublishFraming {

    private PublishFraming() {}

    /**
     * Frames basic.publish, its content header and {@code body}. See the class comment for ownership.
     *
     * @param frameMax the negotiated frame-max, 0 for no limit
     * @return the frames; the caller owns the buffer
     * @throws IllegalArgumentException for an invalid channel, frame-max or null argument (the body,
     *         when given, is released all the same)
     */
    public static ByteBuf publish(
            ByteBufAllocator alloc,
            int channel,
            int frameMax,
            BasicPublishEncoder publish,
            BasicProperties properties,
            ByteBuf body) {
        return frame(alloc, channel, frameMax, publish, properties, null, 0, body);
    }

    /**
     * {@link #publish} with header {@code added} set to {@code value} in the message's headers table (see
     * {@link SequenceHeader}); {@code added} null adds nothing.
     */
    public static ByteBuf publish(
            ByteBufAllocator alloc,
            int channel,
            int frameMax,
            BasicPublishEncoder publish,
            BasicProperties properties,
            SequenceHeader added,
            long value,
            ByteBuf body) {
        return frame(alloc, channel, frameMax, publish, properties, added, value, body);
    }

    /**
     * Frames any content-carrying method (basic.publish from a client; basic.deliver, basic.return or
     * basic.get-ok from a server or a test peer), its content header and {@code body}. See the class
     * comment for ownership.
     *
     * @param frameMax the negotiated frame-max, 0 for no limit
     * @return the frames; the caller owns the buffer
     * @throws IllegalArgumentException for an invalid channel or frame-max, a method without content, or
     *         a null argument (the body, when given, is released all the same)
     */
    public static ByteBuf frame(
            ByteBufAllocator alloc,
            int channel,
            int frameMax,
            MethodEncoder method,
            BasicProperties properties,
            ByteBuf body) {
        return frame(alloc, channel, frameMax, method, properties, null, 0, body);
    }

    private static ByteBuf frame(
            ByteBufAllocator alloc,
            int channel,
            int frameMax,
            MethodEncoder method,
            BasicProperties properties,
            SequenceHeader added,
            long value,
            ByteBuf body) {
        if (body == null) {
            throw new IllegalArgumentException("body must not be null");
        }
        ByteBuf head = null;
        CompositeByteBuf out = null;
        try {
            check(alloc, channel, frameMax, method, properties);
            int bodyLength = body.readableBytes();
            int maxChunk = maxChunk(frameMax);
            int chunks = bodyFrameCount(bodyLength, frameMax);
            head = head(alloc, channel, method, properties, added, value, bodyLength, maxChunk, chunks);
            if (chunks == 0) {
                ByteBuf result = head;
                head = null;
                return result;
            }
            out = alloc.compositeBuffer(2 * chunks + 1);
            ByteBuf pieces = head;
            int piece = head.writerIndex();
            out.addComponent(true, head);
            head = null; // the composite owns it now
            int bodyIndex = body.readerIndex();
            for (int i = 0; i < chunks; i++) {
                int start = i * maxChunk;
                out.addComponent(true, body.retainedSlice(bodyIndex + start, Math.min(maxChunk, bodyLength - start)));
                int pieceLength = i == chunks - 1 ? 1 : Frames.FRAME_OVERHEAD;
                out.addComponent(true, pieces.retainedSlice(piece, pieceLength));
                piece += pieceLength;
            }
            ByteBuf result = out;
            out = null;
            return result;
        } finally {
            body.release();
            if (head != null) {
                head.release();
            }
            if (out != null) {
                out.release();
            }
        }
    }

    /**
     * The allocation-free variant for a publisher on the channel's event loop: the same frames, written
     * to {@code out} as consecutive messages (the head frames, each body slice, the 8- and 1-byte pieces
     * between them, all slices, recycled with a pooled allocator) instead of one composite, so no
     * {@code CompositeByteBuf} and no component objects are created; the transport gathers the messages
     * into one vectored write. It must run on the channel's event loop, so that no other write can land
     * between the pieces.
     *
     * <p>Ownership as for {@link #frame}: the caller's reference to {@code body} passes to this method,
     * which releases it exactly once whether it returns or throws; every buffer written passes to the
     * channel. {@code promise} completes with the last piece; the earlier pieces use the void promise, so a
     * failure among them reaches the pipeline's {@code exceptionCaught}.
     *
     * @param out a {@link Channel} or {@link ChannelHandlerContext}
     * @throws IllegalArgumentException as {@link #frame} does (the body is released all the same)
     * @throws IllegalStateException when called off the channel's event loop (the body is released)
     */
    public static void write(
            ChannelOutboundInvoker out,
            ByteBufAllocator alloc,
            int channel,
            int frameMax,
            MethodEncoder method,
            BasicProperties properties,
            ByteBuf body,
            ChannelPromise promise) {
        if (body == null) {
            throw new IllegalArgumentException("body must not be null");
        }
        ByteBuf head = null;
        try {
            check(alloc, channel, frameMax, method, properties);
            EventExecutor executor = out instanceof ChannelHandlerContext
                    ? ((ChannelHandlerContext) out).executor()
                    : out instanceof Channel ? ((Channel) out).eventLoop() : null;
            if (executor == null || !executor.inEventLoop()) {
                throw new IllegalStateException("PublishFraming.write must run on the channel's event loop");
            }
            int bodyLength = body.readableBytes();
            int maxChunk = maxChunk(frameMax);
            int chunks = bodyFrameCount(bodyLength, frameMax);
            head = head(alloc, channel, method, properties, null, 0, bodyLength, maxChunk, chunks);
            if (chunks == 0) {
                ByteBuf only = head;
                head = null;
                out.write(only, promise);
                return;
            }
            // The head goes out as a slice, never itself: its spare capacity holds the pieces, and a handler that
            // coalesces writes (SslHandler) appends the next buffer into a buffer's spare capacity, which would
            // overwrite them. A slice has no room past its bytes. Our reference to head is released in finally.
            int piece = head.writerIndex();
            ChannelPromise voidPromise = out.voidPromise();
            out.write(head.retainedSlice(0, piece), voidPromise);
            int bodyIndex = body.readerIndex();
            for (int i = 0; i < chunks; i++) {
                int start = i * maxChunk;
                int pieceLength = i == chunks - 1 ? 1 : Frames.FRAME_OVERHEAD;
                out.write(body.retainedSlice(bodyIndex + start, Math.min(maxChunk, bodyLength - start)), voidPromise);
                out.write(head.retainedSlice(piece, pieceLength), i == chunks - 1 ? promise : voidPromise);
                piece += pieceLength;
            }
        } finally {
            body.release();
            if (head != null) {
                head.release();
            }
        }
    }

    /** The number of body frames a body of {@code bodyLength} bytes needs under {@code frameMax} (0: no limit). */
    public static int bodyFrameCount(long bodyLength, int frameMax) {
        if (bodyLength == 0) {
            return 0;
        }
        return (int) (1 + (bodyLength - 1) / maxChunk(frameMax));
    }

    /** The largest body frame payload: frame-max counts the header and end byte. */
    private static int maxChunk(int frameMax) {
        return frameMax == 0 ? Integer.MAX_VALUE : frameMax - Frames.FRAME_OVERHEAD;
    }

    /**
     * One exactly sized buffer: method frame, header frame and, when there is a body, the first body
     * frame's header, then the pieces that go between and after the body slices (an end byte and the
     * next header, 8 bytes, per later chunk; the last end byte). Its writer index stops after the first
     * body header: the pieces are reached through slices.
     */
    private static ByteBuf head(
            ByteBufAllocator alloc,
            int channel,
            MethodEncoder method,
            BasicProperties properties,
            SequenceHeader added,
            long value,
            int bodyLength,
            int maxChunk,
            int chunks) {
        int headLength = method.encodedLength()
                + ContentHeaderEncoder.encodedLength(properties, added)
                + 2 * Frames.FRAME_OVERHEAD;
        int piecesLength = chunks == 0 ? 0 : Frames.FRAME_HEADER_SIZE + (chunks - 1) * Frames.FRAME_OVERHEAD + 1;
        ByteBuf head = alloc.buffer(headLength + piecesLength, headLength + piecesLength);
        try {
            Frames.writeMethod(head, channel, method);
            Frames.writeContentHeader(head, channel, bodyLength, properties, added, value);
            if (chunks == 0) {
                return head;
            }
            Frames.writeHeader(head, FrameType.BODY, channel, Math.min(maxChunk, bodyLength));
            int firstPart = head.writerIndex();
            for (int i = 1; i < chunks; i++) {
                head.writeByte(Frames.FRAME_END);
                Frames.writeHeader(head, FrameType.BODY, channel, Math.min(maxChunk, bodyLength - i * maxChunk));
            }
            head.writeByte(Frames.FRAME_END);
            head.writerIndex(firstPart);
            return head;
        } catch (RuntimeException | Error e) {
            head.release();
            throw e;
        }
    }

    private static void check(
            ByteBufAllocator alloc, int channel, int frameMax, MethodEncoder method, BasicProperties properties) {
        if (alloc == null || method == null || properties == null) {
            throw new IllegalArgumentException("alloc, method and properties must not be null");
        }
        Frames.checkChannel(channel);
        if (channel == 0) {
            throw new IllegalArgumentException("content cannot be sent on channel 0");
        }
        if (frameMax != 0 && frameMax < Frames.FRAME_MIN_SIZE) {
            throw new IllegalArgumentException(
                    "frameMax must be 0 (unlimited) or at least " + Frames.FRAME_MIN_SIZE + ": " + frameMax);
        }
        if (!method.info().hasContent()) {
            throw new IllegalArgumentException(method.info().name() + " carries no content");
        }
    }
}
