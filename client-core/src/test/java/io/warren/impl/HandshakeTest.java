package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.AuthMechanism;
import io.warren.AuthenticationException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.ConnectionTimeoutException;
import io.warren.codec.Frame;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.method.ConnectionClose;
import io.warren.codec.method.ConnectionCloseEncoder;
import io.warren.codec.method.ConnectionOpen;
import io.warren.codec.method.ConnectionSecureEncoder;
import io.warren.codec.method.ConnectionSecureOk;
import io.warren.codec.method.ConnectionStartOk;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.ConnectionTuneOk;
import io.warren.codec.method.MethodIds;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The handshake driven through a real FrameDecoder with frames made by the codec's encoders. */
class HandshakeTest {

    private static Throwable failure(java.util.concurrent.CompletableFuture<?> f) {
        assertTrue(f.isCompletedExceptionally(), "expected a failure");
        try {
            f.join();
            throw new AssertionError("unreachable");
        } catch (CompletionException e) {
            return e.getCause();
        }
    }

    @Test
    void garbageInsteadOfConnectionStartFailsTheConnectWithThe501AtOnce() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(10)))) {
            broker.client.freezeTime(); // no timer fires: the failure may not wait for the close timeout
            // what an HTTP server answers to the protocol header
            broker.sendRaw(Unpooled.copiedBuffer("HTTP/1.1 400 Bad Request\r\n\r\n", StandardCharsets.US_ASCII));
            Frame close = broker.expect(0, MethodIds.CONNECTION_CLOSE);
            assertEquals(
                    501,
                    new ConnectionClose()
                            .wrap(close.payload(), close.payload().readerIndex())
                            .replyCode());
            close.release();
            assertFalse(broker.client.isOpen(), "closed once connection.close was written");
            ConnectionClosedException e = assertInstanceOf(ConnectionClosedException.class, failure(broker.connected));
            assertEquals(501, e.replyCode());
            AmqpProtocolException cause = assertInstanceOf(AmqpProtocolException.class, e.getCause());
            assertEquals(501, cause.replyCode());
            assertTrue(
                    e.getMessage().contains("501 FRAME_ERROR") && e.getMessage().contains("connection.start"),
                    e.getMessage());
        }
    }

    @Test
    void aConnectTimeoutWhileClosingAfterAProtocolErrorFailsWithTheProtocolError() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().closeTimeout(Duration.ofSeconds(10)))) {
            broker.client.freezeTime();
            // a well-formed but unexpected method: the decoder still reads, so close-ok is waited for
            broker.send(
                    0, new ConnectionTuneEncoder().channelMax(1).frameMax(4096).heartbeat(0));
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE);
            assertTrue(broker.client.isOpen());
            assertFalse(broker.connected.isDone());
            // the connector's timer fires before close-ok or the close timeout
            broker.handler.connectTimedOut(new ConnectionTimeoutException("could not connect within 1000 ms"));
            ConnectionClosedException e = assertInstanceOf(ConnectionClosedException.class, failure(broker.connected));
            assertEquals(505, e.replyCode());
            assertInstanceOf(AmqpProtocolException.class, e.getCause());
            assertFalse(broker.client.isOpen());
        }
    }

    @Test
    void startOkCarriesClientPropertiesCapabilitiesAndPlainResponse() {
        try (FakeBroker broker = new FakeBroker(
                new ConnectionOptions().username("alice").password("s3cret").connectionName("orders-service"))) {
            broker.sendStart("AMQPLAIN PLAIN");
            Frame f = broker.expect(0, MethodIds.CONNECTION_START_OK);
            try {
                ByteBuf p = f.payload();
                ConnectionStartOk ok = new ConnectionStartOk().wrap(p, p.readerIndex());
                assertEquals("PLAIN", ok.mechanismAsString());
                assertEquals("en_US", ok.localeAsString());
                assertEquals("\0alice\0s3cret", ok.response().toString(StandardCharsets.UTF_8));
                Map<String, Object> props = ok.clientProperties().toMap();
                assertEquals("Warren", String.valueOf(props.get("product")));
                assertTrue(props.containsKey("version"));
                assertTrue(String.valueOf(props.get("platform")).startsWith("Java"));
                assertEquals("orders-service", String.valueOf(props.get("connection_name")));
                @SuppressWarnings("unchecked")
                Map<String, Object> caps = (Map<String, Object>) props.get("capabilities");
                for (String cap : new String[] {
                    "publisher_confirms",
                    "exchange_exchange_bindings",
                    "basic.nack",
                    "consumer_cancel_notify",
                    "connection.blocked",
                    "authentication_failure_close",
                    "per_consumer_qos",
                    "direct_reply_to"
                }) {
                    assertEquals(Boolean.TRUE, caps.get(cap), cap);
                }
            } finally {
                f.release();
            }
        }
    }

    @ParameterizedTest(name = "client {0}/{1}/{2}, broker {3}/{4}/{5} -> {6}/{7}/{8}")
    @CsvSource({
        // client channelMax, frameMax, heartbeat | broker's | negotiated
        "2047, 131072, 60,   2047, 131072, 60,   2047, 131072, 60",
        "2047, 131072, 60,   0, 0, 0,            2047, 131072, 60",
        "0, 0, 0,            100, 65536, 30,     100, 65536, 30",
        "2047, 131072, 60,   100, 65536, 30,     100, 65536, 30",
        "10, 8192, 5,        2047, 131072, 60,   10, 8192, 5",
        "0, 0, 0,            0, 0, 0,            0, 0, 0",
    })
    void tuneTakesTheLowerNonZeroOfEachSide(
            int cChannel,
            int cFrame,
            int cHeartbeat,
            int bChannel,
            long bFrame,
            int bHeartbeat,
            int channel,
            int frame,
            int heartbeat) {
        ConnectionOptions options = new ConnectionOptions()
                .requestedChannelMax(cChannel)
                .requestedFrameMax(cFrame)
                .requestedHeartbeat(cHeartbeat)
                .virtualHost("prod");
        try (FakeBroker broker = new FakeBroker(options)) {
            broker.sendStart("PLAIN");
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.send(
                    0,
                    new ConnectionTuneEncoder()
                            .channelMax(bChannel)
                            .frameMax(bFrame)
                            .heartbeat(bHeartbeat));
            Frame tuneOk = broker.expect(0, MethodIds.CONNECTION_TUNE_OK);
            ConnectionTuneOk ok = new ConnectionTuneOk()
                    .wrap(tuneOk.payload(), tuneOk.payload().readerIndex());
            assertEquals(channel, ok.channelMax());
            assertEquals(frame, ok.frameMax());
            assertEquals(heartbeat, ok.heartbeat());
            tuneOk.release();
            Frame open = broker.expect(0, MethodIds.CONNECTION_OPEN);
            assertEquals(
                    "prod",
                    new ConnectionOpen()
                            .wrap(open.payload(), open.payload().readerIndex())
                            .virtualHostAsString());
            open.release();
            broker.send(0, new io.warren.codec.method.ConnectionOpenOkEncoder());
            ConnectionImpl c = broker.connected.join();
            assertEquals(channel == 0 ? 65535 : channel, c.channelMax());
            assertEquals(frame, c.frameMax());
            assertEquals(heartbeat, c.heartbeat());
            assertTrue(c.isOpen());
            assertEquals("FakeBroker", String.valueOf(c.serverProperties().get("product")));
        }
    }

    /**
     * Connections sent equal server properties share one decoded table (a few KiB an idle connection no longer holds
     * on its own), immutable throughout, since others read it too; a different table is not mixed up with it.
     */
    @Test
    @SuppressWarnings("unchecked")
    void connectionsSentTheSameServerPropertiesShareOneImmutableTable() {
        Map<String, Object>[] seen = new Map[3];
        for (int i = 0; i < 3; i++) {
            try (FakeBroker broker = new FakeBroker()) {
                // the third broker differs in one capability
                broker.sendStart("PLAIN", Map.of("publisher_confirms", true, "per_consumer_qos", i < 2));
                broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
                seen[i] = broker.handshakeAfterStartOk().serverProperties();
            }
        }
        assertSame(seen[0], seen[1]);
        assertEquals(Boolean.FALSE, ((Map<?, ?>) seen[2].get("capabilities")).get("per_consumer_qos"));
        assertEquals(Boolean.TRUE, ((Map<?, ?>) seen[1].get("capabilities")).get("per_consumer_qos"));
        // a table holding a byte array (field type 'x') is never kept: the array equals only itself, and is mutable;
        // before, each such connection took a place among the kept tables, and ten of them pushed the others out
        Map<String, Object>[] withArray = new Map[10];
        for (int i = 0; i < withArray.length; i++) {
            try (FakeBroker broker = new FakeBroker()) {
                broker.sendStart("PLAIN", Map.of("publisher_confirms", true, "blob", new byte[] {1, 2, 3}));
                broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
                withArray[i] = broker.handshakeAfterStartOk().serverProperties();
            }
        }
        assertNotSame(withArray[0], withArray[1]);
        try (FakeBroker broker = new FakeBroker()) {
            broker.sendStart("PLAIN", Map.of("publisher_confirms", true, "per_consumer_qos", true));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            assertSame(seen[0], broker.handshakeAfterStartOk().serverProperties(), "still kept");
        }
        assertThrows(UnsupportedOperationException.class, () -> seen[0].put("product", "mine"));
        assertThrows(
                UnsupportedOperationException.class,
                () -> ((Map<String, Object>) seen[0].get("capabilities")).put("basic.nack", true));
    }

    @Test
    void amqplainResponseIsATableBodyWithLoginAndPassword() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions()
                .authMechanism(AuthMechanism.AMQPLAIN)
                .username("bob")
                .password("pw"))) {
            broker.sendStart("PLAIN AMQPLAIN");
            Frame f = broker.expect(0, MethodIds.CONNECTION_START_OK);
            ConnectionStartOk ok =
                    new ConnectionStartOk().wrap(f.payload(), f.payload().readerIndex());
            assertEquals("AMQPLAIN", ok.mechanismAsString());
            byte[] expected = {
                5, 'L', 'O', 'G', 'I', 'N', 'S', 0, 0, 0, 3, 'b', 'o', 'b', 8, 'P', 'A', 'S', 'S', 'W', 'O', 'R', 'D',
                'S', 0, 0, 0, 2, 'p', 'w'
            };
            assertEquals(ByteBufUtil.hexDump(expected), ByteBufUtil.hexDump(ok.response()));
            f.release();
        }
    }

    @Test
    void externalSendsAnEmptyResponse() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().authMechanism(AuthMechanism.EXTERNAL))) {
            broker.sendStart("EXTERNAL PLAIN");
            Frame f = broker.expect(0, MethodIds.CONNECTION_START_OK);
            ConnectionStartOk ok =
                    new ConnectionStartOk().wrap(f.payload(), f.payload().readerIndex());
            assertEquals("EXTERNAL", ok.mechanismAsString());
            assertEquals(0, ok.response().readableBytes());
            f.release();
            broker.handshakeAfterStartOk();
        }
    }

    @Test
    void aMechanismTheBrokerDoesNotOfferFailsWithAuthenticationException() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().authMechanism(AuthMechanism.EXTERNAL))) {
            broker.sendStart("PLAIN AMQPLAIN");
            AuthenticationException e = assertInstanceOf(AuthenticationException.class, failure(broker.connected));
            assertTrue(e.getMessage().contains("EXTERNAL"), e.getMessage());
            assertFalse(broker.client.isActive());
        }
    }

    @Test
    void secureChallengesAreAnsweredWithSecureOk() {
        try (FakeBroker broker = new FakeBroker()) {
            broker.sendStart("PLAIN");
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.send(0, new ConnectionSecureEncoder().challenge("more please"));
            Frame f = broker.expect(0, MethodIds.CONNECTION_SECURE_OK);
            assertEquals(
                    "\0guest\0guest",
                    new ConnectionSecureOk()
                            .wrap(f.payload(), f.payload().readerIndex())
                            .response()
                            .toString(StandardCharsets.UTF_8));
            f.release();
            broker.handshakeAfterStartOk();
        }
    }

    @Test
    void badCredentialsFailWithAuthenticationExceptionCarrying403() {
        try (FakeBroker broker = new FakeBroker()) {
            broker.sendStart("PLAIN");
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.send(
                    0,
                    new ConnectionCloseEncoder()
                            .replyCode(403)
                            .replyText("ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN"));
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE_OK);
            AuthenticationException e = assertInstanceOf(AuthenticationException.class, failure(broker.connected));
            assertEquals(403, e.replyCode());
            assertTrue(e.replyText().startsWith("ACCESS_REFUSED"), e.replyText());
            assertFalse(e.getMessage().contains("guest\0"), "no password in messages");
            assertFalse(broker.client.isActive());
        }
    }

    /**
     * A broker that says it closes with 403 on refused credentials (RabbitMQ, which advertises
     * authentication_failure_close) and drops the socket instead did not refuse them: its handshake timeout, a node
     * going down, a balancer. A loss, which the next address and recovery retry, not a wrong password.
     */
    @Test
    void aSocketDroppedDuringAuthenticationByABrokerThatClosesOnRefusalIsALoss() {
        try (FakeBroker broker = new FakeBroker()) {
            broker.sendStart("PLAIN", Map.of("authentication_failure_close", true));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.client.close();
            Throwable e = failure(broker.connected);
            assertFalse(e instanceof AuthenticationException, e.toString());
            ConnectionClosedException c = assertInstanceOf(ConnectionClosedException.class, e);
            assertFalse(c.initiatedByBroker());
            assertTrue(e.getMessage().contains("lost during the handshake"), e.getMessage());
        }
    }

    /**
     * A broker that resets the socket after a start-ok larger than the 4,096 bytes it takes before tune (RabbitMQ
     * before 4.1) leaves a bare "connection reset": the failure says how large the start-ok was and what limits it,
     * without the secret. A small start-ok's failure says nothing of it.
     */
    @Test
    void aConnectionDroppedAfterAnOversizedStartOkSaysHowLargeItWas() {
        String token = "t".repeat(5000);
        try (FakeBroker broker =
                new FakeBroker(new ConnectionOptions().username("svc").password(token))) {
            broker.sendStart("PLAIN", Map.of("authentication_failure_close", true));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.client.pipeline().fireExceptionCaught(new java.io.IOException("Connection reset by peer (test)"));
            broker.client.runPendingTasks();
            Throwable e = failure(broker.connected);
            assertTrue(e.getMessage().contains("Connection reset by peer"), e.getMessage());
            assertTrue(e.getMessage().contains("start-ok was 5"), e.getMessage());
            assertTrue(e.getMessage().contains("initial_frame_max"), e.getMessage());
            assertFalse(e.getMessage().contains("tttt"), e.getMessage());
        }
        try (FakeBroker broker = new FakeBroker()) {
            broker.sendStart("PLAIN", Map.of("authentication_failure_close", true));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.client.close();
            Throwable e = failure(broker.connected);
            assertFalse(e.getMessage().contains("start-ok was"), e.getMessage());
        }
    }

    /** A connection name with no UTF-8 form is refused when it is set, not at every connect as an I/O failure. */
    @Test
    void aConnectionNameWithoutAUtf8FormIsRefusedWhenSet() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> new ConnectionOptions().connectionName("orders\uD800"));
        assertTrue(e.getMessage().contains("connectionName"), e.getMessage());
    }

    /** RabbitMQ closes with 403 only for a client that advertised it: one whose own capabilities replaced ours did not. */
    @Test
    void aDropWhileAuthenticatingIsStillARefusalWhenTheClientDidNotAdvertiseTheClose() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().clientProperty("capabilities", Map.of()))) {
            broker.sendStart("PLAIN", Map.of("authentication_failure_close", true));
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.client.close();
            assertInstanceOf(AuthenticationException.class, failure(broker.connected));
        }
    }

    @Test
    void aSocketDroppedDuringAuthenticationIsAnAuthenticationFailure() {
        try (FakeBroker broker = new FakeBroker()) {
            broker.sendStart("PLAIN");
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.client.close();
            AuthenticationException e = assertInstanceOf(AuthenticationException.class, failure(broker.connected));
            assertTrue(e.getMessage().contains("during authentication"), e.getMessage());
        }
    }

    @Test
    void anUnknownVirtualHostFailsWithTheBrokersReplyCodeAndText() {
        try (FakeBroker broker = new FakeBroker(new ConnectionOptions().virtualHost("nope"))) {
            broker.sendStart("PLAIN");
            broker.expectAndRelease(0, MethodIds.CONNECTION_START_OK);
            broker.send(
                    0,
                    new ConnectionTuneEncoder()
                            .channelMax(2047)
                            .frameMax(131072)
                            .heartbeat(60));
            broker.expectAndRelease(0, MethodIds.CONNECTION_TUNE_OK);
            broker.expectAndRelease(0, MethodIds.CONNECTION_OPEN);
            broker.send(
                    0,
                    new ConnectionCloseEncoder()
                            .replyCode(530)
                            .replyText("NOT_ALLOWED - vhost nope not found")
                            .classId(10)
                            .methodId(40));
            broker.expectAndRelease(0, MethodIds.CONNECTION_CLOSE_OK);
            ConnectionClosedException e = assertInstanceOf(ConnectionClosedException.class, failure(broker.connected));
            assertFalse(e instanceof AuthenticationException);
            assertEquals(530, e.replyCode());
            assertEquals("NOT_ALLOWED - vhost nope not found", e.replyText());
            assertEquals(10, e.classId());
            assertEquals(40, e.methodId());
        }
    }
}
