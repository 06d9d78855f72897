package io.warren;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
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
public record AmqpUri(
        boolean tls,
        String username,
        String password,
        String host,
        int port,
        String virtualHost,
        int heartbeat,
        int frameMax,
        int channelMax,
        Duration connectionTimeout,
        AuthMechanism authMechanism) {

    /**
     * Parses {@code uri}; throws {@link IllegalArgumentException} naming what is wrong. The message shows the URI
     * as {@link #redact(String)} does, so a password is never in it, whatever it contains.
     *
     * <p>A user name or password holding {@code /}, {@code ?} or {@code #} must percent-encode them: unencoded they
     * end the host part, and the rest would be read as the port, the virtual host or the query. An {@code @} after
     * the host is refused for that reason (write {@code %40} in a virtual host): it is how such a password shows.
     */
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
            throw invalid("unknown scheme (amqp:// or amqps:// expected)", uri);
        }
        // RFC 3986: the authority ends at the first '/', '?' or '#'
        int authorityEnd = rest.length();
        for (int i = 0; i < rest.length(); i++) {
            char c = rest.charAt(i);
            if (c == '/' || c == '?' || c == '#') {
                authorityEnd = i;
                break;
            }
        }
        String authority = rest.substring(0, authorityEnd);
        String tail = rest.substring(authorityEnd);
        if (tail.indexOf('@') >= 0) {
            // a password with an unencoded '/', '?' or '#' ends the authority early and leaves its rest (and the
            // user info's '@') here, where it would become the port, the virtual host or a query parameter
            throw invalid(
                    "'@' after the host (a user name or password with '/', '?' or '#' must percent-encode"
                            + " them; an '@' in a virtual host or query is written %40)",
                    uri);
        }
        String query = null;
        int fragment = tail.indexOf('#');
        if (fragment >= 0) {
            tail = tail.substring(0, fragment);
        }
        int q = tail.indexOf('?');
        if (q >= 0) {
            query = tail.substring(q + 1);
            tail = tail.substring(0, q);
        }
        String path = tail.isEmpty() ? null : tail.substring(1);
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
                throw invalid("unclosed IPv6 host", uri);
            }
            host = authority.substring(1, close);
            String after = authority.substring(close + 1);
            if (after.startsWith(":")) {
                portText = after.substring(1);
            } else if (!after.isEmpty()) {
                throw invalid("unexpected text after the IPv6 host", uri);
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
            port = range(parseInt(portText, "port", uri), 1, 65535, "port", uri);
        }
        String vhost = null;
        if (path != null) {
            if (path.indexOf('/') >= 0) {
                throw invalid("path of more than one segment (write / in a virtual host as %2F)", uri);
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
                            throw invalid("unknown auth_mechanism (plain, amqplain or external)", uri);
                        }
                    }
                    default -> {
                        // RabbitMQ's clients ignore parameters they do not know (TLS file paths, for example).
                    }
                }
            }
        }
        return new AmqpUri(
                tls,
                username,
                password,
                host,
                port,
                vhost,
                heartbeat,
                frameMax,
                channelMax,
                connectionTimeout,
                mechanism);
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
        return (tls ? "amqps://" : "amqp://")
                + (username == null ? "" : username + (password == null ? "" : ":***") + "@")
                + new Address(host, port)
                + (virtualHost == null ? "" : "/" + virtualHost);
    }

    /**
     * The URI with everything that may hold a user name or password hidden, for messages and logs: the text
     * between the scheme's {@code //} and the last {@code @} of the whole URI becomes {@code ***}. Taking the
     * last {@code @} anywhere, not the one that ends the host part, hides a password whatever it contains
     * ({@code @}, {@code /}, {@code ?}, {@code #}), even in a URI that does not parse. A URI without {@code @}
     * is returned as it is.
     */
    public static String redact(String uri) {
        int at = uri.lastIndexOf('@');
        if (at < 0) {
            return uri;
        }
        int slashes = uri.indexOf("//");
        int start = slashes >= 0 && slashes < at ? slashes + 2 : 0;
        return uri.substring(0, start) + "***" + uri.substring(at);
    }

    /**
     * The error for a malformed URI: what is wrong, then the redacted URI. No part of the URI is quoted on its
     * own, since a part taken from before the last {@code @} may be a piece of a password.
     */
    private static IllegalArgumentException invalid(String what, String uri) {
        return new IllegalArgumentException(what + " in AMQP URI: " + redact(uri));
    }

    private static int parseInt(String text, String what, String uri) {
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw invalid("invalid " + what, uri);
        }
    }

    private static int range(int value, int min, int max, String what, String uri) {
        if (value < min || value > max) {
            throw invalid(what + " out of range " + min + ".." + max, uri);
        }
        return value;
    }

    /** Percent-decoding as RFC 3986 says: '+' is a plus sign here, not a space. */
    private static String decode(String s, String uri) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                if (i + 2 >= s.length()) {
                    throw invalid("truncated percent-escape", uri);
                }
                int hi = hex(s.charAt(i + 1));
                int lo = hex(s.charAt(i + 2));
                if (hi < 0 || lo < 0) {
                    throw invalid("invalid percent-escape", uri);
                }
                out.write((hi << 4) | lo);
                i += 2;
            } else {
                int cp = s.codePointAt(i);
                if (Character.isSurrogate((char) cp) && Character.charCount(cp) == 1) {
                    // UTF-8 has no form for it: getBytes would write '?', and the broker would see another name
                    throw invalid("an unpaired surrogate", uri);
                }
                byte[] bytes = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
                out.write(bytes, 0, bytes.length);
                i += Character.charCount(cp) - 1;
            }
        }
        try {
            // REPORT, not the replacement character: two different escapes must not become the same name
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(out.toByteArray()))
                    .toString();
        } catch (CharacterCodingException e) {
            throw invalid("percent-escapes that are not UTF-8", uri);
        }
    }

    /** An ASCII hex digit's value, or -1 ({@link Character#digit} would also take other scripts' digits). */
    private static int hex(char c) {
        return c <= 'f' ? Character.digit(c, 16) : -1;
    }
}
