package io.warren.impl;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
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
import io.warren.codec.FrameDecoder;
import io.warren.impl.connection.ByteCounter;
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
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a connection: tries the addresses in order (or shuffled), each attempt bounded by the connection
 * timeout (TCP connect, TLS and AMQP handshake together). An attempt the broker refused at the AMQP level
 * (bad credentials, unknown virtual host) is not retried on the next address: the next would refuse too.
 *
 * <p>The pipeline: {@code [SslHandler] -> FrameDecoder -> ConnectionHandler}.
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
        attempt(options, ssl, addresses, 0, new ArrayList<>(), result, recovering, loops);
        return result;
    }

    private void attempt(
            ConnectionOptions options,
            SslContext ssl,
            List<Address> addresses,
            int index,
            List<Throwable> failures,
            CompletableFuture<Connection> result,
            ConnectionImpl recovering,
            EventLoopGroup loops) {
        Address address = addresses.get(index);
        CompletableFuture<ConnectionImpl> connected = new CompletableFuture<>();
        ConnectionHandler handler = ConnectionImpl.newHandler(options, address, connected, recovering, metrics);
        long timeoutMillis = options.connectionTimeout().toMillis();
        Bootstrap bootstrap = new Bootstrap()
                .group(loops)
                // Warren's own NIO channel is made here, not by Netty's reflection: io.warren.impl is not exported
                // to Netty's module on the module path
                .channelFactory(
                        channelClass == DirectNioSocketChannel.class
                                ? (io.netty.channel.ChannelFactory<io.netty.channel.Channel>)
                                        DirectNioSocketChannel::new
                                : new io.netty.channel.ReflectiveChannelFactory<>(channelClass))
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.SO_KEEPALIVE, true)
                // Netty 4.2's default adaptive allocator hands out slices that are not recycled: with it,
                // FrameDecoder's retainedSlice cost ~100 B per frame (measured on the loopback peer's sink:
                // 135 B -> 30 B per publish with the pooled one). The pooled allocator recycles them.
                .option(ChannelOption.ALLOCATOR, ConnectionAllocator.INSTANCE)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(timeoutMillis, Integer.MAX_VALUE))
                .handler(new ChannelInitializer<>() {
                    @Override
                    protected void initChannel(io.netty.channel.Channel ch) {
                        ChannelPipeline p = ch.pipeline();
                        if (ssl != null) {
                            String host = options.tls().serverName() != null
                                    ? options.tls().serverName()
                                    : address.host();
                            SslHandler sslHandler = ssl.newHandler(ch.alloc(), host, address.port());
                            sslHandler.setHandshakeTimeoutMillis(timeoutMillis);
                            p.addLast("tls", sslHandler);
                        }
                        if (metrics.counts()) {
                            p.addLast("bytes", new ByteCounter(metrics));
                        }
                        p.addLast("frames", new FrameDecoder());
                        p.addLast("amqp", handler);
                    }
                });
        ChannelFuture connect = bootstrap.connect(address.host(), address.port());
        ScheduledFuture<?> timer = connect.channel()
                .eventLoop()
                .schedule(
                        () -> {
                            if (!connected.isDone()) {
                                String stage = connect.isSuccess() ? handler.stageDescription() : "TCP connect";
                                ConnectionTimeoutException timeout =
                                        new ConnectionTimeoutException("could not connect to " + address + " within "
                                                + timeoutMillis + " ms (connection_timeout); stage reached: " + stage);
                                handler.connectTimedOut(
                                        timeout); // an attempt that had already failed keeps its own failure
                                connected.completeExceptionally(timeout);
                                connect.channel().close();
                            }
                        },
                        timeoutMillis,
                        TimeUnit.MILLISECONDS);
        connect.addListener(f -> {
            if (!f.isSuccess()) {
                // the connection never opened: not a "closed" connection (the cause is the socket's failure)
                connected.completeExceptionally(new ConnectionFailedException(
                        "could not connect to " + address + ": " + f.cause().getMessage(),
                        List.of(address),
                        f.cause()));
            }
        });
        connected.whenComplete((connection, error) -> {
            timer.cancel(false);
            if (error == null) {
                if (recovering == null && options.recovery().enabled()) {
                    connection.enableRecovery(new ConnectionRecovery(
                            connection, options, (o, onLoop) -> reconnect(o, connection, onLoop), handler.eventLoop()));
                }
                result.complete(connection);
                return;
            }
            failures.add(error);
            boolean refusedByBroker = refusedByBroker(error);
            if (!refusedByBroker && index + 1 < addresses.size()) {
                LOG.debug("connecting to {} failed, trying the next address: {}", address, error.getMessage());
                attempt(options, ssl, addresses, index + 1, failures, result, recovering, loops);
                return;
            }
            result.completeExceptionally(failure(addresses, failures));
        });
    }

    /** The broker itself refused (credentials, virtual host): the next address would refuse too. */
    private static boolean refusedByBroker(Throwable error) {
        return error instanceof ConnectionClosedException cce && cce.replyCode() != 0 && cce.initiatedByBroker();
    }

    private static Throwable failure(List<Address> addresses, List<Throwable> failures) {
        Throwable last = failures.get(failures.size() - 1);
        if (failures.size() == 1) {
            return last;
        }
        if (refusedByBroker(last)) {
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
}
