package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.QueueSpec;
import io.warren.RpcTimeoutException;
import io.warren.codec.content.BasicProperties;
import io.warren.rpc.RequestReturnedException;
import io.warren.rpc.RpcClient;
import io.warren.rpc.RpcServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** RpcClient over direct reply-to and RpcServer, against the broker. */
@ExtendWith(BrokerExtension.class)
class RpcIT {

    private static String text(Delivery reply) {
        try {
            return reply.body().toString(StandardCharsets.UTF_8);
        } finally {
            reply.release();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A server on its own connection that upper-cases each request. */
    private static RpcServer upperCaseServer(Broker broker, BrokerExtension.TestNames names, String queue)
            throws Exception {
        Connection serverConnection = await(BrokerExtension.client().connect(broker.uri()));
        names.onCleanup(() -> await(serverConnection.close()));
        Channel serverChannel = await(serverConnection.openChannel());
        await(serverChannel.queueDeclare(QueueSpec.named(queue).autoDelete(true)));
        return await(RpcServer.start(
                serverChannel,
                queue,
                new ConsumeOptions().prefetch(32).concurrency(8),
                request -> CompletableFuture.completedFuture(RpcServer.Reply.of(
                        BasicProperties.builder().contentType("text/plain").build(),
                        io.netty.buffer.Unpooled.copiedBuffer(
                                request.body().toString(StandardCharsets.UTF_8).toUpperCase(Locale.ROOT),
                                StandardCharsets.UTF_8)))));
    }

    @Test
    void aCallGetsItsReply(Broker broker, Connection connection, BrokerExtension.TestNames names) throws Exception {
        String queue = names.queue("upper");
        upperCaseServer(broker, names, queue);
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        Delivery reply = await(rpc.call("", queue, null, bytes("hello"), Duration.ofSeconds(10)));
        assertEquals("text/plain", reply.properties().contentType());
        assertEquals("HELLO", text(reply));
        assertEquals(0, rpc.pendingCalls());
        await(rpc.close());
    }

    /** ChronoUnit.FOREVER's duration, the usual way to say "no timeout", is one (it threw, leaving its call behind). */
    @Test
    void aCallWithoutATimeoutGetsItsReply(Broker broker, Connection connection, BrokerExtension.TestNames names)
            throws Exception {
        String queue = names.queue("upper");
        upperCaseServer(broker, names, queue);
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        Delivery reply =
                await(rpc.call("", queue, null, bytes("forever"), java.time.temporal.ChronoUnit.FOREVER.getDuration()));
        assertEquals("FOREVER", text(reply));
        assertEquals(0, rpc.pendingCalls());
        await(rpc.close());
    }

    @Test
    void manyConcurrentCallsFromManyThreadsEachGetTheirOwnReply(
            Broker broker, Connection connection, BrokerExtension.TestNames names) throws Exception {
        String queue = names.queue("upper");
        upperCaseServer(broker, names, queue);
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try {
            List<CompletableFuture<String>> calls = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int thread = t;
                calls.add(CompletableFuture.supplyAsync(
                        () -> {
                            List<CompletableFuture<String>> mine = new ArrayList<>();
                            for (int i = 0; i < 250; i++) {
                                String request = "t" + thread + "-m" + i;
                                mine.add(rpc.call("", queue, null, bytes(request), Duration.ofSeconds(30))
                                        .thenApply(r -> request + "=" + text(r))
                                        .toCompletableFuture());
                            }
                            return mine.stream()
                                    .map(CompletableFuture::join)
                                    .reduce((a, b) -> a + "," + b)
                                    .orElse("");
                        },
                        threads));
            }
            for (CompletableFuture<String> c : calls) {
                for (String pair : c.get(60, TimeUnit.SECONDS).split(",")) {
                    String[] kv = pair.split("=");
                    assertEquals(kv[0].toUpperCase(Locale.ROOT), kv[1], "reply matched to its request");
                }
            }
            assertEquals(0, rpc.pendingCalls());
        } finally {
            threads.shutdown();
        }
    }

    @Test
    void aCallWithoutAServerTimesOut(Connection connection, BrokerExtension.TestNames names) throws Exception {
        Channel channel = await(connection.openChannel());
        String queue = await(channel.queueDeclare(QueueSpec.serverNamed())).queue(); // exists, nobody serves it
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        long start = System.nanoTime();
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> await(rpc.call("", queue, null, bytes("anyone?"), Duration.ofMillis(300))));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertInstanceOf(RpcTimeoutException.class, e.getCause());
        assertTrue(
                e.getCause().getMessage().contains("within PT0.3S"),
                e.getCause().getMessage());
        // a lower bound only: a 300 ms timeout cannot fire sooner (the wait itself is bounded by await)
        assertTrue(millis >= 250, "timed out after " + millis + " ms");
        assertEquals(0, rpc.pendingCalls());
    }

