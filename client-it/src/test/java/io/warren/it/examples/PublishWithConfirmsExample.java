package io.warren.it.examples;

import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.codec.content.BasicProperties;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Publish with confirms: the README's example. Puts the channel in confirm mode and publishes persistent
 * messages; each publish's stage completes when the broker has taken responsibility for the message.
 */
public final class PublishWithConfirmsExample {

    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        AmqpClient client = AmqpClient.create();
        client.connect(uri)
                .thenCompose(connection -> connection
                        .openChannel()
                        .thenCompose(channel -> channel.queueDeclare(
                                        QueueSpec.named("orders").durable(true))
                                .thenCompose(ok -> publishOrders(channel, "orders", 1000)))
                        .whenComplete((n, error) -> connection.close()))
                .thenAccept(n -> System.out.println(n + " orders confirmed"))
                .whenComplete((v, error) -> client.close())
                .toCompletableFuture()
                .join();
    }

    /** Publishes {@code count} orders to {@code queue} and completes with the number the broker confirmed. */
    public static CompletionStage<Integer> publishOrders(Channel channel, String queue, int count) {
        // [publish-with-confirms]
        BasicProperties persistent = BasicProperties.builder()
                .contentType("text/plain")
                .deliveryMode(2)
                .build();
        return channel.confirmSelect().thenCompose(confirmMode -> {
            List<CompletableFuture<PublishOutcome>> outcomes = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                byte[] body = ("order " + i).getBytes(StandardCharsets.UTF_8);
                outcomes.add(channel.publish("", queue, false, persistent, body).toCompletableFuture());
            }
            // completes when the broker acked every one; a nack fails it with PublishNackedException
            return CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new))
                    .thenApply(all -> (int) outcomes.stream()
                            .filter(f -> f.join().isConfirmed())
                            .count());
        });
        // [/publish-with-confirms]
    }

    private PublishWithConfirmsExample() {}
}
