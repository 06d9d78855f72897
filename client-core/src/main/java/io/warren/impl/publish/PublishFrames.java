package io.warren.impl.publish;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.FastThreadLocal;
import io.warren.codec.Frames;
import io.warren.codec.PublishFraming;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.content.SequenceHeader;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicPublishEncoder;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.connection.PublishBuffers;

/**
 * Frames one publish without copying the body. Two shapes:
 *
 * <pre>
 * body fits one frame (the usual case): three buffers, written one after the other
 *   head (PublishBuffers)                                            caller's buffer   tail (PublishBuffers, 1 byte)
 *   +------+--------------+--------------------+------------------+  +--------------+  +------+
 *   | free | method frame | content-header frm | body frame hdr 7 |  | body bytes   |  | 0xCE |
 *   +------+--------------+--------------------+------------------+  +--------------+  +------+
 *    ^ before the reader index: the previous publish's end octet goes there when this head follows it, and
 *      the tail is then held back for the next head (OutboundPath.writeContent): two writes per message in a run
 *
 * body spans frames: the codec's PublishFraming, one CompositeByteBuf (head + retained slices of the body)
 * </pre>
 *
 * The first shape writes the caller's buffer object itself: no slice, no composite, nothing allocated per
 * message: head and tail come from the connection's {@link PublishBuffers}, which reuses them. That is what makes
 * a small publish cost zero bytes of garbage; {@link PublishFraming}'s composite costs a few hundred. A buffer another owner
 * still references ({@code refCnt() > 1}, e.g. the same buffer published twice with {@code retain()}) is written
 * as a {@code retainedSlice()} instead, because the socket moves the reader index of the object it writes.
 *
 * <p>The caller's thread checks the arguments and computes the size ({@link #wireLength}); the event loop frames
 * ({@link #frame}), except for a publish its caller writes itself ({@link #frameHead}, into the outbound path's
 * caller head, while it holds the path's writer token). Framing on the loop is deliberate: head and tail are taken and released on the same thread,
 * where they are reused (and where the pooled allocator's thread cache works, for a head too large to be kept);
 * allocated on an application thread (not a {@code FastThreadLocalThread}) each would cost a new buffer object.
 */
final class PublishFrames {

    /**
     * The head and body of a single-frame message (its end octet is the outbound path's to write), the head alone of
     * an empty one, or the one composite of a longer one (body null).
     */
    static final class MessageBuffers {
        ByteBuf head;
        ByteBuf body;
    }

    /** One encoder per thread: encoders are mutable. */
    private static final FastThreadLocal<BasicPublishEncoder> ENCODER = new FastThreadLocal<>() {
        @Override
        protected BasicPublishEncoder initialValue() {
            return new BasicPublishEncoder();
        }
    };

    private PublishFrames() {}

    /**
     * The bytes the message takes on the wire (method, content header and body frames), from the UTF-8 lengths of
     * exchange and routing key that {@link ShortString#checkedLength} gave.
     */
    static long wireLength(
            int exchangeLength, int routingKeyLength, BasicProperties properties, long bodyLength, int frameMax) {
        // basic.publish: class, method, ticket (6), two shortstr with their length octets, bits (1)
        long method = 7 + 1 + exchangeLength + 1 + routingKeyLength;
        long header = ContentHeaderEncoder.encodedLength(properties);
        long bodyFrames = PublishFraming.bodyFrameCount(bodyLength, frameMax);
        return method + header + 2 * Frames.FRAME_OVERHEAD + bodyLength + bodyFrames * Frames.FRAME_OVERHEAD;
    }

    /**
     * The content header is one frame, which frame-max bounds like any other: RabbitMQ closes the connection (501)
     * for a larger one, failing every channel on it.
     *
     * @param headerPayload the content header's payload length ({@link ContentHeaderEncoder#encodedLength})
     * @throws IllegalArgumentException when the frame would exceed {@code frameMax} (0: no limit)
     */
    static void checkHeaderFits(int channel, int headerPayload, int frameMax) {
        if (frameMax != 0 && headerPayload + Frames.FRAME_OVERHEAD > frameMax) {
            throw new IllegalArgumentException("channel " + channel + ": the properties make a content-header frame"
                    + " of " + (headerPayload + Frames.FRAME_OVERHEAD) + " bytes, over the connection's frame-max of "
                    + frameMax + " (the broker would close the connection)");
        }
    }

