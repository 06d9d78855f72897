package io.warren.vertx;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.internal.VertxInternal;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
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
 * AmqpClient client = VertxAmqp.client(vertx);              // on Vert.x's event loops, no threads of its own
 * VertxAmqp amqp = VertxAmqp.create(vertx);
 * amqp.connect(client, "amqp://localhost")                  // in a verticle: futures complete on its context
 *     .compose(VertxConnection::openChannel)
 *     .compose(ch -> ch.consume("orders", new ConsumeOptions().prefetch(100)))
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

    /**
     * A Warren client on {@code vertx}'s own event loops: no threads of its own, and a connection's callbacks run
     * on a Vert.x event-loop thread. {@link AmqpClient#close()} closes the client's connections and leaves the
     * event loops to Vert.x. The client's other options are the defaults.
     */
    public static AmqpClient client(Vertx vertx) {
        return client(vertx, new ClientOptions());
    }

    /**
     * As {@link #client(Vertx)}, with {@code options} (metrics, say); their event loop group and I/O threads are
     * replaced by {@code vertx}'s. {@code options} itself is not changed.
     */
    public static AmqpClient client(Vertx vertx, ClientOptions options) {
        Objects.requireNonNull(vertx, "vertx");
        // Vert.x 5 keeps its Netty group behind VertxInternal; this cast is the one place Warren relies on it,
        // so that applications never have to
        return AmqpClient.create(new ClientOptions(Objects.requireNonNull(options, "options"))
                .eventLoopGroup(((VertxInternal) vertx).nettyEventLoopGroup()));
    }

    public static VertxAmqp create(Vertx vertx) {
        return new VertxAmqp(Objects.requireNonNull(vertx, "vertx"));
    }

    public Vertx vertx() {
        return vertx;
    }

    /** Connects with {@code client} (which may run on Vert.x's event loops: {@link #client(Vertx)}). */
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
