package io.warren.impl.consume;

import io.warren.AmqpException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A consumer's cancel asked for while its channel could not carry it (lost with its connection, closing), or whose
 * basic.cancel the channel's loss cut off: it waits for recovery's outcome. It completes when the consumer ends (the
 * channel closed for good, recovery gave up or skipped the consumer), or follows the basic.cancel that goes out once
 * recovery has started the consumer again ({@link ConsumerImpl#cancelHeldCancel}). Event loop only.
 */
final class HeldCancel {

    private CompletableFuture<Void> future;
    private AmqpException cause;

    /** Whether a cancel waits here. */
    boolean isHeld() {
        return future != null;
    }

    /** Why the consumer is cancelled ({@code null}: by the application); meaningful while {@link #isHeld()}. */
    AmqpException cause() {
        return cause;
    }

    /** Holds a cancel completing {@code done}; a second one meanwhile ends as the first does. */
    void hold(AmqpException cause, CompletableFuture<Void> done) {
        if (future != null) {
            relay(future, done);
            return;
        }
        future = done;
        this.cause = cause;
    }

    /** The consumer ended: the broker has it no more, so the held cancel succeeded. */
    void consumerEnded() {
        CompletableFuture<Void> held = future;
        future = null;
        if (held != null) {
            held.complete(null);
        }
    }

    /** The held cancel goes out now as {@code sent}, whose outcome it takes; nothing is held afterwards. */
    void sentAs(CompletionStage<Void> sent) {
        CompletableFuture<Void> held = future;
        future = null;
        relay(sent, held);
    }

    /** Completes {@code to} as {@code from} completes. */
    static void relay(CompletionStage<Void> from, CompletableFuture<Void> to) {
        from.whenComplete((v, e) -> {
            if (e == null) {
                to.complete(null);
            } else {
                to.completeExceptionally(e);
            }
        });
    }
}