    /**
     * Frames basic.publish, its content header and {@code body} (ownership taken) into {@code out}. Event loop.
     *
     * @param frameMax the negotiated frame-max, 0 for no limit
     * @param added a header to add to the message's headers, set to {@code value}; null for none
     * @throws IllegalArgumentException for an argument the caller's checks let through (the body is released)
     */
    static void frame(
            PublishBuffers buffers,
            int channel,
            int frameMax,
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            SequenceHeader added,
            long value,
            ByteBuf body,
            MessageBuffers out) {
        BasicPublishEncoder method = ENCODER.get();
        ByteBuf head = null;
        try {
            method.exchange(exchange).routingKey(routingKey).mandatory(mandatory);
            int headerPayload = ContentHeaderEncoder.encodedLength(properties, added);
            // checked on the caller's thread too; again here, as a publish held across a recovery is framed for the
            // new connection, whose frame-max may be smaller
            checkHeaderFits(channel, headerPayload, frameMax);
            int bodyLength = body.readableBytes();
            // frame-max counts the 7-byte header and the end octet: a body frame carries frame-max - 8 bytes
            if (frameMax != 0 && bodyLength > frameMax - Frames.FRAME_OVERHEAD) {
                ByteBuf whole = body;
                body = null; // PublishFraming takes it: it releases our reference whether it returns or throws
                out.head = PublishFraming.publish(
                        buffers.alloc(), channel, frameMax, method, properties, added, value, whole);
                out.body = null;
                return;
            }
            int headLength = headLength(method, headerPayload, bodyLength);
            // one byte free before the frames: the previous publish's end octet, when this head follows it
            // (OutboundPath.writeContent)
            head = buffers.head(headLength + 1);
            head.writerIndex(1).readerIndex(1);
            Frames.writeMethod(head, channel, method);
            Frames.writeContentHeader(head, channel, bodyLength, properties, added, value);
            if (bodyLength == 0) {
                body.release(); // no body frame for an empty body
                body = null;
                out.head = head;
                out.body = null;
                head = null;
                return;
            }
            Frames.writeHeader(head, FrameType.BODY, channel, bodyLength);
            // The body frame's end octet is not framed here: the outbound path writes it after the body, in the next
            // publish's head or as a buffer of its own (OutboundPath.writeContent).
            out.body = body.refCnt() == 1 ? body : shared(body);
            body = null;
            out.head = head;
            head = null;
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

    /**
     * Frames the head of a single-frame publish with a body of {@code bodyLength} bytes (method frame, content-header
     * frame, body frame header) into {@code head}, for a caller that writes the message itself
     * ({@link OutboundPath#writeDirect}). Writes nothing and returns false when it does not fit {@code head}'s
     * capacity. The caller checked the arguments ({@link #checkHeaderFits} and the names' lengths).
     *
     * @param added a header to add to the message's headers, set to {@code value}; null for none
     */
    static boolean frameHead(
            ByteBuf head,
            int channel,
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            SequenceHeader added,
            long value,
            int bodyLength) {
        BasicPublishEncoder method = ENCODER.get();
        try {
            method.exchange(exchange).routingKey(routingKey).mandatory(mandatory);
            int headLength = headLength(method, ContentHeaderEncoder.encodedLength(properties, added), bodyLength);
            if (headLength > head.maxWritableBytes()) {
                return false;
            }
            Frames.writeMethod(head, channel, method);
            Frames.writeContentHeader(head, channel, bodyLength, properties, added, value);
            Frames.writeHeader(head, FrameType.BODY, channel, bodyLength);
            return true;
        } finally {
            method.reset(); // drop the caller's strings
        }
    }

    /**
     * The bytes of a single-frame publish's head: method frame, content-header frame of {@code headerPayload} bytes
     * and, for a body, the body frame's header (its end octet is the outbound path's).
     */
    private static int headLength(BasicPublishEncoder method, int headerPayload, int bodyLength) {
        return method.encodedLength()
                + headerPayload
                + 2 * Frames.FRAME_OVERHEAD
                + (bodyLength == 0 ? 0 : Frames.FRAME_HEADER_SIZE);
    }

    /**
     * A slice with its own indices for a buffer someone else also references; takes {@code body}'s reference. A
     * slice, not a duplicate: its capacity ends with the body, so nothing can be appended into the owner's memory.
     */
    private static ByteBuf shared(ByteBuf body) {
        try {
            return body.retainedSlice();
        } finally {
            body.release();
        }
    }
}
