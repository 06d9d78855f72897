package io.warren;

/**
 * Told, on the connection's event loop, when a channel's {@link Channel#isWritable()} changes as the event
 * loop sees it. Must not block. A listener may be told {@code true} twice in a row when a change in between
 * was too short for the event loop to see.
 */
@FunctionalInterface
public interface WritabilityListener {

    void writabilityChanged(Channel channel, boolean writable);
}
