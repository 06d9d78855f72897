package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.Vertx;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.QueueSpec;
import io.warren.it.Await;
import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import io.warren.it.BrokerExtension.TestNames;
import io.warren.vertx.VertxAmqp;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Deploys the README's verticle in a real Vert.x and feeds its queue. */
@ExtendWith(BrokerExtension.class)
class VertxConsumerVerticleExampleIT {

    @Test
    void theVerticlePutsEachOrderOnTheEventBus(Broker broker, Connection connection, TestNames names) throws Exception {
        String queue = names.queue("orders");
        Channel channel = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        channel.queueDeclare(QueueSpec.named(queue)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        Vertx vertx = Vertx.vertx();
        try {
            // the example's client, with metrics on to see the verticle's connection come and go
            AmqpClient client = VertxAmqp.client(vertx, new ClientOptions().metricsEnabled(true));
            BlockingQueue<String> bus = new ArrayBlockingQueue<>(10);
            vertx.eventBus().<String>consumer("orders", m -> bus.add(m.body()));
            String id = vertx.deployVerticle(
                            new VertxConsumerVerticleExample.OrdersVerticle(client, broker.uri(), queue))
                    .await(30, TimeUnit.SECONDS);
            for (int i = 0; i < 3; i++) {
                channel.publish("", queue, false, null, ("order " + i).getBytes(StandardCharsets.UTF_8))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
            }
            for (int i = 0; i < 3; i++) {
                assertEquals("order " + i, bus.poll(30, TimeUnit.SECONDS));
            }
            assertEquals(1, client.metrics().connections());
            vertx.undeploy(id).await(30, TimeUnit.SECONDS);
            // the close completes with the socket's close; the count follows on the event loop
            Await.awaitTrue(() -> client.metrics().connections() == 0, Duration.ofSeconds(30), "no open connection");
            assertEquals(0, client.metrics().connections(), "stop() closed the connection start() opened");
            assertEquals(
                    0,
                    channel.queueDeclare(QueueSpec.passive(queue))
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS)
                            .consumerCount());
            channel.queueDelete(queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } finally {
            vertx.close().await(30, TimeUnit.SECONDS);
        }
    }
}
