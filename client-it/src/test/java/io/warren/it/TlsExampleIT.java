package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.QueueSpec;
import io.warren.it.examples.TlsExample;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The README's TLS example through the in-test TLS-terminating proxy, trusting a CA read from a PEM file. */
@ExtendWith(BrokerExtension.class)
class TlsExampleIT {

    @Test
    void theTlsExampleConnectsWithACaFromPem(Broker broker) throws Exception {
        try (TlsMaterial material = new TlsMaterial();
                TlsProxy proxy = new TlsProxy(material.serverKey, null, broker.host(), broker.port())) {
            Path pem = Files.createTempFile("warren-ca", ".pem");
            try {
                Files.writeString(pem, pem(material.trustServer), StandardCharsets.US_ASCII);
                TrustManagerFactory trust = TlsExample.trustedCa(pem);
                String uri = "amqps://" + broker.username() + ":" + broker.password() + "@localhost:" + proxy.port()
                        + "/%2F";
                Connection c = TlsExample.connect(BrokerExtension.client(), uri, trust, null)
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                try {
                    Channel ch = c.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
                    assertTrue(ch.queueDeclare(QueueSpec.serverNamed())
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS)
                            .queue()
                            .startsWith("amq.gen-"));
                } finally {
                    c.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
            } finally {
                Files.deleteIfExists(pem);
            }
        }
    }

    /** The self-signed server certificate the test trusts, as PEM (what a CA file looks like). */
    private static String pem(TrustManagerFactory trust) throws Exception {
        X509Certificate cert = ((X509TrustManager) trust.getTrustManagers()[0]).getAcceptedIssuers()[0];
        return "-----BEGIN CERTIFICATE-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                        .encodeToString(cert.getEncoded())
                + "\n-----END CERTIFICATE-----\n";
    }
}
