package io.warren.impl.channel;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.MessageTooLargeException;
import io.warren.codec.Frame;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;

/**
 * Puts a content-carrying method (basic.deliver, basic.return, basic.get-ok) together with the content
 * header and body frames that follow it on the same channel. One per channel; event loop only.
 *
 * <pre>
 * METHOD (deliver/return/get-ok) -> HEADER (class, weight, body-size, properties) -> BODY* until body-size
 * </pre>
 *
 * <p>No body byte is copied: a body that arrives in one frame is that frame's payload, detached from
 * the frame; one that spans frames is a {@link CompositeByteBuf} of the payloads. The limit on the body
 * size is enforced on the header's announced size, before anything is kept for the body, so a peer
 * cannot make the client allocate without bound.
 *
 * <p>Every method here takes ownership of the frame it is given, and releases it (or detaches its
 * payload into the message being assembled).
 */
public final class ContentAssembler {

    /** Parts of a body kept as slices before a run of small ones is copied into one buffer. */
    static final int CONSOLIDATE_PARTS = 256;
    /** A part below this size on average makes its run small: RabbitMQ's frames are of frame-max (128 KiB). */
    static final int SMALL_PART = 1024;

    /** Told when a message is complete. Event loop; the listener owns the {@link AssembledContent}. */
    public interface Listener {
        void onContent(AssembledContent content);

        /**
         * The same, as the three buffers (owned by the listener from here): a listener on the hot path (basic.deliver)
         * overrides this one so that no {@link AssembledContent} is made per message.
         */
        default void onContent(int channel, ByteBuf method, ByteBuf header, ByteBuf body) {
            onContent(new AssembledContent(channel, method, header, body));
        }

        /** The message was dropped before it was complete (channel or connection closing, size limit). */
        default void onAbort(Throwable cause) {}

        /**
         * Whether the message is still wanted after the application's channel.close, until close-ok: true for a
         * method the broker still sends then (basic.return, whose publish's ack comes through the close too).
         */
        default boolean throughClose() {
            return false;
        }
    }

    private final int channel;
    private final long maxBodySize;
    private final ByteBufAllocator alloc;

    // event loop only
    private Listener listener;
    private ByteBuf method;
    private ByteBuf header;
    private ByteBuf body;
    private CompositeByteBuf composite;
    /** The first part of {@link #composite} not yet in a consolidated run. */
    private int runStart;

    private long expected;
    private long received;
    private boolean awaitingHeader;

    public ContentAssembler(int channel, long maxBodySize, ByteBufAllocator alloc) {
        this.channel = channel;
        this.maxBodySize = maxBodySize;
        this.alloc = alloc;
    }

    /** True between a content-carrying method and the last byte of its body. */
    public boolean isActive() {
        return listener != null;
    }

    /**
     * Starts a message with {@code methodFrame} (ownership taken); the header and body frames that follow
     * go to {@link #onHeader} and {@link #onBody}, and {@code listener} gets the message.
     */
    public void begin(Frame methodFrame, Listener listener) {
        if (isActive()) {
            methodFrame.release();
            throw unexpected("a content-carrying method arrived before the previous message's content was complete");
        }
        begin(methodFrame.detachPayload(), listener);
    }

    /** As {@link #begin(Frame, Listener)} with the method's payload (ownership taken), e.g. a retained slice. */
    public void begin(ByteBuf methodPayload, Listener listener) {
        if (isActive()) {
            methodPayload.release();
            throw unexpected("a content-carrying method arrived before the previous message's content was complete");
        }
        this.method = methodPayload;
        this.listener = listener;
        this.awaitingHeader = true;
    }

