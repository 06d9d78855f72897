package io.warren.vertx;

import io.vertx.core.Future;
import io.warren.Connection;
import io.warren.ConnectionClosedException;

/**
 * A {@link Connection} with Vert.x futures, completed on the caller's context. Thread-safe; {@link #connection()}
 * gives the rest of the API.
 */
public final class VertxConnection {

    private final VertxAmqp amqp;
    private final Connection connection;

    VertxConnection(VertxAmqp amqp, Connection connection) {
        this.amqp = amqp;
        this.connection = connection;
    }

    public Connection connection() {
        return connection;
    }

    public Future<VertxChannel> openChannel() {
        return amqp.future(connection.openChannel()).map(amqp::wrap);
    }

    public Future<Void> close() {
        return amqp.future(connection.close());
    }

    /** Completes once the connection is closed, with the reason. */
    public Future<ConnectionClosedException> closeFuture() {
        return amqp.future(connection.closeFuture());
    }

    @Override
    public String toString() {
        return "Vert.x " + connection;
    }
}
