package io.warren.bench.latency;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import io.warren.perf.MessageBody;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Warren with its defaults, published to as warren-perf's driver publishes without confirms: a pooled direct
 * buffer per message, exchange and routing key encoded once, {@link Channel#publishNoOutcome} (nothing allocated
 * for an outcome). A caller idle longer than {@code PublishOptions.callerWriteGap} (50 us) finds the connection
 * idle and writes the message to the socket itself.
 */
final class WarrenRoundTripClient implements RoundTripClient {

    private static final long TIMEOUT_SECONDS = 10;
    private static final ShortString EXCHANGE = ShortString.of("");
    private static final ShortString ROUTING = ShortString.of(ROUTING_KEY);

    private final AmqpClient client;
    private final Connection connection;
    private final Channel channel;
    private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
    private final int bodySize;

    private WarrenRoundTripClient(AmqpClient client, Connection connection, Channel channel, int bodySize) {
        this.client = client;
        this.connection = connection;
        this.channel = channel;
        this.bodySize = bodySize;
    }

    static WarrenRoundTripClient open(String uri, int bodySize) throws Exception {
        AmqpClient client = AmqpClient.create();
        try {
            Connection connection = client.connect(ConnectionOptions.fromUri(uri)
                            .connectionName("round-trip")
                            .connectionTimeout(Duration.ofSeconds(TIMEOUT_SECONDS)))
                    .toCompletableFuture()
                    .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            Channel channel = connection.openChannel().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return new WarrenRoundTripClient(client, connection, channel, bodySize);
        } catch (Exception | Error e) {
            client.close().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            throw e;
        }
    }

    @Override
    public void publish() {
        ByteBuf body = alloc.directBuffer(bodySize, bodySize).writeZero(bodySize);
        MessageBody.stamp(body, System.nanoTime());
        // the body belongs to Warren from here: released once written
        channel.publishNoOutcome(EXCHANGE, ROUTING, false, BasicProperties.EMPTY, body);
    }

    @Override
    public void close() throws Exception {
        try {
            connection.close().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } finally {
            client.close().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }
}