    /**
     * The content header (ownership taken). Throws {@link MessageTooLargeException} (after releasing what it
     * holds) when the announced body size is over the limit; the caller then closes the channel.
     */
    public void onHeader(Frame frame) {
        if (!isActive() || !awaitingHeader) {
            frame.release();
            throw unexpected("content header without a content-carrying method before it");
        }
        ByteBuf payload = frame.payload();
        // class-id (2) weight (2) body-size (8): the codec validated the header's length.
        long bodySize = payload.getLong(payload.readerIndex() + 4);
        if (bodySize < 0 || bodySize > maxBodySize) {
            frame.release();
            MessageTooLargeException e = new MessageTooLargeException(
                    "inbound message on channel " + channel + " announces a body of "
                            + Long.toUnsignedString(bodySize) + " bytes, over the limit of " + maxBodySize
                            + " bytes (ConnectionOptions.maxInboundMessageBodySize)",
                    channel);
            abort(e);
            throw e;
        }
        header = frame.detachPayload();
        awaitingHeader = false;
        expected = bodySize;
        received = 0;
        if (bodySize == 0) {
            body = Unpooled.EMPTY_BUFFER;
            complete();
        }
    }

    /** A body frame (ownership taken). */
    public void onBody(Frame frame) {
        if (!isActive() || awaitingHeader) {
            frame.release();
            throw unexpected("content body without a content header before it");
        }
        int size = frame.payload().readableBytes();
        if (received + size > expected) {
            frame.release();
            throw unexpected("content body frames carry more than the " + expected + " bytes the header announced");
        }
        if (size == 0) {
            frame.release();
            return;
        }
        ByteBuf part = frame.detachPayload();
        received += size;
        if (body == null && received == expected) {
            body = part; // the common case: the whole body in one frame, kept as it is
        } else {
            if (composite == null) {
                runStart = 0;
                composite = alloc.compositeBuffer(Integer.MAX_VALUE);
                if (body != null) {
                    composite.addComponent(true, body);
                }
                body = composite;
            }
            composite.addComponent(true, part);
            int parts = composite.numComponents();
            if (parts - runStart == CONSOLIDATE_PARTS) {
                // A broker may split a body into frames of any size, down to a byte: each part held as a slice costs
                // some hundred bytes of heap and pins its read buffer. A run of small parts becomes one buffer (each
                // byte copied at most once: the next run starts after it); a body in frames of frame-max is never
                // copied.
                if (composite.capacity() - composite.toByteIndex(runStart) < (long) CONSOLIDATE_PARTS * SMALL_PART) {
                    composite.consolidate(runStart, CONSOLIDATE_PARTS);
                    runStart++;
                } else {
                    runStart = parts;
                }
            }
        }
        if (received == expected) {
            complete();
        }
    }

    /**
     * The application closed the channel: drops a message in progress unless its listener takes it
     * {@link Listener#throughClose() through the close}.
     */
    public void abortAtClose(Throwable cause) {
        if (listener != null && !listener.throughClose()) {
            abort(cause);
        }
    }

    /** Drops a message in progress, releases what it holds and tells its listener (channel or connection closing). */
    public void abort(Throwable cause) {
        Listener l = listener;
        release();
        if (l != null) {
            l.onAbort(cause);
        }
    }

    private void release() {
        if (method != null) {
            method.release();
        }
        if (header != null) {
            header.release();
        }
        if (body != null) {
            body.release();
        }
        reset();
    }

    private void complete() {
        Listener l = listener;
        ByteBuf m = method;
        ByteBuf h = header;
        ByteBuf b = body;
        reset();
        l.onContent(channel, m, h, b);
    }

    private void reset() {
        listener = null;
        method = null;
        header = null;
        body = null;
        composite = null;
        expected = 0;
        received = 0;
        awaitingHeader = false;
    }

    /** A 505 for the channel, the content in progress aborted; for the caller to throw. */
    AmqpProtocolException unexpected(String detail) {
        AmqpProtocolException e =
                new AmqpProtocolException(ReplyCode.UNEXPECTED_FRAME, detail, null, channel, -1, -1, -1);
        abort(e);
        return e;
    }
}
