// [main]
package io.warren.it.examples;

import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A whole program: connect, declare a queue, consume it with manual acknowledgement, publish ten messages with
 * publisher confirms, wait for both, close. Run it with a broker URI (default: guest on localhost).
 */
public final class GettingStartedExample {

    public static void main(String[] args) throws Exception {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        int count = 10;
        AmqpClient client = AmqpClient.create(); // owns the event loops: close it last
        try {
            // every call returns a CompletionStage; this main thread may wait on them, a handler never does
            Connection connection = client.connect(uri).toCompletableFuture().get(10, TimeUnit.SECONDS);
            Channel channel = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            String queue = channel.queueDeclare(QueueSpec.serverNamed()) // exclusive, deleted with us
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS)
                    .queue();

            // consume with manual acknowledgement: at most 50 unacknowledged deliveries in flight
            CountDownLatch received = new CountDownLatch(count);
            channel.consume(queue, new ConsumeOptions().prefetch(50), delivery -> {
                        // the delivery and its body are lent to this handler: copy what you keep
                        System.out.println("received " + delivery.body().toString(StandardCharsets.UTF_8));
                        delivery.ack();
                        received.countDown();
                    })
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);

            // publish with confirms: each publish's stage completes when the broker has taken the message
            channel.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);
            List<CompletableFuture<PublishOutcome>> confirms = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                byte[] body = ("hello " + i).getBytes(StandardCharsets.UTF_8);
                confirms.add(channel.publish("", queue, false, null, body).toCompletableFuture());
            }
            CompletableFuture.allOf(confirms.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
            System.out.println(count + " messages confirmed by the broker");

            if (!received.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException((count - received.getCount()) + " of " + count + " received");
            }
            connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } finally {
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }
}
// [/main]
