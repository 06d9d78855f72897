package io.warren.impl.recovery;

import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.impl.connection.ConnectionHandler;
import java.util.concurrent.CompletionStage;

/**
 * What recovery needs of the connection the application holds, which lives on across the handlers recovery
 * opens for it. Implemented by the client room's connection handle.
 */
public interface RecoverableConnection extends Connection {

    /** The event-loop state of the connection's current handler. */
    ConnectionHandler handler();

    /** Recovery is complete: the connection is open again. */
    void recovered();

    /** Recovery gave up: the connection is closed for good, with why. */
    void gaveUp(ConnectionClosedException cause);

    /**
     * Opens a channel of recovery's own on {@code handler}'s connection (to declare the topology again); completes
     * at channel.open-ok. Event loop.
     */
    CompletionStage<RecoverableChannel> openChannel(ConnectionHandler handler);
}
