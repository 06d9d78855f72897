package io.warren.codec.method;

import io.netty.buffer.ByteBuf;

/**
 * A flyweight view of one AMQP method's arguments where they lie in a frame payload. Each method has
 * its own {@code final} implementation named after it ({@code QueueDeclareOk}); this interface lets
 * generic code (dispatch tables, logging) wrap any of them.
 *
 * <p>Views never move the buffer's indices, never retain it and never allocate except in the
 * accessors whose names say so ({@code xxxAsString()}, {@code toString()}). A view is valid while the
 * frame that owns the buffer lives, and belongs to one thread.
 */
public interface MethodView {

    /**
     * Points this view at a method payload.
     *
     * @param buf the buffer holding the payload (usually {@code frame.payload()})
     * @param offset the index of the payload's class-id field ({@code frame.payload().readerIndex()})
     * @return this view
     */
    MethodView wrap(ByteBuf buf, int offset);

    /** The method's ids, name and argument list. */
    MethodInfo info();
}
