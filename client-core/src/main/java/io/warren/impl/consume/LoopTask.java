package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.warren.ConnectionClosedException;
import io.warren.impl.connection.OutboundPath;
import java.util.concurrent.CompletableFuture;

/**
 * A task handed to the event loop that owns frames and a future (basic.consume, basic.cancel): if the loop is
 * gone and it never runs, the frames are released and the future failed, so nothing leaks and nobody waits.
 */
final class LoopTask implements OutboundPath.DiscardableTask {
    private final Runnable onLoop;
    private final CompletableFuture<?> future;
    private final ByteBuf[] frames;

    /** {@code frames} may hold nulls. */
    LoopTask(Runnable onLoop, CompletableFuture<?> future, ByteBuf... frames) {
        this.onLoop = onLoop;
        this.future = future;
        this.frames = frames;
    }

    @Override
    public void run() {
        onLoop.run();
    }

    @Override
    public void discard(Throwable cause) {
        for (ByteBuf frame : frames) {
            if (frame != null) {
                frame.release();
            }
        }
        future.completeExceptionally(new ConnectionClosedException(
                "the connection's event loop is shut down " + "(was the client or its event loop group closed?)",
                cause));
    }
}
