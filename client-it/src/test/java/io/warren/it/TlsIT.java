package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static io.warren.it.TopologyIT.failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AuthMechanism;
import io.warren.AuthenticationException;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.QueueSpec;
import io.warren.TlsOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** amqps end to end, through a TLS-terminating proxy in front of the broker's plain AMQP port. */
@ExtendWith(BrokerExtension.class)
class TlsIT {

    private static TlsMaterial material;

    @BeforeAll
    static void makeCertificates() throws Exception {
        material = new TlsMaterial();
    }

    @AfterAll
    static void deleteCertificates() throws Exception {
        material.close();
    }

    private static ConnectionOptions amqps(Broker broker, String host, int port) {
        return ConnectionOptions.fromUri(
                "amqps://" + broker.username() + ":" + broker.password() + "@" + host + ":" + port + "/%2F");
    }

    @Test
    void amqpsWithHostnameVerification(Broker broker) throws Exception {
        try (TlsProxy proxy = new TlsProxy(material.serverKey, null, broker.host(), broker.port())) {
            ConnectionOptions options = amqps(broker, "localhost", proxy.port());
            assertTrue(options.tls().hostnameVerification(), "on by default");
            options.tls().trustManagerFactory(material.trustServer);
            Connection c = await(BrokerExtension.client().connect(options));
            try {
                Channel ch = await(c.openChannel());
                assertTrue(
                        await(ch.queueDeclare(QueueSpec.serverNamed())).queue().startsWith("amq.gen-"));
            } finally {
                await(c.close());
            }
        }
    }

    @Test
    void aCertificateForAnotherHostIsRefusedUnlessVerificationIsOff(Broker broker) throws Exception {
        try (TlsProxy proxy = new TlsProxy(material.serverKey, null, broker.host(), broker.port())) {
            // the certificate names localhost, not 127.0.0.1
            ConnectionOptions options = amqps(broker, "127.0.0.1", proxy.port());
            options.tls().trustManagerFactory(material.trustServer);
            ConnectionClosedException e = assertInstanceOf(
                    ConnectionClosedException.class,
                    failure(BrokerExtension.client().connect(options)));
            assertTrue(e.getMessage().contains("TLS"), e.getMessage());
            options.tls().hostnameVerification(false);
            Connection c = await(BrokerExtension.client().connect(options));
            await(c.close());
        }
    }

    @Test
    void anUntrustedCertificateIsRefused(Broker broker) throws Exception {
        try (TlsProxy proxy = new TlsProxy(material.serverKey, null, broker.host(), broker.port())) {
            ConnectionOptions options = amqps(broker, "localhost", proxy.port()); // JDK default trust store
            ConnectionClosedException e = assertInstanceOf(
                    ConnectionClosedException.class,
                    failure(BrokerExtension.client().connect(options)));
            assertTrue(e.getMessage().contains("TLS"), e.getMessage());
        }
    }

    @Test
    void aClientCertificateIsPresentedFromTheConfiguredKeyMaterial(Broker broker) throws Exception {
        try (TlsProxy proxy = new TlsProxy(material.serverKey, material.trustClient, broker.host(), broker.port())) {
            ConnectionOptions options = amqps(broker, "localhost", proxy.port());
            options.tls(
                    new TlsOptions().trustManagerFactory(material.trustServer).keyManagerFactory(material.clientKey));
            Connection c = await(BrokerExtension.client().connect(options));
            await(c.close());
            assertEquals("CN=warren-it-client", proxy.clientSubjects.get(0));
            // EXTERNAL over the same mutual TLS: this broker has no rabbitmq_auth_mechanism_ssl, so it does
            // not offer EXTERNAL; the refusal comes from the AMQP handshake, after TLS succeeded.
            // (EXTERNAL's start-ok is covered at the handshake level in client-core's HandshakeTest.)
            options.authMechanism(AuthMechanism.EXTERNAL);
            AuthenticationException e = assertInstanceOf(
                    AuthenticationException.class,
                    failure(BrokerExtension.client().connect(options)));
            assertTrue(e.getMessage().contains("EXTERNAL"), e.getMessage());
            assertEquals(2, proxy.clientSubjects.size());
        }
    }
}
