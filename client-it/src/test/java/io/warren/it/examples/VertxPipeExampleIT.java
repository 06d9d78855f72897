package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.Unpooled;
import io.vertx.core.Vertx;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.QueueSpec;
import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import io.warren.it.BrokerExtension.TestNames;
import io.warren.vertx.VertxAmqp;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deploys the README's pipe verticle: every message of the queue ends up as a line of the file, acknowledged,
 * and undeploying the verticle (it closes its connection) ends the pipe cleanly and closes the file.
 */
@ExtendWith(BrokerExtension.class)
class VertxPipeExampleIT {

    @Test
    void everyOrderBecomesALineAndIsAckedAndTheUndeployEndsThePipeCleanly(
            Broker broker, Connection connection, TestNames names, @TempDir Path dir) throws Exception {
        String queue = names.queue("orders");
        Path file = dir.resolve("orders.txt");
        Channel channel = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        channel.queueDeclare(QueueSpec.named(queue)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        int count = 1_013; // more than the prefetch (200) and not a multiple of the batch (50)
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            expected.add("order " + i);
        }
        for (String order : expected) {
            channel.publishNoOutcome(
                    "", queue, false, null, Unpooled.wrappedBuffer(order.getBytes(StandardCharsets.UTF_8)));
        }
        Vertx vertx = Vertx.vertx();
        try {
            AmqpClient client = VertxAmqp.client(vertx, new ClientOptions().metricsEnabled(true));
            VertxPipeExample.OrdersToFileVerticle verticle =
                    new VertxPipeExample.OrdersToFileVerticle(client, broker.uri(), queue, file.toString());
            String id = vertx.deployVerticle(verticle).await(30, TimeUnit.SECONDS);
            awaitAcked(channel, queue, client, expected.size());
            vertx.undeploy(id).await(30, TimeUnit.SECONDS);
            verticle.piped().await(30, TimeUnit.SECONDS); // throws if the pipe ended with a failure
            assertEquals(expected, Files.readAllLines(file, StandardCharsets.UTF_8));
            assertEquals(
                    0,
                    channel.queueDeclare(QueueSpec.passive(queue))
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS)
                            .messageCount(),
                    "every line was acked");
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } finally {
            vertx.close().await(30, TimeUnit.SECONDS);
            channel.queueDelete(queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    /** Waits until the client acked {@code count} messages. */
    private static void awaitAcked(Channel channel, String queue, AmqpClient client, int count) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (client.metrics().acknowledged() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("acked " + client.metrics().acknowledged() + " of " + count + "; queue has "
                        + channel.queueDeclare(QueueSpec.passive(queue))
                                .toCompletableFuture()
                                .get()
                                .messageCount());
            }
            Thread.sleep(20);
        }
    }
}
