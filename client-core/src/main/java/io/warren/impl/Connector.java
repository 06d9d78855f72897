package io.warren.impl;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.Address;
import io.warren.AmqpException;
import io.warren.AuthMechanism;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionFailedException;
import io.warren.ConnectionOptions;
import io.warren.ConnectionTimeoutException;
import io.warren.TlsOptions;
import io.warren.codec.base.ReplyCode;
import io.warren.impl.connection.ConnectionAllocator;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.connection.DirectNioSocketChannel;
import io.warren.impl.metrics.MetricsCollector;
import io.warren.impl.recovery.ConnectionRecovery;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a connection: tries the addresses in order (or shuffled), each attempt bounded by the connection
 * timeout (TCP connect, TLS and AMQP handshake together). An attempt the broker refused at the AMQP level
 * (bad credentials, unknown virtual host) is not retried on the next address: the next would refuse too.
 *
 * <p>The pipeline: {@code [SslHandler] -> FrameDecoder -> ConnectionHandler}.
 *
 * <p>The callbacks of an attempt are a class ({@link Attempt}), not lambdas: in a fresh JVM each lambda is a class
 * generated at its first use, with method handle forms generated for its captured types, which a first connect
 * pays for (a class loaded from the jar costs a fraction of that).
 */
public final class Connector {

    private static final Logger LOG = LoggerFactory.getLogger(Connector.class);

    private final EventLoopGroup group;
    private final Class<? extends io.netty.channel.Channel> channelClass;
    private final MetricsCollector metrics;

    public Connector(EventLoopGroup group, Class<? extends io.netty.channel.Channel> channelClass) {
        this(group, channelClass, MetricsCollector.NOOP);
    }

    public Connector(
            EventLoopGroup group, Class<? extends io.netty.channel.Channel> channelClass, MetricsCollector metrics) {
        this.group = group;
        this.channelClass = channelClass;
        this.metrics = metrics;
    }

    /** Connects with {@code options} (copied by the caller). Never throws: failures fail the stage. */
    public CompletionStage<Connection> connect(ConnectionOptions options) {
        return connect(options, null, group);
    }

    /**
     * Automatic recovery: a new connection for {@code connection}, on its event loop {@code loop} (so that
     * everything the connection owns stays on one thread), across the addresses again.
     */
    private CompletionStage<ConnectionImpl> reconnect(
            ConnectionOptions options, ConnectionImpl connection, EventLoop loop) {
        return connect(options, connection, loop).thenApply(c -> (ConnectionImpl) c);
    }

    private CompletionStage<Connection> connect(
            ConnectionOptions options, ConnectionImpl recovering, EventLoopGroup loops) {
        CompletableFuture<Connection> result = new CompletableFuture<>();
        SslContext ssl;
        try {
            ssl = options.tls() == null ? null : sslContext(options.tls());
            if (options.authMechanism() == AuthMechanism.EXTERNAL && options.tls() == null) {
                throw new IllegalArgumentException(
                        "EXTERNAL authentication needs TLS (amqps) with a client certificate");
            }
        } catch (SSLException | RuntimeException e) {
            result.completeExceptionally(
                    e instanceof SSLException ? new AmqpException("invalid TLS settings: " + e.getMessage(), e) : e);
            return result;
        }
        List<Address> addresses = new ArrayList<>(options.addresses());
        if (options.shuffleAddresses()) {
            Collections.shuffle(addresses);
        }
        attempt(new Dial(options, ssl, addresses, result, recovering, loops), 0);
        return result;
    }

    /** One connect: the addresses, tried in turn, and what the attempts learnt. */
    private static final class Dial {
        final ConnectionOptions options;
        /** Null without TLS. */
        final SslContext ssl;

        final List<Address> addresses;
        final CompletableFuture<Connection> result;
        /** The connection recovery opens this one for; null for a new connection. */
        final ConnectionImpl recovering;

        final EventLoopGroup loops;
        /** Why each address failed, in order (completions of the attempts, one at a time). */
        final List<Throwable> failures = new ArrayList<>();

        Dial(
                ConnectionOptions options,
                SslContext ssl,
                List<Address> addresses,
                CompletableFuture<Connection> result,
                ConnectionImpl recovering,
                EventLoopGroup loops) {
            this.options = options;
            this.ssl = ssl;
            this.addresses = addresses;
            this.result = result;
            this.recovering = recovering;
            this.loops = loops;
        }
    }

