package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.warren.ConnectionClosedException;
import java.util.concurrent.CompletableFuture;

/**
 * A call handed from the caller's thread to the event loop that owns what it carries: if the loop is
 * shut down and the task never runs, the frame is released and the caller's future fails, instead of a
 * leaked buffer and a future that never completes.
 */
public final class HandOver implements OutboundPath.DiscardableTask {

    private final Runnable onLoop;
    private final ByteBuf frame;
    private final CompletableFuture<?> future;

    private HandOver(Runnable onLoop, ByteBuf frame, CompletableFuture<?> future) {
        this.onLoop = onLoop;
        this.frame = frame;
        this.future = future;
    }

    /** Runs {@code onLoop} on {@code path}'s event loop; {@code frame} and {@code future} may be null. */
    public static void run(OutboundPath path, Runnable onLoop, ByteBuf frame, CompletableFuture<?> future) {
        path.execute(new HandOver(onLoop, frame, future));
    }

    @Override
    public void run() {
        onLoop.run();
    }

    @Override
    public void discard(Throwable cause) {
        if (frame != null) {
            frame.release();
        }
        if (future != null) {
            future.completeExceptionally(new ConnectionClosedException(
                    "the connection's event loop is shut down (was the client or its event loop group closed?)",
                    cause));
        }
    }
}