    /**
     * A call's timeout completes it where a reply would: on the connection's event loop, not on the JDK's one timer
     * thread, where a caller's continuation that blocks would hold up every completeOnTimeout and orTimeout in the JVM.
     */
    @Test
    void aTimedOutCallCompletesOnTheConnectionsEventLoop(Connection connection) throws Exception {
        Channel channel = await(connection.openChannel());
        String queue = await(channel.queueDeclare(QueueSpec.serverNamed())).queue(); // exists, nobody serves it
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        CompletableFuture<String> ranOn = rpc.call("", queue, null, bytes("anyone?"), Duration.ofMillis(100))
                .toCompletableFuture()
                .handle((reply, e) -> {
                    assertInstanceOf(RpcTimeoutException.class, e);
                    return connection.eventLoop().inEventLoop()
                            ? "the event loop"
                            : Thread.currentThread().getName();
                });
        assertEquals("the event loop", ranOn.get(5, TimeUnit.SECONDS));
        assertEquals(0, rpc.pendingCalls());
    }

    @Test
    void aRequestNoQueueTakesFailsAtOnce(Connection connection, BrokerExtension.TestNames names) throws Exception {
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> await(rpc.call("", names.queue("nobody"), null, bytes("lost"), Duration.ofSeconds(20))));
        assertInstanceOf(RequestReturnedException.class, e.getCause());
        assertEquals(312, ((RequestReturnedException) e.getCause()).replyCode());
    }

    @Test
    void aFailingHandlerRejectsTheRequestAndTheCallerTimesOut(
            Broker broker, Connection connection, BrokerExtension.TestNames names) throws Exception {
        String queue = names.queue("failing");
        Connection serverConnection = await(BrokerExtension.client().connect(broker.uri()));
        names.onCleanup(() -> await(serverConnection.close()));
        Channel serverChannel = await(serverConnection.openChannel());
        await(serverChannel.queueDeclare(QueueSpec.named(queue).autoDelete(true)));
        await(RpcServer.start(
                serverChannel,
                queue,
                request -> CompletableFuture.failedFuture(new IllegalStateException("cannot price that"))));
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> await(rpc.call("", queue, null, bytes("XAUUSD"), Duration.ofMillis(500))));
        assertInstanceOf(RpcTimeoutException.class, e.getCause());
        Channel check = await(connection.openChannel());
        assertEquals(0, await(check.queueDeclare(QueueSpec.passive(queue))).messageCount(), "rejected without requeue");
    }

    /**
     * The reply queue is full and refuses publishes (reject-publish): the broker nacks the first reply, the request
     * goes back to its queue rather than being lost, and its second delivery, once the reply queue has room, is
     * answered.
     */
    @Test
    void aReplyTheBrokerRefusesRequeuesTheRequestAndALaterAttemptAnswersIt(
            Broker broker, Connection connection, BrokerExtension.TestNames names) throws Exception {
        String requests = names.queue("requests");
        String replies = names.queue("full-replies");
        Channel client = await(connection.openChannel());
        await(client.queueDeclare(QueueSpec.named(replies).maxLength(1).argument("x-overflow", "reject-publish")));
        names.onCleanup(() -> await(client.queueDelete(replies)));
        await(client.confirmSelect()); // the filler is in the queue once confirmed
        await(client.publish("", replies, false, null, bytes("filler")));
        assertEquals(
                1, await(client.queueDeclare(QueueSpec.passive(replies))).messageCount(), "the reply queue is full");

        Connection serverConnection = await(BrokerExtension.client().connect(broker.uri()));
        names.onCleanup(() -> await(serverConnection.close()));
        Channel serverChannel = await(serverConnection.openChannel());
        await(serverChannel.confirmSelect()); // a refused reply is only known from the broker's nack
        await(serverChannel.queueDeclare(QueueSpec.named(requests).autoDelete(true)));
        List<Boolean> redelivered = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<String> reply = new CompletableFuture<>();
        await(RpcServer.start(serverChannel, requests, request -> {
            redelivered.add(request.redelivered());
            RpcServer.Reply upper = RpcServer.Reply.of(request.bodyAsString(StandardCharsets.UTF_8)
                    .toUpperCase(Locale.ROOT)
                    .getBytes(StandardCharsets.UTF_8));
            if (redelivered.size() == 1) {
                return CompletableFuture.completedFuture(upper);
            }
            // the second attempt: room in the reply queue, and someone to read the reply
            return client.queuePurge(replies)
                    .thenCompose(purged -> client.consume(
                            replies,
                            new ConsumeOptions().noAck(true),
                            d -> reply.complete(
                                    d.properties().correlationId() + " " + d.bodyAsString(StandardCharsets.UTF_8))))
                    .thenApply(consuming -> upper);
        }));

        await(client.publish(
                "",
                requests,
                false,
                BasicProperties.builder().replyTo(replies).correlationId("c-1").build(),
                bytes("hello")));
        assertEquals("c-1 HELLO", await(reply), "answered by the attempt after the refused one");
        assertEquals(List.of(false, true), redelivered);
    }

    @Test
    void closingTheClientFailsCallsInFlight(Connection connection) throws Exception {
        Channel channel = await(connection.openChannel());
        String queue = await(channel.queueDeclare(QueueSpec.serverNamed())).queue();
        RpcClient rpc = await(RpcClient.create(await(connection.openChannel())));
        CompletionStage<Delivery> call = rpc.call("", queue, null, bytes("waiting"), Duration.ofSeconds(30));
        await(rpc.close());
        ExecutionException e = assertThrows(ExecutionException.class, () -> await(call));
        assertTrue(e.getCause().getMessage().contains("closed"), e.getCause().getMessage());
        assertThrows(
                ExecutionException.class,
                () -> await(rpc.call("", queue, null, bytes("after"), Duration.ofSeconds(1))));
    }
}
