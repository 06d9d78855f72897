package io.warren.codec.method;

import io.netty.buffer.ByteBuf;

/**
 * Writes one AMQP method's payload: class id, method id and arguments. Each method has its own
 * mutable, reusable implementation ({@code QueueDeclareEncoder}) with fluent setters named after the
 * spec's arguments and the spec's defaults preset; a setter given a value the wire cannot carry throws
 * {@link IllegalArgumentException} at once, so {@link #encode} never fails half-way.
 *
 * <p>Use {@link io.warren.codec.Frames#method} to get a whole frame. An encoder belongs to one thread
 * at a time.
 */
public interface MethodEncoder {

    /** The method's ids, name and argument list. */
    MethodInfo info();

    /** The exact number of bytes {@link #encode} writes. */
    int encodedLength();

    /** Appends the payload ({@link #encodedLength()} bytes) to {@code out}. */
    void encode(ByteBuf out);
}
