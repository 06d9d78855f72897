package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConsumerHandle;
import io.warren.QueueSpec;
import io.warren.it.Await;
import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import io.warren.it.BrokerExtension.TestNames;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs the README's publish-with-confirms and consume examples against the broker. */
@ExtendWith(BrokerExtension.class)
class PublishAndConsumeExamplesIT {

    @Test
    void publishedOrdersAreConfirmedThenConsumedAndAcked(Connection connection, TestNames names) throws Exception {
        String queue = names.queue("orders");
        Channel publisher = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        publisher.queueDeclare(QueueSpec.named(queue)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        Channel consumerChannel = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        List<String> received = new CopyOnWriteArrayList<>();
        ConsumerHandle consumer = ConsumeExample.consumeOrders(consumerChannel, queue, received::add)
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);

        int confirmed = PublishWithConfirmsExample.publishOrders(publisher, queue, 500)
                .toCompletableFuture()
                .get(60, TimeUnit.SECONDS);
        assertEquals(500, confirmed);

        Await.awaitTrue(() -> received.size() >= 500, Duration.ofSeconds(30), "500 orders received");
        assertEquals(500, received.size());
        assertEquals("order 0", received.get(0));
        assertEquals("order 499", received.get(499));
        consumer.cancel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(
                0,
                publisher
                        .queueDeclare(QueueSpec.passive(queue))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS)
                        .messageCount(),
                "every delivery acked");
        publisher.queueDelete(queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void mainPublishesToOrders(Broker broker, Connection connection) throws Exception {
        PublishWithConfirmsExample.main(new String[] {broker.uri()});
        Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertTrue(ch.queueDelete("orders").toCompletableFuture().get(30, TimeUnit.SECONDS) >= 1000);
    }
}
