package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.warren.credentials.Credentials;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;

/**
 * No password in a message or a {@code toString()}, for any AMQP URI, valid or not. Passwords are generated from
 * pieces: runs of letters no message or other URI part uses (so finding one in a text can only be a leak), joined
 * by {@code : @ / % ? # & =}, unicode and percent-escapes, written raw or encoded; the URI around them is valid
 * or carries one fault of each kind the parser reports (scheme, port, host, virtual host, escapes, query).
 * Whatever the parser says, the password as written, as decoded, and each of its letter runs appear in no
 * message of the exception or its causes, and in no {@code toString()} of what was parsed.
 */
class AmqpUriSecretsTest {

    /** Letters used nowhere else in a generated URI or in the parser's messages. */
    private static final String SECRET_LETTERS = "BCDFGHJKWXYZ";

    /**
     * One piece of a password: as written in the URI, as it decodes, whether it is a letter run, and whether it is
     * written as the URI spec says (a raw '/', '?', '#' or '%' is not).
     */
    record Piece(String written, String decoded, boolean run, boolean proper) {}

    /** A generated password. */
    record Password(List<Piece> pieces) {

        String written() {
            StringBuilder b = new StringBuilder();
            pieces.forEach(p -> b.append(p.written()));
            return b.toString();
        }

        String decoded() {
            StringBuilder b = new StringBuilder();
            pieces.forEach(p -> b.append(p.decoded()));
            return b.toString();
        }

        /** Whether the URI spells this password so that a parser must give {@link #decoded()} back. */
        boolean encodedProperly() {
            return pieces.stream().allMatch(Piece::proper);
        }

        /** What must appear nowhere: the password as written and decoded, and each letter run. */
        List<String> secrets() {
            List<String> s = new ArrayList<>(List.of(written(), decoded()));
            pieces.stream().filter(Piece::run).map(Piece::written).forEach(s::add);
            return s;
        }
    }

    enum Fault {
        NONE("amqp://", "", "", ""),
        SCHEME("amqx://", "", "", ""),
        SCHEME_WITHOUT_SLASHES("amqp:", "", "", ""),
        PORT_NOT_A_NUMBER("amqp://", ":notaport", "", ""),
        PORT_OUT_OF_RANGE("amqp://", ":70000", "", ""),
        HOST_UNCLOSED_IPV6("amqp://", "", "", ""),
        HOST_TEXT_AFTER_IPV6("amqp://", "x", "", ""),
        VHOST_BAD_ESCAPE("amqp://", "", "/v%zz", ""),
        VHOST_TRUNCATED_ESCAPE("amqp://", "", "/v%2", ""),
        VHOST_TWO_SEGMENTS("amqp://", "", "/a/b", ""),
        QUERY_NOT_A_NUMBER("amqp://", "", "/v", "?heartbeat=x"),
        QUERY_OUT_OF_RANGE("amqp://", "", "/v", "?channel_max=70000"),
        QUERY_UNKNOWN_MECHANISM("amqp://", "", "/v", "?auth_mechanism=kerberos"),
        QUERY_BAD_ESCAPE("amqp://", "", "", "?heartbeat=%zz"),
        USER_BAD_ESCAPE("amqp://", "", "", "");

        final String scheme;
        final String afterHost;
        final String path;
        final String query;

        Fault(String scheme, String afterHost, String path, String query) {
            this.scheme = scheme;
            this.afterHost = afterHost;
            this.path = path;
            this.query = query;
        }
    }

    /** A URI made of a password and a fault. */
    record Case(Fault fault, String user, Password password, String host, String port, String path, String query) {

        String uri() {
            String h =
                    fault == Fault.HOST_UNCLOSED_IPV6 ? "[::1" : fault == Fault.HOST_TEXT_AFTER_IPV6 ? "[::1]" : host;
            String u = fault == Fault.USER_BAD_ESCAPE ? user + "%zz" : user;
            return fault.scheme + u + ":" + password.written() + "@" + h
                    + (fault.afterHost.isEmpty() ? port : fault.afterHost) + (fault.path.isEmpty() ? path : fault.path)
                    + (fault.query.isEmpty() ? query : fault.query);
        }
    }

    @Provide
    Arbitrary<Case> uris() {
        Arbitrary<String> users = Arbitraries.of("guest", "u", "", "us%40er", "service-a");
        Arbitrary<String> hosts = Arbitraries.of("127.0.0.1", "host.example", "[::1]", "", "rabbit");
        Arbitrary<String> ports = Arbitraries.of("", ":5672", ":1", ":65535", ":");
        Arbitrary<String> paths = Arbitraries.of("", "/", "/v", "/%2F", "/vh%2Fost");
        Arbitrary<String> queries = Arbitraries.of("", "?heartbeat=10", "?frame_max=8192&channel_max=5", "#frag");
        return Combinators.combine(Arbitraries.of(Fault.class), users, passwords(), hosts, ports, paths, queries)
                .as(Case::new);
    }

