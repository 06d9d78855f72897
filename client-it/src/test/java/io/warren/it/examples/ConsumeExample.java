package io.warren.it.examples;

import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * Consume with a handler: the README's example. A consumer with a prefetch of 100 and manual acknowledgement;
 * the handler borrows each delivery (its body is the network buffer, not a copy) and acks it.
 */
public final class ConsumeExample {

    public static void main(String[] args) throws InterruptedException {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        AmqpClient client = AmqpClient.create();
        client.connect(uri)
                .thenCompose(connection -> connection.openChannel())
                .thenCompose(channel -> consumeOrders(channel, "orders", order -> System.out.println("got " + order)))
                .toCompletableFuture()
                .join();
        Thread.sleep(10_000); // consume for a while; closing the client ends the consumer
        client.close().toCompletableFuture().join();
    }

    /** Consumes {@code queue}, passing each message's text to {@code orders}, then acknowledging it. */
    public static CompletionStage<ConsumerHandle> consumeOrders(
            Channel channel, String queue, Consumer<String> orders) {
        // [consume]
        ConsumeOptions options = new ConsumeOptions().prefetch(100); // at most 100 unacknowledged deliveries in flight
        return channel.consume(queue, options, delivery -> {
            // runs on the connection's event loop (ConsumeOptions.executor for a worker pool or virtual threads)
            String order = delivery.body().toString(StandardCharsets.UTF_8);
            orders.accept(order);
            delivery.ack(); // any thread, any time; acks are coalesced
        });
        // [/consume]
    }

    private ConsumeExample() {}
}
