package io.warren.bench.latency;

import java.util.List;

/**
 * One client under measurement, connected to the loopback peer with one channel. {@link #publish()} stamps the body
 * with {@code System.nanoTime()} as the last thing before the client's publish call (the stamp the peer subtracts
 * from its own clock when it reads the body frame), then makes that call. Caller thread only.
 */
interface RoundTripClient extends AutoCloseable {

    String WARREN = "warren";
    String AMQP_CLIENT = "amqp-client";

    /** The names {@link #open} knows. */
    List<String> NAMES = List.of(WARREN, AMQP_CLIENT);

    /** The routing key of every message (the peer routes nothing; a broker's default exchange would drop it). */
    String ROUTING_KEY = "round-trip";

    /** Connects {@code name}'s client to {@code uri} and opens its channel; publishes will carry {@code bodySize} bytes. */
    static RoundTripClient open(String name, String uri, int bodySize) throws Exception {
        return switch (name) {
            case WARREN -> WarrenRoundTripClient.open(uri, bodySize);
            case AMQP_CLIENT -> AmqpClientRoundTripClient.open(uri, bodySize);
            default -> throw new IllegalArgumentException("unknown client " + name + ", one of " + NAMES);
        };
    }

    /** Stamps a body and publishes it (no confirms); returns once the client's publish call returns. */
    void publish();

    @Override
    void close() throws Exception;
}
