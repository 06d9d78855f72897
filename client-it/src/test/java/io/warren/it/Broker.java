package io.warren.it;

import java.net.URI;

/**
 * Where the broker under test is: host, port, credentials and virtual host, plus the AMQP URI they
 * came from. Found once per test JVM by {@link BrokerExtension}.
 */
public record Broker(String host, int port, String username, String password, String virtualHost, String source) {

    /** The broker as an {@code amqp://} URI (credentials included: test brokers only). */
    public String uri() {
        String vhost = "/".equals(virtualHost) ? "%2F" : virtualHost;
        return "amqp://" + username + ":" + password + "@" + host + ":" + port + "/" + vhost;
    }

    static Broker fromUri(String uri, String source) {
        URI parsed = URI.create(uri);
        String user = "guest";
        String pass = "guest";
        if (parsed.getUserInfo() != null) {
            String[] parts = parsed.getUserInfo().split(":", 2);
            user = parts[0];
            pass = parts.length > 1 ? parts[1] : "";
        }
        String path = parsed.getPath();
        String vhost = path == null || path.isEmpty() || "/".equals(path) ? "/" : path.substring(1);
        int port = parsed.getPort() > 0 ? parsed.getPort() : ("amqps".equals(parsed.getScheme()) ? 5671 : 5672);
        return new Broker(parsed.getHost(), port, user, pass, vhost, source);
    }
}
