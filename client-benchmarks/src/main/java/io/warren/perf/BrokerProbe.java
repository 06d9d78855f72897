package io.warren.perf;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;

/** Whether anything accepts a TCP connection where an AMQP URI points, before a run commits to a broker. */
final class BrokerProbe {

  private static final int TIMEOUT_MILLIS = 2_000;

  private BrokerProbe() {}

  /**
   * Null when something accepts a connection at {@code uri}'s host and port (5672, or 5671 for amqps, when it
   * names none); else why not, without the URI's credentials. An unparsable URI is left to the run to report.
   */
  static String refusal(String uri) {
    URI parsed;
    try {
      parsed = URI.create(uri);
    } catch (IllegalArgumentException e) {
      return null;
    }
    if (parsed.getHost() == null) {
      return null;
    }
    int port = parsed.getPort() > 0 ? parsed.getPort() : "amqps".equals(parsed.getScheme()) ? 5671 : 5672;
    try (Socket probe = new Socket()) {
      probe.connect(new InetSocketAddress(parsed.getHost(), port), TIMEOUT_MILLIS);
      return null;
    } catch (IOException e) {
      return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
    }
  }
}
