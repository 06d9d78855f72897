package io.warren.it.examples;

import io.warren.AmqpClient;
import io.warren.Connection;
import io.warren.ConnectionLostException;
import io.warren.ConnectionOptions;
import io.warren.RecoveryListener;
import io.warren.RecoveryOptions;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * Recovery settings: the README's example. Automatic recovery is on by default; these are the knobs, and a
 * listener that logs what recovery does.
 */
public final class RecoverySettingsExample {

    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        AmqpClient client = AmqpClient.create();
        connect(client, uri)
                .thenCompose(Connection::close)
                .whenComplete((v, e) -> client.close())
                .toCompletableFuture()
                .join();
    }

    /** Connects with explicit recovery settings and a listener. */
    public static CompletionStage<Connection> connect(AmqpClient client, String uri) {
        // [recovery]
        ConnectionOptions options = ConnectionOptions.fromUri(uri)
                .connectionName("orders-service")
                .recovery(
                        new RecoveryOptions() // on by default
                                .backoff(
                                        Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, 0.2) // exponential, jitter
                                .maxDuration(Duration.ofMinutes(10)) // then give up and close
                                .topologyRecovery(true) // exchanges, queues, bindings, consumers
                                .publishDuringRecovery(RecoveryOptions.PublishDuringRecovery.WAIT));
        return client.connect(options).thenApply(connection -> {
            connection.addRecoveryListener(new RecoveryListener() {
                @Override
                public void recoveryStarted(Connection c, ConnectionLostException cause) {
                    System.out.println("connection lost, recovering: " + cause.getMessage());
                }

                @Override
                public void recoverySucceeded(Connection c) {
                    System.out.println("recovered");
                }
            });
            return connection;
        });
        // [/recovery]
    }

    private RecoverySettingsExample() {}
}
