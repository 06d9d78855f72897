package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The examples of RabbitMQ's URI spec, and the query parameters Warren reads. */
class AmqpUriTest {

    @ParameterizedTest
    @ValueSource(
            strings = {
                "amqp://guest:pa%FFss@h/v",
                "amqp://guest:pa%ED%A0%80ss@h/v",
                "amqp://guest:pa%C3ss@h/v",
                "amqp://guest:pa\uD800ss@h/v",
                "amqp://guest:pa\uDC00ss%21@h/v",
                "amqp://h/v%ff"
            })
    void escapesThatAreNotUtf8AndUnpairedSurrogatesAreRefusedNotReplaced(String uri) {
        // replaced by U+FFFD or '?', two different URIs would log in as the same user or reach the same vhost
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AmqpUri.parse(uri));
        assertFalse(e.getMessage().contains("Sek"), "no piece of the password: " + e.getMessage());
    }

    @Test
    void fullUriWithPercentEncoding() {
        AmqpUri uri = AmqpUri.parse("amqp://us%40er:p%3Ass%2Fw@host.example:10000/v%2Fhost");
        assertFalse(uri.tls());
        assertEquals("us@er", uri.username());
        assertEquals("p:ss/w", uri.password());
        assertEquals("host.example", uri.host());
        assertEquals(10000, uri.port());
        assertEquals("v/host", uri.virtualHost());
    }

    @Test
    void specExamples() {
        AmqpUri a = AmqpUri.parse("amqp://user:pass@host:10000/vhost");
        assertEquals("user", a.username());
        assertEquals("pass", a.password());
        assertEquals("vhost", a.virtualHost());
        AmqpUri b = AmqpUri.parse("amqp://");
        assertEquals("localhost", b.host());
        assertEquals(5672, b.port());
        assertNull(b.username());
        assertNull(b.virtualHost());
        AmqpUri c = AmqpUri.parse("amqp://:@/");
        assertEquals("", c.username());
        assertEquals("", c.password());
        assertEquals("", c.virtualHost(), "a single / is the empty vhost, as the spec says");
        AmqpUri d = AmqpUri.parse("amqp://carl@");
        assertEquals("carl", d.username());
        assertNull(d.password());
        AmqpUri e = AmqpUri.parse("amqp://[::1]");
        assertEquals("::1", e.host());
        AmqpUri f = AmqpUri.parse("amqps://[fe80::1]:5999/%2F");
        assertTrue(f.tls());
        assertEquals("fe80::1", f.host());
        assertEquals(5999, f.port());
        assertEquals("/", f.virtualHost());
        assertEquals(5671, AmqpUri.parse("amqps://h").port());
    }

    @Test
    void queryParameters() {
        AmqpUri uri = AmqpUri.parse("amqp://h/?heartbeat=10&frame_max=8192&channel_max=100"
                + "&connection_timeout=2500&auth_mechanism=amqplain&cacertfile=/x.pem");
        assertEquals(10, uri.heartbeat());
        assertEquals(8192, uri.frameMax());
        assertEquals(100, uri.channelMax());
        assertEquals(Duration.ofMillis(2500), uri.connectionTimeout());
        assertEquals(AuthMechanism.AMQPLAIN, uri.authMechanism());
        ConnectionOptions o = uri.applyTo(new ConnectionOptions());
        assertEquals(10, o.requestedHeartbeat());
        assertEquals(8192, o.requestedFrameMax());
        assertEquals(100, o.requestedChannelMax());
        assertEquals(Duration.ofMillis(2500), o.connectionTimeout());
        assertEquals(AuthMechanism.AMQPLAIN, o.authMechanism());
        assertEquals("", o.virtualHost());
        assertEquals(
                AuthMechanism.EXTERNAL,
                AmqpUri.parse("amqps://h?auth_mechanism=external").authMechanism());
    }

    @Test
    void optionsFromUriKeepDefaultsForWhatTheUriDoesNotSay() {
        ConnectionOptions o = ConnectionOptions.fromUri("amqp://h:1234");
        assertEquals(List.of(new Address("h", 1234)), o.addresses());
        assertEquals("guest", o.username());
        assertEquals("/", o.virtualHost());
        assertEquals(60, o.requestedHeartbeat());
        assertNull(o.tls());
        ConnectionOptions tls = ConnectionOptions.fromUri("amqps://h");
        assertNotNull(tls.tls());
        assertTrue(tls.tls().hostnameVerification());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "http://h",
                "amqp://h:notaport",
                "amqp://h:70000",
                "amqp://h/a/b",
                "amqp://h/%zz",
                "amqp://h/%2",
                "amqp://h?heartbeat=x",
                "amqp://h?heartbeat=70000",
                "amqp://h?auth_mechanism=kerberos",
                "amqp://[::1"
            })
    void malformedUrisAreRejectedWithAReason(String uri) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AmqpUri.parse(uri));
        assertNotNull(e.getMessage());
    }

    @Test
    void passwordsNeverAppearInMessagesOrToString() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> AmqpUri.parse("amqp://u:topsecret@h:bad"));
        assertFalse(e.getMessage().contains("topsecret"), e.getMessage());
        assertFalse(AmqpUri.parse("amqp://u:topsecret@h").toString().contains("topsecret"));
        assertFalse(ConnectionOptions.fromUri("amqp://u:topsecret@h").toString().contains("topsecret"));
    }
}
