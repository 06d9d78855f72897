package io.warren;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;

/**
 * An AMQP URI as RabbitMQ specifies it (https://www.rabbitmq.com/docs/uri-spec):
 *
 * <pre>
 * amqp[s]://[user[:password]@]host[:port][/vhost][?key=value&amp;...]
 * </pre>
 *
 * <ul>
 *   <li>user, password and vhost are percent-decoded, so {@code %2F} is {@code /}.</li>
 *   <li>No path at all means the default virtual host {@code /}; a path of a single {@code /} means the
 *       empty virtual host name, as the URI spec says (write {@code %2F} for {@code /}).</li>
 *   <li>The port defaults to 5672 for {@code amqp} and 5671 for {@code amqps}; an IPv6 host is bracketed.</li>
 *   <li>Query parameters: {@code heartbeat} (seconds), {@code frame_max} (bytes), {@code channel_max},
 *       {@code connection_timeout} (milliseconds), {@code auth_mechanism} ({@code plain}, {@code amqplain},
 *       {@code external}). Other parameters are ignored, as RabbitMQ's clients do.</li>
 * </ul>
 *
 * A value that can be absent is {@code null} (or -1 for numbers) when the URI does not give it.
 */
public record AmqpUri(boolean tls, String username, String password, String host, int port, String virtualHost,
                      int heartbeat, int frameMax, int channelMax, Duration connectionTimeout,
                      AuthMechanism authMechanism) {

    /** Parses {@code uri}; throws {@link IllegalArgumentException} naming what is wrong. */
    public static AmqpUri parse(String uri) {
        if (uri == null) {
            throw new IllegalArgumentException("AMQP URI must not be null");
        }
        String rest;
        boolean tls;
        String lower = uri.toLowerCase(Locale.ROOT);
        if (lower.startsWith("amqp://")) {
            tls = false;
            rest = uri.substring("amqp://".length());
        } else if (lower.startsWith("amqps://")) {
            tls = true;
            rest = uri.substring("amqps://".length());
        } else {
            throw new IllegalArgumentException("AMQP URI must start with amqp:// or amqps://: " + redact(uri));
        }
        String query = null;
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        int fragment = rest.indexOf('#');
        if (fragment >= 0) {
            rest = rest.substring(0, fragment);
        }
        String path = null;
        int slash = rest.indexOf('/');
        String authority = rest;
        if (slash >= 0) {
            authority = rest.substring(0, slash);
            path = rest.substring(slash + 1);
        }
        String username = null;
        String password = null;
        int at = authority.lastIndexOf('@');
        if (at >= 0) {
            String userInfo = authority.substring(0, at);
            authority = authority.substring(at + 1);
            int colon = userInfo.indexOf(':');
            if (colon >= 0) {
                username = decode(userInfo.substring(0, colon), uri);
                password = decode(userInfo.substring(colon + 1), uri);
            } else {
                username = decode(userInfo, uri);
            }
        }
        String host;
        String portText = null;
        if (authority.startsWith("[")) {
            int close = authority.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("unclosed IPv6 host in AMQP URI: " + redact(uri));
            }
            host = authority.substring(1, close);
            String after = authority.substring(close + 1);
            if (after.startsWith(":")) {
                portText = after.substring(1);
            } else if (!after.isEmpty()) {
                throw new IllegalArgumentException("unexpected text after IPv6 host in AMQP URI: " + redact(uri));
            }
        } else {
            int colon = authority.lastIndexOf(':');
            if (colon >= 0) {
                host = decode(authority.substring(0, colon), uri);
                portText = authority.substring(colon + 1);
            } else {
                host = decode(authority, uri);
            }
        }
        if (host.isEmpty()) {
            host = "localhost";
        }
        int port = tls ? 5671 : 5672;
        if (portText != null && !portText.isEmpty()) {
            port = parseInt(portText, "port", uri);
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("port out of range 1..65535 in AMQP URI: " + redact(uri));
            }
        }
        String vhost = null;
        if (path != null) {
            if (path.indexOf('/') >= 0) {
                throw new IllegalArgumentException(
                        "AMQP URI path must be one segment (write / in a vhost as %2F): " + redact(uri));
            }
            vhost = decode(path, uri);
        }
        int heartbeat = -1;
        int frameMax = -1;
        int channelMax = -1;
        Duration connectionTimeout = null;
        AuthMechanism mechanism = null;
        if (query != null && !query.isEmpty()) {
            for (String pair : query.split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String key = decode(eq < 0 ? pair : pair.substring(0, eq), uri);
                String value = eq < 0 ? "" : decode(pair.substring(eq + 1), uri);
                switch (key) {
                    case "heartbeat" -> heartbeat = range(parseInt(value, key, uri), 0, 0xFFFF, key, uri);
                    case "frame_max" -> frameMax = range(parseInt(value, key, uri), 0, Integer.MAX_VALUE, key, uri);
                    case "channel_max" -> channelMax = range(parseInt(value, key, uri), 0, 0xFFFF, key, uri);
                    case "connection_timeout" -> {
                        int ms = range(parseInt(value, key, uri), 1, Integer.MAX_VALUE, key, uri);
                        connectionTimeout = Duration.ofMillis(ms);
                    }
                    case "auth_mechanism" -> {
                        try {
                            mechanism = AuthMechanism.valueOf(value.toUpperCase(Locale.ROOT));
                        } catch (IllegalArgumentException e) {
                            throw new IllegalArgumentException("unknown auth_mechanism '" + value
                                    + "' in AMQP URI (plain, amqplain or external)");
                        }
                    }
                    default -> {
                        // RabbitMQ's clients ignore parameters they do not know (TLS file paths, for example).
                    }
                }
            }
        }
        return new AmqpUri(tls, username, password, host, port, vhost, heartbeat, frameMax, channelMax,
                connectionTimeout, mechanism);
    }

    /** Writes every value this URI gives into {@code options} and returns it. */
    public ConnectionOptions applyTo(ConnectionOptions options) {
        options.address(host, port);
        if (username != null) {
            options.username(username);
        }
        if (password != null) {
            options.password(password);
        }
        if (virtualHost != null) {
            options.virtualHost(virtualHost);
        }
        if (heartbeat >= 0) {
            options.requestedHeartbeat(heartbeat);
        }
        if (frameMax >= 0) {
            options.requestedFrameMax(frameMax);
        }
        if (channelMax >= 0) {
            options.requestedChannelMax(channelMax);
        }
        if (connectionTimeout != null) {
            options.connectionTimeout(connectionTimeout);
        }
        if (authMechanism != null) {
            options.authMechanism(authMechanism);
        }
        if (tls && options.tls() == null) {
            options.tls(new TlsOptions());
        }
        return options;
    }

    @Override
    public String toString() {
        return (tls ? "amqps://" : "amqp://") + (username == null ? "" : username + (password == null ? "" : ":***") + "@")
                + new Address(host, port) + (virtualHost == null ? "" : "/" + virtualHost);
    }

    private static int parseInt(String text, String what, String uri) {
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("invalid " + what + " '" + text + "' in AMQP URI: " + redact(uri));
        }
    }

    private static int range(int value, int min, int max, String what, String uri) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(what + " out of range " + min + ".." + max + " in AMQP URI: " + redact(uri));
        }
        return value;
    }

    /** Percent-decoding as RFC 3986 says: '+' is a plus sign here, not a space. */
    private static String decode(String s, String uri) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                if (i + 2 >= s.length()) {
                    throw new IllegalArgumentException("truncated percent-escape in AMQP URI: " + redact(uri));
                }
                int hi = Character.digit(s.charAt(i + 1), 16);
                int lo = Character.digit(s.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException("invalid percent-escape in AMQP URI: " + redact(uri));
                }
                out.write((hi << 4) | lo);
                i += 2;
            } else {
                int cp = s.codePointAt(i);
                byte[] bytes = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
                out.write(bytes, 0, bytes.length);
                i += Character.charCount(cp) - 1;
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** The URI with its password hidden, for error messages: a password is never logged or thrown. */
    static String redact(String uri) {
        return uri.replaceAll("//([^:@/]*):[^@/]*@", "//$1:***@");
    }
}
