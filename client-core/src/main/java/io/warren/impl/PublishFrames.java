package io.warren.impl;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.FastThreadLocal;
import io.warren.codec.FrameType;
import io.warren.codec.Frames;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.content.PublishFraming;
import io.warren.codec.method.BasicPublishEncoder;

/**
 * Frames one publish on the caller's thread, without copying the body. Two shapes:
 *
 * <pre>
 * body fits one frame (the usual case): three buffers, written one after the other
 *   head (pooled, exact size)                                 caller's buffer       tail (pooled)
 *   +--------------+--------------------+------------------+  +------------------+  +------+
 *   | method frame | content-header frm | body frame hdr 7 |  | body bytes       |  | 0xCE |
 *   +--------------+--------------------+------------------+  +------------------+  +------+
 *
 * body spans frames: the codec's PublishFraming, one CompositeByteBuf (head + retained slices of the body)
 * </pre>
 *
 * The first shape writes the caller's buffer object itself: no slice, no composite, nothing allocated per
 * message beyond two pooled buffers whose objects Netty recycles. That is what makes a small publish cost
 * zero bytes of garbage; {@link PublishFraming}'s composite costs a few hundred. A buffer another owner still
 * references ({@code refCnt() > 1}, e.g. the same buffer published twice with {@code retain()}) is written as
 * a {@code retainedDuplicate()} instead, because the socket moves the reader index of the object it writes.
 *
 * <p>Ownership: {@link #frame} takes the caller's reference to {@code body} whatever happens: it is in the
 * returned task, or released before an exception is thrown.
 */
final class PublishFrames {

    /** One encoder per thread: encoders are mutable, and publishing happens on any thread. */
    private static final FastThreadLocal<BasicPublishEncoder> ENCODER = new FastThreadLocal<>() {
        @Override
        protected BasicPublishEncoder initialValue() {
            return new BasicPublishEncoder();
        }
    };

    private PublishFrames() {
    }

    /**
     * Frames basic.publish, its content header and {@code body} (ownership taken).
     *
     * @param frameMax the negotiated frame-max, 0 for no limit
     * @throws IllegalArgumentException for an exchange or routing key that is null or over 255 UTF-8 bytes
     *         (the body is released)
     */
    static PublishTask frame(ByteBufAllocator alloc, int channel, int frameMax, CharSequence exchange,
            CharSequence routingKey, boolean mandatory, BasicProperties properties, ByteBuf body) {
        BasicPublishEncoder method = ENCODER.get();
        ByteBuf head = null;
        try {
            method.exchange(exchange).routingKey(routingKey).mandatory(mandatory);
            int bodyLength = body.readableBytes();
            // frame-max counts the 7-byte header and the end octet: a body frame carries frame-max - 8 bytes
            if (frameMax != 0 && bodyLength > frameMax - Frames.FRAME_OVERHEAD) {
                ByteBuf whole = body;
                body = null; // PublishFraming takes it: it releases our reference whether it returns or throws
                ByteBuf frames = PublishFraming.publish(alloc, channel, frameMax, method, properties, whole);
                return PublishTask.newInstance(frames, null, null, mandatory);
            }
            int headLength = method.encodedLength() + ContentHeaderEncoder.encodedLength(properties)
                    + 2 * Frames.FRAME_OVERHEAD + (bodyLength == 0 ? 0 : Frames.FRAME_HEADER_SIZE);
            head = alloc.buffer(headLength, headLength);
            Frames.writeMethod(head, channel, method);
            Frames.writeContentHeader(head, channel, bodyLength, properties);
            if (bodyLength == 0) {
                body.release(); // no body frame for an empty body
                body = null;
                PublishTask task = PublishTask.newInstance(head, null, null, mandatory);
                head = null;
                return task;
            }
            Frames.writeHeader(head, FrameType.BODY, channel, bodyLength);
            ByteBuf tail = alloc.buffer(1, 1).writeByte(Frames.FRAME_END);
            ByteBuf own = body.refCnt() == 1 ? body : shared(body);
            body = null;
            PublishTask task = PublishTask.newInstance(head, own, tail, mandatory);
            head = null;
            return task;
        } finally {
            method.reset(); // drop the caller's strings
            if (body != null) {
                body.release();
            }
            if (head != null) {
                head.release();
            }
        }
    }

    /** A duplicate with its own indices for a buffer someone else also references; takes {@code body}'s reference. */
    private static ByteBuf shared(ByteBuf body) {
        try {
            return body.retainedDuplicate();
        } finally {
            body.release();
        }
    }
}
