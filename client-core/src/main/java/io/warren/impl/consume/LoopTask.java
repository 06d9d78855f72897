package io.warren.impl.consume;

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
    private final Runnable releaseFrames;

    /** {@code releaseFrames} releases the frames {@code onLoop} would have sent. */
    LoopTask(Runnable onLoop, CompletableFuture<?> future, Runnable releaseFrames) {
        this.onLoop = onLoop;
        this.future = future;
        this.releaseFrames = releaseFrames;
    }

    @Override
    public void run() {
        onLoop.run();
    }

    @Override
    public void discard(Throwable cause) {
        releaseFrames.run();
        future.completeExceptionally(new ConnectionClosedException(
                "the connection's event loop is shut down " + "(was the client or its event loop group closed?)",
                cause));
    }
}