    /** Warren's own NIO channel, made here, not by Netty's reflection (see {@link #attempt}). */
    private static final io.netty.channel.ChannelFactory<io.netty.channel.Channel> DIRECT_NIO =
            new io.netty.channel.ChannelFactory<>() {
                @Override
                public io.netty.channel.Channel newChannel() {
                    return new DirectNioSocketChannel();
                }
            };

    private void attempt(Dial dial, int index) {
        ConnectionOptions options = dial.options;
        SslContext ssl = dial.ssl;
        Address address = dial.addresses.get(index);
        CompletableFuture<ConnectionImpl> connected = new CompletableFuture<>();
        ConnectionHandler handler = ConnectionImpl.newHandler(options, address, connected, dial.recovering, metrics);
        long timeoutMillis = options.connectionTimeout().toMillis();
        Bootstrap bootstrap = new Bootstrap()
                .group(dial.loops)
                // Warren's own NIO channel is made here, not by Netty's reflection: io.warren.impl is not exported
                // to Netty's module on the module path
                .channelFactory(
                        channelClass == DirectNioSocketChannel.class
                                ? DIRECT_NIO
                                : new io.netty.channel.ReflectiveChannelFactory<>(channelClass))
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.SO_KEEPALIVE, true)
                // Netty 4.2's default adaptive allocator hands out slices that are not recycled: with it,
                // FrameDecoder's retainedSlice cost ~100 B per frame (measured on the loopback peer's sink:
                // 135 B -> 30 B per publish with the pooled one). The pooled allocator recycles them.
                .option(ChannelOption.ALLOCATOR, ConnectionAllocator.INSTANCE)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(timeoutMillis, Integer.MAX_VALUE))
                .handler(new PipelineInstaller(
                        ssl,
                        ssl == null || options.tls().serverName() == null
                                ? address.host()
                                : options.tls().serverName(),
                        address.port(),
                        timeoutMillis,
                        metrics,
                        handler));
        ChannelFuture connect = bootstrap.connect(address.host(), address.port());
        new Attempt(dial, index, connected, handler, connect, timeoutMillis).watch();
    }

    /**
     * One address's attempt, watched: its timeout (TCP connect, TLS and AMQP handshake together), its socket's
     * failure, and its outcome, which completes the connect or moves on to the next address.
     */
    private final class Attempt implements Runnable, ChannelFutureListener, BiConsumer<ConnectionImpl, Throwable> {
        private final Dial dial;
        private final int index;
        private final Address address;
        private final CompletableFuture<ConnectionImpl> connected;
        private final ConnectionHandler handler;
        private final ChannelFuture connect;
        private final long timeoutMillis;
        /** Set in {@link #watch()} before the outcome can be seen; null when the channel never had a loop. */
        private ScheduledFuture<?> timer;

        Attempt(
                Dial dial,
                int index,
                CompletableFuture<ConnectionImpl> connected,
                ConnectionHandler handler,
                ChannelFuture connect,
                long timeoutMillis) {
            this.dial = dial;
            this.index = index;
            this.address = dial.addresses.get(index);
            this.connected = connected;
            this.handler = handler;
            this.connect = connect;
            this.timeoutMillis = timeoutMillis;
        }

        void watch() {
            if (connect.isDone() && !connect.channel().isRegistered()) {
                // The channel could not be created (no file descriptors left) or registered (the loops shut down):
                // no loop to time the attempt on. It fails here, and the next address or recovery's backoff follows.
                connected.whenComplete(this);
                operationComplete(connect);
                return;
            }
            try {
                timer = connect.channel().eventLoop().schedule(this, timeoutMillis, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                connect.channel().close();
                connected.whenComplete(this);
                connected.completeExceptionally(new ConnectionFailedException(
                        "could not connect to " + address + ": its event loop is shut down", List.of(address), e));
                return;
            }
            connect.addListener(this);
            connected.whenComplete(this);
        }

        /** The timeout, on the channel's event loop. */
        @Override
        public void run() {
            if (!connected.isDone()) {
                String stage = connect.isSuccess() ? handler.stageDescription() : "TCP connect";
                ConnectionTimeoutException timeout = new ConnectionTimeoutException("could not connect to " + address
                        + " within " + timeoutMillis + " ms (connection_timeout); stage reached: " + stage);
                handler.connectTimedOut(timeout); // an attempt that had already failed keeps its own failure
                connected.completeExceptionally(timeout);
                connect.channel().close();
            }
        }

        /** The socket's connect. */
        @Override
        public void operationComplete(ChannelFuture f) {
            if (!f.isSuccess()) {
                // the connection never opened: not a "closed" connection (the cause is the socket's failure)
                connected.completeExceptionally(new ConnectionFailedException(
                        "could not connect to " + address + ": " + describe(f.cause()), List.of(address), f.cause()));
            }
        }

        /** The attempt's outcome: the connection open at connection.open-ok, or why not. */
        @Override
        public void accept(ConnectionImpl connection, Throwable error) {
            if (timer != null) {
                timer.cancel(false); // none when the attempt failed before it had a loop
            }
            ConnectionOptions options = dial.options;
            if (error == null) {
                if (dial.recovering == null && options.recovery().enabled()) {
                    connection.enableRecovery(new ConnectionRecovery(
                            connection, options, new Reconnect(connection), handler.eventLoop()));
                }
                dial.result.complete(connection);
                return;
            }
            dial.failures.add(error);
            if (!refusedByBroker(error) && index + 1 < dial.addresses.size()) {
                LOG.debug("connecting to {} failed, trying the next address: {}", address, error.getMessage());
                attempt(dial, index + 1);
                return;
            }
            dial.result.completeExceptionally(failure(dial.addresses, dial.failures));
        }
    }

    /** Automatic recovery's way to a new connection for {@code connection}. */
    private final class Reconnect implements ConnectionRecovery.Reconnector {
        private final ConnectionImpl connection;

        Reconnect(ConnectionImpl connection) {
            this.connection = connection;
        }

        @Override
        public CompletionStage<ConnectionImpl> reconnect(ConnectionOptions options, EventLoop loop) {
            return Connector.this.reconnect(options, connection, loop);
        }
    }

    /**
     * The broker refused the credentials (403): the next address, a node of the same cluster, would refuse them too.
     * Any other close is the node's (320 CONNECTION_FORCED from one shutting down, 530 NOT_ALLOWED for a virtual host
     * down on it or its connection limit): the next address may accept.
     */
    static boolean refusedByBroker(Throwable error) {
        return error instanceof ConnectionClosedException cce
                && cce.initiatedByBroker()
                && cce.replyCode() == ReplyCode.ACCESS_REFUSED;
    }

    /** The broker answered with a close of its own (a reply code): that answer is the news, not a wrapper of it. */
    private static boolean answeredByBroker(Throwable error) {
        return error instanceof ConnectionClosedException cce && cce.replyCode() != 0 && cce.initiatedByBroker();
    }

    static Throwable failure(List<Address> addresses, List<Throwable> failures) {
        Throwable last = failures.get(failures.size() - 1);
        if (failures.size() == 1) {
            return last;
        }
        if (answeredByBroker(last)) {
            // the broker's answer is the news (an AuthenticationException stays one); the addresses that did not
            // answer before it are kept as suppressed
            for (Throwable t : failures.subList(0, failures.size() - 1)) {
                last.addSuppressed(t);
            }
            return last;
        }
        AmqpException all = new ConnectionFailedException(
                "could not connect to any of " + addresses + "; last failure: " + last.getMessage(), addresses, last);
        for (Throwable t : failures.subList(0, failures.size() - 1)) {
            all.addSuppressed(t);
        }
        return all;
    }

    static SslContext sslContext(TlsOptions tls) throws SSLException {
        SslContextBuilder builder = SslContextBuilder.forClient();
        if (tls.trustManagerFactory() != null) {
            builder.trustManager(tls.trustManagerFactory());
        }
        if (tls.keyManagerFactory() != null) {
            builder.keyManager(tls.keyManagerFactory());
        }
        if (tls.protocols() != null) {
            builder.protocols(tls.protocols());
        }
        // HTTPS rules: the certificate must name the host we connect to (or serverName).
        builder.endpointIdentificationAlgorithm(tls.hostnameVerification() ? "HTTPS" : null);
        return builder.build();
    }

    /** The cause's message, or its class when it has none (an exception without a message would read "null"). */
    private static String describe(Throwable cause) {
        String message = cause.getMessage();
        return message == null ? cause.toString() : message;
    }
}
