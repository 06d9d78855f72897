package io.warren.it;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * Self-signed key pairs for the TLS tests, made with the JDK's keytool in a temporary folder (no
 * BouncyCastle needed): a server certificate for {@code localhost} and a client certificate.
 */
final class TlsMaterial implements AutoCloseable {

    private static final String PASSWORD = "changeit";

    private final Path dir;
    final KeyManagerFactory serverKey;
    final TrustManagerFactory trustServer;
    final KeyManagerFactory clientKey;
    final TrustManagerFactory trustClient;

    TlsMaterial() throws Exception {
        dir = Files.createTempDirectory("warren-tls");
        Path server = keyPair("server", "CN=localhost", "SAN=dns:localhost");
        Path client = keyPair("client", "CN=warren-it-client", null);
        serverKey = keyManagers(server);
        clientKey = keyManagers(client);
        trustServer = trust(exportCert("server", server));
        trustClient = trust(exportCert("client", client));
    }

    /** The client's key pair needs no subject alternative name, the server's names {@code localhost}. */
    private Path keyPair(String alias, String dname, String san) throws Exception {
        Path store = dir.resolve(alias + ".p12");
        List<String> args = new ArrayList<>(
                List.of("-genkeypair", "-alias", alias, "-keyalg", "RSA", "-keysize", "2048", "-dname", dname));
        if (san != null) {
            args.addAll(List.of("-ext", san));
        }
        args.addAll(List.of(
                "-validity",
                "2",
                "-storetype",
                "PKCS12",
                "-keystore",
                store.toString(),
                "-storepass",
                PASSWORD,
                "-keypass",
                PASSWORD));
        keytool(args.toArray(String[]::new));
        return store;
    }

    private Path exportCert(String alias, Path store) throws Exception {
        Path pem = dir.resolve(alias + ".pem");
        keytool(
                "-exportcert",
                "-rfc",
                "-alias",
                alias,
                "-keystore",
                store.toString(),
                "-storepass",
                PASSWORD,
                "-file",
                pem.toString());
        return pem;
    }

    private static KeyManagerFactory keyManagers(Path store) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            ks.load(in, PASSWORD.toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, PASSWORD.toCharArray());
        return kmf;
    }

    private static TrustManagerFactory trust(Path pem) throws Exception {
        KeyStore ts = KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        try (InputStream in = Files.newInputStream(pem)) {
            ts.setCertificateEntry(
                    "trusted", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ts);
        return tmf;
    }

    private static void keytool(String... args) throws IOException, InterruptedException {
        String[] command = new String[args.length + 1];
        command[0] = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        System.arraycopy(args, 0, command, 1, args.length);
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("keytool failed: " + out);
        }
    }

    @Override
    public void close() throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }
}
