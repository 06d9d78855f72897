package io.warren.impl.connection;

import io.warren.Address;
import io.warren.AmqpException;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import java.util.Map;

/**
 * What the {@link ConnectionHandler} tells the connection the application holds (which outlives the handler when
 * recovery opens a new one), and the little it asks of it. Implemented by the client room's connection handle.
 * The calls come from the event loop.
 */
public interface ConnectionEvents extends Connection {

    /** The handler's outbound path exists (the handler was added to its pipeline): per-connection state may attach. */
    void outboundReady(ConnectionHandler handler);

    /** A new connection opened by recovery takes this handle over (no-op for the first connection). */
    void attach(ConnectionHandler handler, Address address);

    /** connection.tune-ok was sent with these values. */
    void tuned(int channelMax, int frameMax, int heartbeat);

    /** connection.open-ok came. */
    void opened(Map<String, Object> serverProperties);

    /** connection.blocked from the broker. */
    void blocked(String reason);

    /** connection.unblocked from the broker. */
    void unblocked();

    /** The connection stops being open: closing started. */
    void closing();

    /** The connection ended with {@code cause}. */
    void closed(ConnectionClosedException cause);

    /** The cause a lost connection's channels are closed with (a ConnectionLostException when recovery follows). */
    AmqpException channelCause(AmqpException cause);
}
