package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.QueueSpec;
import io.warren.it.Await;
import io.warren.it.BrokerExtension;
import io.warren.it.BrokerExtension.TestNames;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs the README's Reactive Streams example against the broker. */
@ExtendWith(BrokerExtension.class)
class FlowExampleIT {

    @Test
    void everyOrderArrivesInOrderAckedAndTheStreamCompletesWhenTheQueueGoes(Connection connection, TestNames names)
            throws Exception {
        String queue = names.queue("orders");
        Channel publisher = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        publisher.queueDeclare(QueueSpec.named(queue)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        int confirmed = PublishWithConfirmsExample.publishOrders(publisher, queue, 300)
                .toCompletableFuture()
                .get(60, TimeUnit.SECONDS);
        assertEquals(300, confirmed);

        Channel consumerChannel = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        List<String> received = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> done = FlowExample.consumeOrders(consumerChannel, queue, received::add);
        Await.awaitTrue(() -> received.size() >= 300, Duration.ofSeconds(30), "300 orders");
        assertEquals(300, received.size());
        assertEquals("order 0", received.get(0));
        assertEquals("order 299", received.get(299));
        List<String> expected =
                IntStream.range(0, 300).mapToObj(i -> "order " + i).toList();
        assertEquals(expected, received, "every order once, in order");

        publisher.queueDelete(queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
        done.get(30, TimeUnit.SECONDS); // the broker's basic.cancel completes the stream
    }
}
