package io.warren.it.examples;

import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.flow.DeliveryPublisher;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.function.Consumer;

/**
 * A queue as a {@link Flow.Publisher}: the README's Reactive Streams example. The subscriber asks for a batch,
 * reads each delivery in {@code onNext} (it is borrowed), acknowledges it and asks for one more; the broker keeps
 * everything beyond the prefetch.
 */
public final class FlowExample {

    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        AmqpClient client = AmqpClient.create();
        client.connect(uri)
                .thenCompose(connection -> connection.openChannel())
                .thenCompose(channel -> consumeOrders(channel, "orders", order -> System.out.println("got " + order)))
                .toCompletableFuture()
                .join(); // until the queue is deleted or the channel closed
        client.close().toCompletableFuture().join();
    }

    /**
     * Subscribes to {@code queue}, passing each message's text to {@code orders}; completes when the stream
     * completes (the queue was deleted, the channel closed by the application), fails when it fails.
     */
    public static CompletableFuture<Void> consumeOrders(Channel channel, String queue, Consumer<String> orders) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        // [flow]
        DeliveryPublisher publisher =
                DeliveryPublisher.of(channel, queue, new ConsumeOptions().prefetch(50)); // the broker holds all but 50
        publisher.subscribe(new Flow.Subscriber<Delivery>() {
            private Flow.Subscription subscription;

            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscription = s;
                s.request(50); // demand: nothing arrives without it
            }

            @Override
            public void onNext(Delivery delivery) {
                // borrowed: read it here (or retain() it); Warren releases it when onNext returns
                orders.accept(delivery.body().toString(StandardCharsets.UTF_8));
                delivery.ack(); // manual acknowledgement: the subscriber settles
                subscription.request(1);
            }

            @Override
            public void onError(Throwable failure) { // the channel or connection failed
                done.completeExceptionally(failure);
            }

            @Override
            public void onComplete() { // queue deleted, or an orderly close
                done.complete(null);
            }
        });
        // [/flow]
        return done;
    }

    private FlowExample() {}
}
