package io.warren.it;

import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.RecoveryOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** Connections a test opens itself, beside the one {@link BrokerExtension} gives it. */
public final class Connections {

    private Connections() {}

    /**
     * Options for {@code broker}, the connection named {@code name} (so that {@link Rabbitmqctl#closeConnection}
     * finds it), with a quick recovery backoff: a test should not wait seconds for the first attempt.
     */
    public static ConnectionOptions quick(Broker broker, String name) {
        return ConnectionOptions.fromUri(broker.uri())
                .connectionName(name)
                .recovery(new RecoveryOptions().backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2.0, 0.5));
    }

    /** Connects with {@code options}; the connection is closed after the test, whatever the test left. */
    public static Connection connect(ConnectionOptions options, BrokerExtension.TestNames names) throws Exception {
        Connection c =
                BrokerExtension.client().connect(options).toCompletableFuture().get(30, TimeUnit.SECONDS);
        names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
        return c;
    }
}
