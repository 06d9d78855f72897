package io.warren.bench.latency;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.MessageProperties;
import io.warren.perf.AmqpClientDriver;
import io.warren.perf.MessageBody;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * amqp-client ({@code com.rabbitmq:amqp-client}) with its defaults, as warren-perf's driver uses it: blocking socket
 * I/O, automatic recovery off, one {@code byte[]} re-stamped and re-sent ({@code basicPublish} has written it to
 * the socket, on the caller's thread, when it returns).
 */
final class AmqpClientRoundTripClient implements RoundTripClient {

    private static final int TIMEOUT_MILLIS = 10_000;

    private final Connection connection;
    private final Channel channel;
    private final byte[] body;

    private AmqpClientRoundTripClient(Connection connection, Channel channel, int bodySize) {
        this.connection = connection;
        this.channel = channel;
        this.body = new byte[bodySize];
    }

    static AmqpClientRoundTripClient open(String uri, int bodySize) throws Exception {
        ConnectionFactory factory = AmqpClientDriver.factory(uri); // a refused URI is named without its password
        factory.setAutomaticRecoveryEnabled(false);
        factory.setTopologyRecoveryEnabled(false);
        factory.setConnectionTimeout(TIMEOUT_MILLIS);
        Connection connection = factory.newConnection("round-trip");
        try {
            return new AmqpClientRoundTripClient(connection, connection.createChannel(), bodySize);
        } catch (IOException | RuntimeException e) {
            connection.abort(TIMEOUT_MILLIS);
            throw e;
        }
    }

    @Override
    public void publish() {
        MessageBody.stamp(body, System.nanoTime());
        try {
            channel.basicPublish("", ROUTING_KEY, false, false, MessageProperties.MINIMAL_BASIC, body);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() throws IOException {
        connection.close(TIMEOUT_MILLIS);
    }
}
