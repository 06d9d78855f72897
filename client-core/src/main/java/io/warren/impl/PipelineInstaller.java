package io.warren.impl;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.warren.codec.FrameDecoder;
import io.warren.impl.connection.ByteCounter;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.metrics.MetricsCollector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts a connection's handlers into its channel's pipeline, {@code [tls] -> [bytes] -> frames -> amqp}, when the
 * channel is registered (its options, the allocator among them, are set by then), and takes itself out first.
 *
 * <p>Netty's {@code ChannelInitializer} does the same, but it is annotated {@code @Sharable}, and Netty reads that
 * annotation (and each handler's {@code @Skip} marks) when a handler is added: the first annotation a JVM reads
 * makes it generate proxy classes for the annotation and its meta-annotations, about a tenth of the CPU time of a
 * first connect in a fresh JVM. Nothing this class adds carries an annotation that Netty reads.
 */
final class PipelineInstaller implements ChannelHandler {

    private static final Logger LOG = LoggerFactory.getLogger(PipelineInstaller.class);

    /** Null without TLS. */
    private final SslContext ssl;

    private final String sslHost;
    private final int sslPort;
    private final long handshakeTimeoutMillis;
    private final MetricsCollector metrics;
    private final ConnectionHandler handler;

    /**
     * @param ssl the TLS context, or null for a plain connection
     * @param sslHost the host name the TLS engine checks the certificate against (and sends as SNI)
     */
    PipelineInstaller(
            SslContext ssl,
            String sslHost,
            int sslPort,
            long handshakeTimeoutMillis,
            MetricsCollector metrics,
            ConnectionHandler handler) {
        this.ssl = ssl;
        this.sslHost = sslHost;
        this.sslPort = sslPort;
        this.handshakeTimeoutMillis = handshakeTimeoutMillis;
        this.metrics = metrics;
        this.handler = handler;
    }

    /** Bootstrap adds this before it registers the channel: Netty calls it on the event loop once registered. */
    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        assert ctx.executor().inEventLoop() : "pipeline set up off the event loop";
        Channel ch = ctx.channel();
        ChannelPipeline p = ctx.pipeline();
        try {
            // out first: the handlers added below see only each other (OutboundPath inspects the pipeline)
            p.remove(this);
            if (ssl != null) {
                SslHandler sslHandler = ssl.newHandler(ch.alloc(), sslHost, sslPort);
                sslHandler.setHandshakeTimeoutMillis(handshakeTimeoutMillis);
                p.addLast("tls", sslHandler);
            }
            if (metrics.counts()) {
                p.addLast("bytes", new ByteCounter(metrics));
            }
            p.addLast("frames", new FrameDecoder());
            p.addLast("amqp", handler);
        } catch (RuntimeException e) {
            // as ChannelInitializer does: the connect then fails on the closed channel
            LOG.warn("could not set up the pipeline of {}, closing it", ch, e);
            ch.close();
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        // nothing held
    }

    /** Never reached in practice: this handler leaves the pipeline as soon as it is added. */
    @Override
    @SuppressWarnings("deprecation")
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.fireExceptionCaught(cause);
    }
}
