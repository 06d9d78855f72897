package io.warren.it.examples;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.warren.AmqpClient;
import io.warren.ConsumeOptions;
import io.warren.vertx.VertxAmqp;
import io.warren.vertx.VertxConnection;
import java.nio.charset.StandardCharsets;

/**
 * Consume as a Vert.x {@code ReadStream} in a verticle: the README's example. Warren runs on Vert.x's own event
 * loops; the verticle's futures and the stream's handler run on the verticle's context, and each delivery's
 * text goes on the event bus.
 */
public final class VertxConsumerVerticleExample {

    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        Vertx vertx = Vertx.vertx();
        AmqpClient client = client(vertx);
        vertx.eventBus().<String>consumer("orders", m -> System.out.println("order: " + m.body()));
        vertx.deployVerticle(new OrdersVerticle(client, uri, "orders")).onFailure(Throwable::printStackTrace);
    }

    /** A Warren client on {@code vertx}'s event loops (no threads of its own). */
    public static AmqpClient client(Vertx vertx) {
        // [vertx-client]
        AmqpClient client = VertxAmqp.client(vertx); // runs on Vert.x's event loops, no threads of its own
        // [/vertx-client]
        return client;
    }

    /** Consumes a queue as a ReadStream and publishes each order's text on the event bus address "orders". */
    // [vertx-verticle]
    public static final class OrdersVerticle extends VerticleBase {
        private final AmqpClient client;
        private final String uri;
        private final String queue;
        private VertxConnection connection;

        public OrdersVerticle(AmqpClient client, String uri, String queue) {
            this.client = client;
            this.uri = uri;
            this.queue = queue;
        }

        @Override
        public Future<?> start() {
            return VertxAmqp.create(vertx)
                    .connect(client, uri) // futures complete on this verticle's context
                    .compose(opened -> {
                        connection = opened;
                        return opened.openChannel();
                    })
                    .compose(channel -> channel.consume(queue, new ConsumeOptions().prefetch(50)))
                    .onSuccess(orders -> orders.handler(delivery -> {
                        vertx.eventBus().publish("orders", delivery.bodyAsString(StandardCharsets.UTF_8));
                        delivery.ack();
                    }));
        }

        @Override
        public Future<?> stop() {
            // the verticle opened the connection, so it closes it: the consumer ends, unacked messages go back
            return connection == null ? Future.succeededFuture() : connection.close();
        }
    }
    // [/vertx-verticle]

    private VertxConsumerVerticleExample() {}
}
