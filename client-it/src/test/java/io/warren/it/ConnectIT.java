package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static io.warren.it.TopologyIT.failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Address;
import io.warren.AmqpClient;
import io.warren.AuthenticationException;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.ConnectionTimeoutException;
import io.warren.QueueSpec;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Connecting, refusals, many channels, and a connection closed from the broker's side. */
@ExtendWith(BrokerExtension.class)
class ConnectIT {

    private static AmqpClient client() {
        return BrokerExtension.client();
    }

    @Test
    void connectByUriWithQueryParameters(Broker broker) throws Exception {
        Connection c = await(client().connect(broker.uri() + "?heartbeat=30&channel_max=500&frame_max=65536"));
        try {
            assertTrue(c.isOpen());
            assertEquals(30, c.heartbeat());
            assertEquals(500, c.channelMax());
            assertEquals(65536, c.frameMax());
            assertEquals("RabbitMQ", String.valueOf(c.serverProperties().get("product")));
            Channel ch = await(c.openChannel());
            assertEquals(0, await(ch.queueDeclare(QueueSpec.serverNamed())).messageCount());
        } finally {
            await(c.close());
        }
        assertFalse(c.isOpen());
        assertEquals(200, await(c.closeFuture()).replyCode());
    }

    @Test
    void addressesAreTriedInOrder(Broker broker) throws Exception {
        int dead;
        try (ServerSocket s = new ServerSocket(0)) {
            dead = s.getLocalPort(); // closed again: nothing listens here
        }
        ConnectionOptions options = ConnectionOptions.fromUri(broker.uri())
                .addresses(List.of(new Address("127.0.0.1", dead), new Address(broker.host(), broker.port())));
        Connection c = await(client().connect(options));
        assertEquals(broker.port(), c.address().port());
        await(c.close());
    }

    @Test
    void aBadPasswordFailsWithAnAuthenticationException(Broker broker) throws Exception {
        ConnectionOptions options = ConnectionOptions.fromUri(broker.uri()).password("definitely-wrong");
        AuthenticationException e = assertInstanceOf(AuthenticationException.class, failure(client().connect(options)));
        assertEquals(403, e.replyCode());
        assertTrue(e.replyText().contains("ACCESS_REFUSED"), e.replyText());
        assertFalse(e.getMessage().contains("definitely-wrong"), "the password is never in a message");
    }

    @Test
    void anUnknownVirtualHostFailsWithTheBrokersReplyCodeAndText(Broker broker) throws Exception {
        ConnectionOptions options =
                ConnectionOptions.fromUri(broker.uri()).virtualHost("no-such-vhost-" + UUID.randomUUID());
        ConnectionClosedException e =
                assertInstanceOf(ConnectionClosedException.class, failure(client().connect(options)));
        assertFalse(e instanceof AuthenticationException);
        assertEquals(530, e.replyCode());
        assertTrue(e.replyText().contains("no-such-vhost"), e.replyText());
        assertEquals(10, e.classId());
        assertEquals(40, e.methodId());
    }

    @Test
    void aConnectThatCannotFinishInTheTimeoutFailsClearly() throws Exception {
        try (ServerSocket silent = new ServerSocket(0)) {
            // accepts TCP (the backlog does) but never speaks AMQP
            ConnectionOptions options = new ConnectionOptions()
                    .address("127.0.0.1", silent.getLocalPort())
                    .connectionTimeout(Duration.ofMillis(500));
            long start = System.nanoTime();
            ConnectionTimeoutException e =
                    assertInstanceOf(ConnectionTimeoutException.class, failure(client().connect(options)));
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            // a lower bound only (a 500 ms timeout cannot fire sooner); failure() bounds the wait at 30 s
            assertTrue(tookMs >= 450, "took " + tookMs + " ms");
            assertTrue(e.getMessage().contains("500 ms"), e.getMessage());
            assertTrue(e.getMessage().contains("connection.start"), e.getMessage());
        }
    }

    @Test
    void aThousandChannelsOpenedAndClosedOnOneConnection(Connection connection) throws Exception {
        List<CompletableFuture<Channel>> opening = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            opening.add(connection.openChannel().toCompletableFuture());
        }
        CompletableFuture.allOf(opening.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        List<Integer> numbers = new ArrayList<>();
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (CompletableFuture<Channel> f : opening) {
            Channel ch = f.join();
            numbers.add(ch.channelNumber());
            closing.add(ch.close().toCompletableFuture());
        }
        assertEquals(1000, numbers.stream().distinct().count());
        CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        // and again: numbers are reused after close-ok without the broker seeing a second channel.open
        for (int round = 0; round < 3; round++) {
            List<CompletableFuture<Void>> cycle = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                cycle.add(connection.openChannel().thenCompose(Channel::close).toCompletableFuture());
            }
            CompletableFuture.allOf(cycle.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        }
        assertTrue(connection.isOpen());
        Channel last = await(connection.openChannel());
        assertNotNull(await(last.queueDeclare(QueueSpec.serverNamed())));
    }

    @Test
    void aConnectionClosedFromTheBrokerSideSurfacesTheBrokersReason(Broker broker) throws Exception {
        String name = "warren-it-close-" + UUID.randomUUID();
        // without automatic recovery (on by default; RecoveryIT covers it): the close is final
        Connection c = await(client().connect(ConnectionOptions.fromUri(broker.uri())
                .connectionName(name)
                .automaticRecovery(false)));
        Channel ch = await(c.openChannel());
        Rabbitmqctl.closeConnection(name, "closed by ConnectIT");
        ConnectionClosedException reason = c.closeFuture().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(320, reason.replyCode());
        assertTrue(reason.initiatedByBroker());
        assertTrue(reason.replyText().contains("closed by ConnectIT"), reason.replyText());
        assertFalse(c.isOpen());
        assertFalse(ch.isOpen());
        CompletionStage<?> after = ch.queueDeclare("x");
        assertInstanceOf(io.warren.ChannelClosedException.class, failure(after));
    }
}
