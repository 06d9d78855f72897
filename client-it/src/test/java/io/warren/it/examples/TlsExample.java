package io.warren.it.examples;

import io.warren.AmqpClient;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.TlsOptions;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.util.concurrent.CompletionStage;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS: the README's example. An {@code amqps} URI with the CA that signed RabbitMQ's certificate; the
 * certificate must name the host connected to (hostname verification is on), and a client certificate can be
 * given for mutual TLS (and for SASL EXTERNAL).
 */
public final class TlsExample {

    public static void main(String[] args) throws Exception {
        String uri = args.length > 0 ? args[0] : "amqps://guest:guest@localhost:5671/%2F";
        Path ca = Path.of(args.length > 1 ? args[1] : "ca_certificate.pem");
        AmqpClient client = AmqpClient.create();
        connect(client, uri, trustedCa(ca), null)
                .thenCompose(Connection::close)
                .whenComplete((v, e) -> client.close())
                .toCompletableFuture()
                .join();
    }

    /** Trust for the certificates signed by the CA in {@code pem}. */
    public static TrustManagerFactory trustedCa(Path pem) throws Exception {
        // [tls-trust]
        KeyStore trusted = KeyStore.getInstance(KeyStore.getDefaultType());
        trusted.load(null, null);
        try (InputStream in = Files.newInputStream(pem)) {
            trusted.setCertificateEntry(
                    "rabbitmq-ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        // [/tls-trust]
        return trust;
    }

    /** Connects over TLS; {@code clientKey} (null for none) is the client certificate for mutual TLS. */
    public static CompletionStage<Connection> connect(
            AmqpClient client, String uri, TrustManagerFactory trust, KeyManagerFactory clientKey) {
        // [tls-connect]
        ConnectionOptions options = ConnectionOptions.fromUri(uri) // amqps://user:pass@host:5671/vhost
                .tls(new TlsOptions()
                        .trustManagerFactory(trust) // null: the JDK's default trust store
                        .keyManagerFactory(clientKey)); // a client certificate, if any
        return client.connect(options);
        // [/tls-connect]
    }

    private TlsExample() {}
}