    static Arbitrary<Password> passwords() {
        Arbitrary<Piece> runs = Arbitraries.strings()
                .withChars(SECRET_LETTERS)
                .ofMinLength(4)
                .ofMaxLength(8)
                .map(s -> new Piece(s, s, true, true));
        Arbitrary<String> specials =
                Arbitraries.of(":", "@", "/", "%", "?", "#", "&", "=", "+", " ", "é", "密", "😀", "\u0000", "%2", "%zz");
        Arbitrary<Piece> raw = specials.map(s -> new Piece(s, s, false, !s.matches(".*[/?#%].*")));
        Arbitrary<Piece> encoded = Arbitraries.of(":", "@", "/", "%", "?", "#", "é", "密", "😀", "K")
                .map(s -> new Piece(percentEncodeAll(s), s, false, true));
        Arbitrary<Piece> joints = Arbitraries.oneOf(raw, encoded);
        return Combinators.combine(
                        runs,
                        Combinators.combine(joints, runs).as(List::of).list().ofMaxSize(3))
                .as((first, rest) -> {
                    List<Piece> pieces = new ArrayList<>();
                    pieces.add(first);
                    rest.forEach(pieces::addAll);
                    return new Password(pieces);
                });
    }

    private static String percentEncodeAll(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            b.append('%').append(String.format("%02X", x & 0xFF));
        }
        return b.toString();
    }

    @Property(tries = 3000)
    void thePasswordIsInNoMessageAndNoToString(@ForAll("uris") Case c) {
        // valid URIs are generated too, not only faulty ones
        Statistics.label("parsed").coverage(coverage -> coverage.check(true).percentage(p -> p > 1));
        String uri = c.uri();
        AmqpUri parsed;
        try {
            parsed = AmqpUri.parse(uri);
        } catch (IllegalArgumentException e) {
            Statistics.label("parsed").collect(false);
            assertHiddenInChain(c.password(), e);
            assertHidden(c.password(), AmqpUri.redact(uri), "redact(uri)");
            return;
        }
        Statistics.label("parsed").collect(true);
        assertEquals(Fault.NONE, c.fault(), () -> "parsed despite its fault: " + uri);
        if (c.password().encodedProperly()) {
            assertEquals(c.password().decoded(), parsed.password(), () -> "the password of " + uri);
        }
        assertHidden(c.password(), parsed.toString(), "AmqpUri.toString()");
        ConnectionOptions options = parsed.applyTo(new ConnectionOptions());
        assertHidden(c.password(), options.toString(), "ConnectionOptions.toString()");
        assertHidden(c.password(), options.addresses().toString(), "the addresses");
        assertHidden(c.password(), String.valueOf(parsed.virtualHost()), "the virtual host");
        assertHidden(c.password(), AmqpUri.redact(uri), "redact(uri)");
    }

    @Property(tries = 300)
    void credentialsAndOptionsNeverShowTheSecret(@ForAll("passwordsOnly") Password p) {
        String secret = p.decoded();
        assertHidden(p, Credentials.of("u", secret).toString(), "Credentials.toString()");
        assertHidden(p, new ConnectionOptions().password(secret).toString(), "ConnectionOptions.toString()");
        String encoded = URLEncoder.encode(secret, StandardCharsets.UTF_8).replace("+", "%20");
        AmqpUri parsed = AmqpUri.parse("amqp://u:" + encoded + "@h/v");
        assertEquals(secret, parsed.password());
        assertHidden(p, parsed.toString(), "AmqpUri.toString()");
    }

    @Provide
    Arbitrary<Password> passwordsOnly() {
        return passwords();
    }

    @Example
    void theIssuesExamples() {
        IllegalArgumentException slash = assertThrows(
                IllegalArgumentException.class, () -> AmqpUri.parse("amqp://guest:Sekr1tXYZZY/x@127.0.0.1:5672/v"));
        assertFalse(slash.getMessage().contains("Sekr1t"), slash.getMessage());
        assertFalse(slash.getMessage().contains("XYZZY"), slash.getMessage());
        IllegalArgumentException at = assertThrows(
                IllegalArgumentException.class, () -> AmqpUri.parse("amqp://guest:Sek@r1t@host:notaport/v"));
        assertFalse(at.getMessage().contains("r1t"), at.getMessage());
        assertFalse(at.getMessage().contains("Sek"), at.getMessage());
        assertEquals("amqp://***@host:notaport/v", AmqpUri.redact("amqp://guest:Sek@r1t@host:notaport/v"));
        // a password whose unencoded '/' would have made the rest of it the virtual host
        IllegalArgumentException vhost =
                assertThrows(IllegalArgumentException.class, () -> AmqpUri.parse("amqp://guest:/Sekr1t@host"));
        assertFalse(vhost.getMessage().contains("Sekr1t"), vhost.getMessage());
        // the same password written as the URI spec says is read whole
        assertEquals("/Sekr1t", AmqpUri.parse("amqp://guest:%2FSekr1t@host").password());
    }

    private static void assertHiddenInChain(Password p, Throwable top) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        List<Throwable> todo = new ArrayList<>(List.of(top));
        while (!todo.isEmpty()) {
            Throwable t = todo.remove(todo.size() - 1);
            if (t == null || !seen.add(t)) {
                continue;
            }
            assertHidden(
                    p,
                    String.valueOf(t.getMessage()),
                    "the message of " + t.getClass().getSimpleName());
            assertHidden(p, t.toString(), "toString() of " + t.getClass().getSimpleName());
            todo.add(t.getCause());
            todo.addAll(List.of(t.getSuppressed()));
        }
    }

    private static void assertHidden(Password p, String text, String where) {
        for (String secret : p.secrets()) {
            if (secret.length() > 3) {
                assertFalse(text.contains(secret), () -> where + " shows '" + secret + "': " + text);
            }
        }
    }
}
