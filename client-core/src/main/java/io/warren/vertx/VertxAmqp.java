package io.warren.vertx;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * Warren for Vert.x: the same connections and channels, with Vert.x {@link Future}s completed on the caller's
 * context and consumers as {@link io.vertx.core.streams.ReadStream}s ({@link DeliveryStream}). Vert.x is an
 * optional dependency of Warren: this package needs {@code vertx-core} on the class path (or module path).
 *
 * <pre>{@code
 * VertxAmqp amqp = VertxAmqp.create(vertx);
 * amqp.connect(client, "amqp://localhost")                  // in a verticle: futures complete on its context
 *     .compose(VertxConnection::openChannel)
 *     .compose(ch -> ch.consume("orders", ConsumeOptions.builder().prefetch(100).build()))
 *     .onSuccess(stream -> stream.handler(d -> { handle(d); d.ack(); }));
 * }</pre>
 *
 * <p>"The caller's context" is {@code vertx.getOrCreateContext()} at the call: the verticle's (or worker's)
 * context when called from one, else a new event-loop context. Thread-safe.
 */
public final class VertxAmqp {

    private final Vertx vertx;

    private VertxAmqp(Vertx vertx) {
        this.vertx = vertx;
    }

    public static VertxAmqp create(Vertx vertx) {
        return new VertxAmqp(Objects.requireNonNull(vertx, "vertx"));
    }

    public Vertx vertx() {
        return vertx;
    }

    /** Connects with {@code client} (which may run on Vert.x's event loops: {@code ClientOptions.eventLoopGroup}). */
    public Future<VertxConnection> connect(AmqpClient client, ConnectionOptions options) {
        return future(client.connect(options)).map(this::wrap);
    }

    public Future<VertxConnection> connect(AmqpClient client, String uri) {
        return future(client.connect(uri)).map(this::wrap);
    }

    /** The Vert.x face of a connection opened elsewhere. */
    public VertxConnection wrap(Connection connection) {
        return new VertxConnection(this, Objects.requireNonNull(connection, "connection"));
    }

    /** The Vert.x face of a channel opened elsewhere. */
    public VertxChannel wrap(Channel channel) {
        return new VertxChannel(this, Objects.requireNonNull(channel, "channel"));
    }

    /** {@code stage} as a Future whose callbacks run on the caller's context. */
    public <T> Future<T> future(CompletionStage<T> stage) {
        return Future.fromCompletionStage(stage, vertx.getOrCreateContext());
    }

    /** Runs tasks on {@code context}, in order: a consumer's executor that delivers on a Vert.x context. */
    static Executor executor(Context context) {
        return task -> context.runOnContext(ignored -> task.run());
    }
}
