package io.warren.perf;

import io.warren.AmqpUri;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;

/** Whether anything accepts a TCP connection where an AMQP URI points, before a run commits to a broker. */
final class BrokerProbe {

    private static final int TIMEOUT_MILLIS = 2_000;

    private BrokerProbe() {}

    /**
     * Null when something accepts a connection at {@code uri}'s host and port (5672, or 5671 for amqps, when it
     * names none); else why not, without the URI's credentials. An unparsable URI is left to the run to report.
     */
    static String refusal(String uri) {
        AmqpUri parsed;
        try {
            // Warren's parser: java.net.URI ends the user info at the first '@', so a password holding one would be
            // taken for the host, looked up and named in the answer
            parsed = AmqpUri.parse(uri);
        } catch (IllegalArgumentException e) {
            return null;
        }
        try (Socket probe = new Socket()) {
            probe.connect(new InetSocketAddress(parsed.host(), parsed.port()), TIMEOUT_MILLIS);
            return null;
        } catch (IOException e) {
            return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        }
    }
}
