package io.warren.impl.channel;

import io.netty.buffer.ByteBuf;

/**
 * A method that carries content (basic.deliver, basic.return, basic.get-ok) with its content header and
 * body, as {@link ContentAssembler} put them together. Each part is a retained slice of the frames it
 * came in (no copy); the body is one slice when it came in one frame, a {@code CompositeByteBuf} of
 * slices otherwise, and an empty buffer for an empty body.
 *
 * <p>Ownership: whoever receives it owns all three buffers and calls {@link #release()} once (or passes
 * the buffers on to an object that does, as {@code GetResponseImpl} does).
 */
public record AssembledContent(int channel, ByteBuf method, ByteBuf header, ByteBuf body) {

    /** The method's class id and method id as one key, {@code classId << 16 | methodId}. */
    public int methodKey() {
        return method.getInt(method.readerIndex());
    }

    /** The body size the content header announced (equal to {@code body().readableBytes()}). */
    public long bodySize() {
        return header.getLong(header.readerIndex() + 4);
    }

    public void release() {
        method.release();
        header.release();
        body.release();
    }
}
