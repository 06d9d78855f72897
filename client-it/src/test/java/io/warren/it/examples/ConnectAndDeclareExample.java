package io.warren.it.examples;

import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.DeclaredQueue;
import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import java.util.concurrent.CompletionStage;

/**
 * Connect and declare: the README's first example. Connects with an AMQP URI, declares a durable topic
 * exchange and a quorum queue, binds them, and prints what the broker says about the queue. Nothing blocks
 * until {@code main} waits for the end.
 */
public final class ConnectAndDeclareExample {

    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        AmqpClient client = AmqpClient.create();
        declare(client, uri, "orders", "orders.eu")
                .thenAccept(ok -> System.out.println(
                        ok.queue() + ": " + ok.messageCount() + " messages, " + ok.consumerCount() + " consumers"))
                .whenComplete((v, error) -> client.close())
                .toCompletableFuture()
                .join();
    }

    /** Declares {@code exchange} and {@code queue}, binds them with {@code eu.#}, then closes the connection. */
    public static CompletionStage<DeclaredQueue> declare(AmqpClient client, String uri, String exchange, String queue) {
        // [connect]
        return client.connect(uri)
                .thenCompose(connection -> connection
                        .openChannel()
                        .thenCompose(channel -> declareOn(channel, exchange, queue))
                        .handle((ok, error) -> closeThen(connection, ok, error))
                        .thenCompose(result -> result));
        // [/connect]
    }

    private static CompletionStage<DeclaredQueue> declareOn(Channel channel, String exchange, String queue) {
        // [declare]
        return channel.exchangeDeclare(ExchangeSpec.of(exchange, "topic").durable(true))
                .thenCompose(v -> channel.queueDeclare(QueueSpec.named(queue).quorum()))
                .thenCompose(
                        ok -> channel.queueBind(ok.queue(), exchange, "eu.#").thenApply(v -> ok));
        // [/declare]
    }

    /** Closes the connection whatever happened, then passes the result (or the failure) on. */
    private static CompletionStage<DeclaredQueue> closeThen(Connection connection, DeclaredQueue ok, Throwable error) {
        return connection
                .close()
                .thenCompose(v -> error == null
                        ? java.util.concurrent.CompletableFuture.completedFuture(ok)
                        : java.util.concurrent.CompletableFuture.failedFuture(error));
    }

    private ConnectAndDeclareExample() {}
}
