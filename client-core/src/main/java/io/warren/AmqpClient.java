package io.warren;

import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.warren.impl.Connector;
import io.warren.impl.connection.ClientLoopGroup;
import io.warren.impl.connection.Transport;
import io.warren.impl.metrics.CountingMetrics;
import io.warren.impl.metrics.MetricsCollector;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * The entry point: connects to RabbitMQ. One client holds the event loops its connections run on, its
 * own (created here, shut down by {@link #close()}) or the application's ({@link ClientOptions#eventLoopGroup}).
 * Each connection lives on one event loop of the group.
 *
 * <pre>{@code
 * AmqpClient client = AmqpClient.create();
 * client.connect("amqp://guest:guest@localhost:5672/%2F")
 *       .thenCompose(Connection::openChannel)
 *       .thenCompose(ch -> ch.queueDeclare(QueueSpec.named("orders").durable(true)))
 *       .thenAccept(ok -> System.out.println(ok.queue() + " has " + ok.messageCount() + " messages"));
 * }</pre>
 *
 * Thread-safe; nothing here blocks.
 */
public final class AmqpClient {

    private final EventLoopGroup group;
    private final boolean ownsGroup;
    private final Connector connector;
    private final String transport;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    /** One per connect in flight, completed once its connection is tracked or its connect failed. */
    private final Set<CompletableFuture<Void>> connecting = ConcurrentHashMap.newKeySet();
    /** Set by {@link #close()}: later connects fail, and a connect in flight closes what it opened. */
    private volatile boolean closed;
    /** {@link MetricsCollector#NOOP} unless metrics are enabled: held in final fields down to the hot paths. */
    private final MetricsCollector metricsCollector;

    private final ClientMetrics metrics;

    private AmqpClient(ClientOptions options) {
        if (options.metricsEnabled()) {
            CountingMetrics counting = new CountingMetrics();
            this.metricsCollector = counting;
            this.metrics = counting;
        } else {
            this.metricsCollector = MetricsCollector.NOOP;
            this.metrics = CountingMetrics.DISABLED;
        }
        if (options.eventLoopGroup() != null) {
            this.group = options.eventLoopGroup();
            this.ownsGroup = false;
            Class<? extends io.netty.channel.Channel> channelClass = Transport.channelClassFor(group);
            this.connector = new Connector(group, channelClass, metricsCollector);
            this.transport = channelClass.getSimpleName();
        } else {
            Transport t = Transport.best(options.preferNativeTransport());
            // not Netty's MultiThreadIoEventLoopGroup: its loops' termination would start Netty's global executor
            // thread, not a daemon, and keep a JVM that closed this client alive a second longer (ClientLoopGroup)
            this.group = new ClientLoopGroup(options.ioThreads(), options.threadFactory(), t.ioHandlerFactory());
            this.ownsGroup = true;
            this.connector = new Connector(group, t.channelClass(), metricsCollector);
            this.transport = t.name();
        }
    }

    /** A client with its own event loops (native transport when available). */
    public static AmqpClient create() {
        return new AmqpClient(new ClientOptions());
    }

    public static AmqpClient create(ClientOptions options) {
        return new AmqpClient(new ClientOptions(Objects.requireNonNull(options, "options")));
    }

    /**
     * Opens a connection. Completes with the open connection after connection.open-ok, or fails with an
     * {@link AuthenticationException} (bad credentials), a {@link ConnectionClosedException} carrying the
     * broker's reply code and text (an unknown virtual host, for example), a
     * {@link ConnectionTimeoutException}, or a {@link ConnectionFailedException} when no address accepted the TCP
     * connection (its cause is the socket's failure: {@link java.net.ConnectException}, unknown host, ...).
     */
    public CompletionStage<Connection> connect(ConnectionOptions options) {
        ConnectionOptions copy = new ConnectionOptions(Objects.requireNonNull(options, "options"));
        // registered before closed is read, and close() sets closed before it reads the set: either this connect
        // sees the client closed or close() waits for it
        CompletableFuture<Void> inFlight = new CompletableFuture<>();
        connecting.add(inFlight);
        if (closed) {
            connecting.remove(inFlight);
            return CompletableFuture.failedFuture(clientClosed());
        }
        CompletableFuture<Connection> tracked;
        try {
            tracked = connector.connect(copy).toCompletableFuture().thenApply(new Track());
        } catch (RuntimeException | Error e) {
            new Settle(inFlight).accept(null, e); // close() must not wait for it
            throw e;
        }
        tracked.whenComplete(new Settle(inFlight));
        return tracked;
    }

    private static IllegalStateException clientClosed() {
        return new IllegalStateException("the client is closed");
    }

    // The connect and close callbacks are named classes, not lambdas: each lambda is a class a fresh JVM generates at
    // its first use, and a program's first connect and close pay for them.

    /** Keeps an opened connection until it closes, for {@link #close()}. */
    private final class Track implements Function<Connection, Connection> {
        @Override
        public Connection apply(Connection c) {
            connections.add(c);
            if (closed) {
                // opened while the client closed: close() closes it too if it saw it, and waits for this connect
                c.close();
                throw clientClosed();
            }
            if (metrics.enabled()) {
                c.addRecoveryListener(new RecoveryListener() {
                    @Override
                    public void recoverySucceeded(Connection connection) {
                        metricsCollector.recovered();
                    }
                });
            }
            c.closeFuture().thenRun(new Forget(c));
            return c;
        }
    }

    /** A connect in flight has ended: tracked, or failed. */
    private final class Settle implements BiConsumer<Object, Throwable> {
        private final CompletableFuture<Void> inFlight;

        Settle(CompletableFuture<Void> inFlight) {
            this.inFlight = inFlight;
        }

        @Override
        public void accept(Object connection, Throwable failure) {
            connecting.remove(inFlight);
            inFlight.complete(null);
        }
    }

    private final class Forget implements Runnable {
        private final Connection connection;

        Forget(Connection connection) {
            this.connection = connection;
        }

        @Override
        public void run() {
            connections.remove(connection);
        }
    }

    /** Opens a connection from an AMQP URI ({@link AmqpUri}); a malformed URI fails the stage. */
    public CompletionStage<Connection> connect(String uri) {
        ConnectionOptions options;
        try {
            options = ConnectionOptions.fromUri(uri);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        return connect(options);
    }

    /**
     * What this client's connections counted; all zeros ({@link ClientMetrics#enabled()} false) unless
     * {@link ClientOptions#metricsEnabled(boolean)} was set.
     */
    public ClientMetrics metrics() {
        return metrics;
    }

    /** The socket transport in use: {@code io_uring}, {@code epoll}, {@code nio}, or the given group's channel. */
    public String transport() {
        return transport;
    }

    /**
     * Closes every connection of this client, then shuts down the client's own event loops (an
     * application's group is left running). A connect made after this fails with {@link IllegalStateException};
     * one in flight that still opens its connection (on the application's group) has it closed and fails the same
     * way, and the stage returned here completes after that. Completes when done: with the client's own loops, on
     * the last of their threads as it ends, and no thread of the client's is left behind (a program may exit at
     * once). When a loop never used could not start its thread to terminate (the JVM could create no thread: an
     * {@link OutOfMemoryError}), the stage still completes once the loops have terminated, failed with that error.
     */
    public CompletionStage<Void> close() {
        closed = true;
        if (ownsGroup || connecting.isEmpty()) {
            // with the client's own loops, their shutdown ends a connect in flight at once
            return closeConnections();
        }
        // the application's loops stay up: a connect in flight may yet open, and is closed then (Track). Its
        // in-flight future never fails (Settle), and this path is rare: a lambda here costs no first close
        return CompletableFuture.allOf(connecting.toArray(new CompletableFuture<?>[0]))
                .thenCompose(ended -> closeConnections());
    }

    private CompletionStage<Void> closeConnections() {
        // a loop, not a stream: a stream pipeline's classes and lambdas cost a fresh JVM's first close
        List<CompletableFuture<Void>> pending = new ArrayList<>(connections.size());
        for (Connection c : connections) {
            pending.add(c.close().toCompletableFuture());
        }
        CompletableFuture<?>[] closes = pending.toArray(new CompletableFuture<?>[0]);
        CompletableFuture<Void> done = new CompletableFuture<>();
        CompletableFuture.allOf(closes).whenComplete(new ShutDown(done));
        return done;
    }

    /**
     * Once every connection has closed (or failed to: the client closes all the same), shuts the client's own loops
     * down and completes {@code done} when they have terminated; with the application's group, at once.
     */
    private final class ShutDown implements BiConsumer<Object, Throwable>, GenericFutureListener<Future<Object>> {
        private final CompletableFuture<Void> done;
        /** What the shutdown threw, if anything; written before the listener is added, which publishes it. */
        private Throwable shutdownFailure;

        ShutDown(CompletableFuture<Void> done) {
            this.done = done;
        }

        @Override
        public void accept(Object closed, Throwable failure) {
            if (!ownsGroup) {
                done.complete(null);
                return;
            }
            try {
                group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
            } catch (Throwable e) {
                // An Error too: a loop never used must start its thread to terminate, and the JVM may not create it
                // (OutOfMemoryError), which Netty rethrows. Thrown on from here it would end in the discarded stage
                // of whenComplete and close() would never complete; the group terminates all the same
                // (ClientLoopGroup), so close() completes then, failed with it: the caller sees the Error.
                shutdownFailure = e;
            }
            // the termination, not the future shutdownGracefully returns (none when it threw); added after it, as
            // the termination may complete inside it, before what it threw is known
            group.terminationFuture().addListener(this);
        }

        /** The client's loops have terminated. */
        @Override
        public void operationComplete(Future<Object> terminated) {
            if (shutdownFailure != null) {
                done.completeExceptionally(shutdownFailure);
            } else if (!terminated.isSuccess()) {
                done.completeExceptionally(terminated.cause());
            } else {
                done.complete(null);
            }
        }
    }
}
