package io.warren.it.examples;

import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.QueueSpec;
import io.warren.rpc.RpcClient;
import io.warren.rpc.RpcServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Request/reply: the README's example. A server answers on a queue; the client calls it over RabbitMQ's direct
 * reply-to (no reply queue), with a correlation id and a timeout per call.
 */
public final class RpcExample {

    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        AmqpClient client = AmqpClient.create();
        String reply = client.connect(uri)
                .thenCompose(connection -> connection
                        .openChannel()
                        .thenCompose(serverChannel -> serve(serverChannel, "upper-case"))
                        .thenCompose(server -> connection.openChannel())
                        .thenCompose(clientChannel -> call(clientChannel, "upper-case", "hello"))
                        .whenComplete((r, error) -> connection.close()))
                .whenComplete((r, error) -> client.close())
                .toCompletableFuture()
                .join();
        System.out.println(reply);
    }

    /** Serves {@code queue}: each request's text comes back upper-cased. */
    public static CompletionStage<RpcServer> serve(Channel channel, String queue) {
        // [rpc-server]
        return channel.queueDeclare(QueueSpec.named(queue).autoDelete(true))
                .thenCompose(ok -> RpcServer.start(
                        channel, queue, new ConsumeOptions().prefetch(20).concurrency(4), request -> {
                            String text = request.body().toString(StandardCharsets.UTF_8);
                            byte[] answer = text.toUpperCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8);
                            return CompletableFuture.completedFuture(RpcServer.Reply.of(answer));
                        }));
        // [/rpc-server]
    }

    /** Calls the server on {@code queue} with {@code text}; completes with its answer. */
    public static CompletionStage<String> call(Channel channel, String queue, String text) {
        // [rpc-client]
        return RpcClient.create(channel) // consumes amq.rabbitmq.reply-to first, as the broker requires
                .thenCompose(rpc -> rpc.call(
                        "", queue, null, Unpooled.copiedBuffer(text, StandardCharsets.UTF_8), Duration.ofSeconds(5)))
                .thenApply(reply -> {
                    try {
                        return reply.body().toString(StandardCharsets.UTF_8);
                    } finally {
                        reply.release(); // the reply is the caller's
                    }
                });
        // [/rpc-client]
    }

    private RpcExample() {}
}
