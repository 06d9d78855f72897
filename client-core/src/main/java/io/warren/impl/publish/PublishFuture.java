package io.warren.impl.publish;

import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.impl.connection.OutboundPath;
import java.util.concurrent.CompletableFuture;

/**
 * A publish's outcome future that is also the listener of its write (outside confirm mode): Netty's promise calls
 * it directly, so a publish with an outcome allocates no listener object of its own. The same size as a plain
 * {@code CompletableFuture} (the channel number fits its padding).
 */
final class PublishFuture extends CompletableFuture<PublishOutcome> implements OutboundPath.WriteListener {

    private final int channelNumber;

    PublishFuture(int channelNumber) {
        this.channelNumber = channelNumber;
    }

    /** The message was written (SENT), or its write failed. Event loop. */
    @Override
    public void written(Throwable cause) {
        completeWritten(this, channelNumber, cause);
    }

    /** Completes {@code future} as its message's write ended: SENT, or not written (retryable). */
    static void completeWritten(CompletableFuture<PublishOutcome> future, int channelNumber, Throwable cause) {
        if (cause == null) {
            future.complete(PublishOutcome.SENT);
        } else {
            future.completeExceptionally(new PublishNotConfirmedException(
                    "publish on channel " + channelNumber + " could not be written: " + cause,
                    cause,
                    channelNumber,
                    true));
        }
    }
}
