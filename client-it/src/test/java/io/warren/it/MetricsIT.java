package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientMetrics;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.micrometer.WarrenMeterBinder;
import io.warren.rpc.RpcClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The Micrometer meters of a client with metrics enabled, against the broker. */
@ExtendWith(BrokerExtension.class)
class MetricsIT {

    private static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 30 s: " + what);
            }
            Thread.sleep(10);
        }
    }

    private static double value(MeterRegistry registry, String name) {
        var gauge = registry.find(name).gauge();
        if (gauge != null) {
            return gauge.value();
        }
        return registry.get(name).functionCounter().count();
    }

    @Test
    void publishConfirmReturnConsumeAndSettleAreCounted(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        AmqpClient client =
                AmqpClient.create(new ClientOptions().metricsEnabled(true).ioThreads(1));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new WarrenMeterBinder(client, Tags.of("app", "metrics-it")).bindTo(registry);
        ClientMetrics metrics = client.metrics();
        try {
            Connection connection = await(client.connect(broker.uri()));
            Channel channel = await(connection.openChannel());
            assertEquals(1, value(registry, "rabbitmq.connections"));
            assertEquals(1, value(registry, "rabbitmq.channels"));
            String queue = await(channel.queueDeclare(QueueSpec.serverNamed())).queue();

            await(channel.confirmSelect());
            List<CompletableFuture<PublishOutcome>> outcomes = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                outcomes.add(channel.publish("", queue, false, null, ("m" + i).getBytes(StandardCharsets.UTF_8))
                        .toCompletableFuture());
            }
            PublishOutcome unroutable = await(channel.publish("", queue + ".nowhere", true, null, new byte[1]));
            assertTrue(unroutable.isReturned());
            CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
            assertEquals(11, value(registry, "rabbitmq.published"));
            assertEquals(11, value(registry, "rabbitmq.acknowledged_published"));
            assertEquals(1, value(registry, "rabbitmq.unrouted_published"));
            assertEquals(0, value(registry, "rabbitmq.outstanding_confirms"));
            assertEquals(0, value(registry, "rabbitmq.not_acknowledged_published"));

            CountDownLatch handled = new CountDownLatch(10);
            ConsumerHandle consumer = await(channel.consume(queue, new ConsumeOptions().prefetch(20), d -> {
                String body = d.body().toString(StandardCharsets.UTF_8);
                if (Integer.parseInt(body.substring(1)) % 2 == 0) {
                    d.ack();
                } else {
                    d.reject(false);
                }
                handled.countDown();
            }));
            assertTrue(handled.await(30, TimeUnit.SECONDS));
            eventually(
                    "10 consumed, 5 acks, 5 rejects",
                    () -> metrics.consumed() == 10 && metrics.acknowledged() == 5 && metrics.rejected() == 5);
            assertEquals(10, value(registry, "rabbitmq.consumed"));
            assertEquals(5, value(registry, "rabbitmq.acknowledged"));
            assertEquals(5, value(registry, "rabbitmq.rejected"));

            // a server-named queue: its series is the one all server-named queues share, never one per name
            var queued = registry.find("rabbitmq.consumer.queued")
                    .tag("queue", WarrenMeterBinder.SERVER_NAMED)
                    .tag("app", "metrics-it")
                    .gauge();
            assertNotNull(queued, "a gauge for the consumer's queue");
            assertEquals(
                    List.of(),
                    registry.getMeters().stream()
                            .filter(m -> m.getId().getTag("consumer_tag") != null)
                            .map(m -> m.getId().toString())
                            .toList(),
                    "no series per consumer tag");
            eventually("the consumer's queue drained", () -> queued.value() == 0);
            await(consumer.cancel());
            eventually(
                    "the consumer's gauge removed",
                    () -> registry.find("rabbitmq.consumer.queued").gauge() == null);

            // the timers: one confirm latency per confirmed publish, one duration per handler call
            Timer confirms = registry.get("rabbitmq.confirm_latency")
                    .tag("app", "metrics-it")
                    .timer();
            assertEquals(11, confirms.count());
            assertTrue(confirms.totalTime(TimeUnit.NANOSECONDS) > 0);
            Timer handlers = registry.get("rabbitmq.handler_duration")
                    .tag("app", "metrics-it")
                    .timer();
            assertEquals(10, handlers.count());
            assertTrue(handlers.max(TimeUnit.NANOSECONDS) > 0);

            assertTrue(value(registry, "rabbitmq.bytes_read") > 0);
            assertTrue(value(registry, "rabbitmq.bytes_written") > 0);

            await(connection.close());
            // the socket's close completes close() just before the pipeline is told the channel is inactive
            eventually("no connection, no channel", () -> metrics.connections() == 0 && metrics.channels() == 0);
            assertEquals(0, value(registry, "rabbitmq.connections"));
        } finally {
            await(client.close());
        }
    }

    /**
     * Consumers come and go (consumer tags are random, RPC clients each have a reply consumer): the series stay
     * one per queue, the gauge sums the queue's consumers, and goes with the last of them.
     */
    @Test
    void consumerGaugesAreOnePerQueueNotOnePerConsumer(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        AmqpClient client =
                AmqpClient.create(new ClientOptions().metricsEnabled(true).ioThreads(1));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new WarrenMeterBinder(client).bindTo(registry);
        String queue = names.queue("orders");
        try {
            Connection connection = await(client.connect(broker.uri()));
            Channel channel = await(connection.openChannel());
            await(channel.queueDeclare(QueueSpec.named(queue).autoDelete(true)));
            List<ConsumerHandle> consumers = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                consumers.add(await(channel.consume(queue, new ConsumeOptions().prefetch(10), d -> d.ack())));
            }
            for (int i = 0; i < 3; i++) {
                await(RpcClient.create(await(connection.openChannel())));
            }
            eventually(
                    "the consumers reported", () -> client.metrics().consumers().size() == 8);
            assertEquals(
                    List.of("amq.rabbitmq.reply-to", queue),
                    registry.find("rabbitmq.consumer.queued").gauges().stream()
                            .map(g -> g.getId().getTag("queue"))
                            .sorted()
                            .toList());
            for (int i = 0; i < 4; i++) {
                await(consumers.get(i).cancel());
            }
            assertNotNull(
                    registry.find("rabbitmq.consumer.queued")
                            .tag("queue", queue)
                            .gauge(),
                    "one consumer of the queue is left: its series stays");
            await(consumers.get(4).cancel());
            eventually(
                    "the queue's series removed with its last consumer",
                    () -> registry.find("rabbitmq.consumer.queued")
                                    .tag("queue", queue)
                                    .gauge()
                            == null);
            await(connection.close());
        } finally {
            await(client.close());
        }
    }

    @Test
    void aRecoveryIsCounted(Broker broker) throws Exception {
        AmqpClient client =
                AmqpClient.create(new ClientOptions().metricsEnabled(true).ioThreads(1));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new WarrenMeterBinder(client).bindTo(registry);
        String name = "warren-it MetricsIT recovery " + System.nanoTime();
        try {
            Connection connection = await(client.connect(
                    io.warren.ConnectionOptions.fromUri(broker.uri()).connectionName(name)));
            await(connection.openChannel());
            Rabbitmqctl.closeConnection(name, "closed by MetricsIT");
            eventually("one recovery", () -> client.metrics().recoveries() == 1);
            eventually(
                    "one connection and one channel again",
                    () -> client.metrics().connections() == 1
                            && client.metrics().channels() == 1);
            assertEquals(1, value(registry, "rabbitmq.recoveries"));
            await(connection.close());
        } finally {
            await(client.close());
        }
    }

    @Test
    void aClientWithoutMetricsCountsNothingAndRefusesTheBinder(Connection connection) throws Exception {
        ClientMetrics metrics = BrokerExtension.client().metrics();
        assertFalse(metrics.enabled());
        Channel channel = await(connection.openChannel());
        await(channel.publish("", "nowhere", false, null, new byte[1]));
        assertEquals(0, metrics.published());
        assertEquals(0, metrics.connections());
        assertThrows(IllegalArgumentException.class, () -> new WarrenMeterBinder(BrokerExtension.client()));
    }
}
