package io.warren;

import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS for {@code amqps}. Hostname verification is on by default: the broker's certificate must name the
 * host the client connects to. With no trust material the JDK's default trust store is used.
 * Key material (a client certificate) is needed for {@link AuthMechanism#EXTERNAL}.
 */
public final class TlsOptions {

    private TrustManagerFactory trustManagerFactory;
    private KeyManagerFactory keyManagerFactory;
    private boolean hostnameVerification = true;
    private List<String> protocols;
    private String serverName;

    public TlsOptions() {}

    public TlsOptions(TlsOptions other) {
        this.trustManagerFactory = other.trustManagerFactory;
        this.keyManagerFactory = other.keyManagerFactory;
        this.hostnameVerification = other.hostnameVerification;
        this.protocols = other.protocols;
        this.serverName = other.serverName;
    }

    /** Trust material for the broker's certificate; {@code null} for the JDK's default trust store. */
    public TlsOptions trustManagerFactory(TrustManagerFactory trustManagerFactory) {
        this.trustManagerFactory = trustManagerFactory;
        return this;
    }

    public TrustManagerFactory trustManagerFactory() {
        return trustManagerFactory;
    }

    /** Key material: the client certificate and its private key, for mutual TLS and EXTERNAL auth. */
    public TlsOptions keyManagerFactory(KeyManagerFactory keyManagerFactory) {
        this.keyManagerFactory = keyManagerFactory;
        return this;
    }

    public KeyManagerFactory keyManagerFactory() {
        return keyManagerFactory;
    }

    /** Whether the broker certificate must match the host name (HTTPS rules). On by default. */
    public TlsOptions hostnameVerification(boolean hostnameVerification) {
        this.hostnameVerification = hostnameVerification;
        return this;
    }

    public boolean hostnameVerification() {
        return hostnameVerification;
    }

    /** TLS protocol versions to enable (e.g. {@code TLSv1.3}); {@code null} for the JDK's defaults. */
    public TlsOptions protocols(List<String> protocols) {
        this.protocols = protocols == null ? null : List.copyOf(protocols);
        return this;
    }

    public List<String> protocols() {
        return protocols;
    }

    /** The name sent in SNI and verified against the certificate; {@code null} for the address's host. */
    public TlsOptions serverName(String serverName) {
        this.serverName = serverName;
        return this;
    }

    public String serverName() {
        return serverName;
    }
}
