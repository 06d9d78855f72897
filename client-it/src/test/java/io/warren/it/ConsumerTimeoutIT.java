package io.warren.it;

import static io.warren.it.Await.awaitTrue;
import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ChannelLostException;
import io.warren.ClientMetrics;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionLostException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import io.warren.RecoveryListener;
import io.warren.StaleDeliveryException;
import io.warren.it.BrokerExtension.TestNames;
import io.warren.micrometer.WarrenMeterBinder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * RabbitMQ's delivery acknowledgement timeout against the broker: a delivery held unacknowledged past
 * {@code consumer_timeout} makes the broker close the channel with 406 PRECONDITION_FAILED; Warren re-opens the same
 * channel with the same consumer on the same connection, and the oldest-unacknowledged-age gauge showed it coming.
 *
 * <p>RabbitMQ 3.10 has no per-queue or per-consumer timeout ({@code x-consumer-timeout} came later): only the
 * global {@code consumer_timeout}, which a channel reads once, when it opens, and checks on its tick
 * ({@code channel_tick_interval}, 60 s by default, read each time the tick is armed). So the test shortens the tick
 * and the timeout, opens its channel, and puts the timeout back at once: only channels opened in that instant get
 * the short timeout (the recovered channel does not), and a short tick costs other channels nothing. Both are put
 * back in {@code finally}.
 */
@ExtendWith(BrokerExtension.class)
class ConsumerTimeoutIT {

    private static final long TIMEOUT_MILLIS = 2_000;
    private static final long TICK_MILLIS = 200;

    /** The broker's current setting, as an Erlang term to put back ({@code undefined} when unset). */
    private static String getEnv(String key) throws Exception {
        String out = Rabbitmqctl.eval("application:get_env(rabbit, " + key + ").");
        return out.startsWith("{ok,") ? out.substring(4, out.length() - 1) : "undefined";
    }

    private static void setEnv(String key, String value) throws Exception {
        Rabbitmqctl.eval(
                "undefined".equals(value)
                        ? "application:unset_env(rabbit, " + key + ")."
                        : "application:set_env(rabbit, " + key + ", " + value + ").");
    }

    @Test
    void anAckTimeoutRecoversTheChannelOnTheSameConnectionAndTheGaugeShowedItComing(Broker broker, TestNames names)
            throws Exception {
        String timeout0 = getEnv("consumer_timeout");
        String tick0 = getEnv("channel_tick_interval");
        AmqpClient client =
                AmqpClient.create(new ClientOptions().metricsEnabled(true).ioThreads(1));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new WarrenMeterBinder(client).bindTo(registry);
        ClientMetrics metrics = client.metrics();
        try {
            Connection connection = await(client.connect(broker.uri()));
            CompletableFuture<ChannelLostException> started = new CompletableFuture<>();
            CompletableFuture<Channel> succeeded = new CompletableFuture<>();
            List<String> connectionLosses = Collections.synchronizedList(new ArrayList<>());
            connection.addRecoveryListener(new RecoveryListener() {
                @Override
                public void recoveryStarted(Connection c, ConnectionLostException cause) {
                    connectionLosses.add(cause.getMessage());
                }

                @Override
                public void channelRecoveryStarted(Channel channel, ChannelLostException cause) {
                    started.complete(cause);
                }

                @Override
                public void channelRecoverySucceeded(Channel channel) {
                    succeeded.complete(channel);
                }
            });
            Channel ch;
            setEnv("channel_tick_interval", Long.toString(TICK_MILLIS));
            setEnv("consumer_timeout", Long.toString(TIMEOUT_MILLIS));
            try {
                ch = await(connection.openChannel()); // reads the short timeout now
            } finally {
                setEnv("consumer_timeout", timeout0);
            }
            String q = names.queue("q");
            await(ch.queueDeclare(q));
            await(ch.confirmSelect());
            for (int i = 0; i < 3; i++) {
                await(ch.publish("", q, false, null, Integer.toString(i).getBytes(StandardCharsets.UTF_8)));
            }

            List<String> handled = Collections.synchronizedList(new ArrayList<>());
            List<Delivery> held = Collections.synchronizedList(new ArrayList<>());
            // demand for one: message 0 is held unacknowledged, 1 and 2 wait in the consumer's queue
            ConsumerHandle consumer = await(ch.consume(q, new ConsumeOptions().initialDemand(1), d -> {
                String body = d.body().toString(StandardCharsets.UTF_8);
                handled.add(body + (d.redelivered() ? " redelivered" : ""));
                if (d.redelivered()) {
                    d.ack();
                } else {
                    held.add(d.retain());
                }
            }));
            awaitTrue(() -> held.size() == 1, Duration.ofSeconds(30), "message 0 held");
            awaitTrue(() -> metrics.oldestUnacknowledgedMillis() > 0, Duration.ofSeconds(30), "the age to grow");
            assertTrue(registry.get("rabbitmq.oldest_unacknowledged_age")
                            .timeGauge()
                            .value(TimeUnit.MILLISECONDS)
                    > 0);

            ChannelLostException cause = started.get(30, TimeUnit.SECONDS);
            assertEquals(406, cause.replyCode());
            assertTrue(
                    cause.replyText()
                            .contains("delivery acknowledgement on channel " + ch.channelNumber() + " timed out"),
                    cause.replyText());
            assertEquals(ch, succeeded.get(30, TimeUnit.SECONDS), "the same channel object");
            assertTrue(ch.isOpen());
            assertTrue(consumer.isActive(), "the same consumer goes on");

            Delivery stale = held.get(0);
            try {
                assertThrows(StaleDeliveryException.class, stale::ack);
            } finally {
                stale.release();
            }
            consumer.resume();
            awaitTrue(() -> handled.size() == 4, Duration.ofSeconds(30), "the broker's redeliveries");
            // nothing left that could still reach the handler: the client's queue is empty, and the broker has
            // nothing ready or unacknowledged (the acks on the recovered channel counted)
            awaitTrue(() -> consumer.queued() == 0, Duration.ofSeconds(30), "the consumer's queue to empty");
            Await.queueCounts(q, 0, 0, Duration.ofSeconds(10));
            List<String> sorted = new ArrayList<>(handled);
            Collections.sort(sorted);
            assertEquals(
                    List.of("0", "0 redelivered", "1 redelivered", "2 redelivered"),
                    sorted,
                    "1 and 2 from the closed channel were dropped, not handed over twice");
            assertEquals(2, metrics.staleDeliveriesDropped());
            assertEquals(
                    2.0,
                    registry.get("rabbitmq.stale_deliveries_dropped")
                            .functionCounter()
                            .count());
            assertEquals(0, metrics.oldestUnacknowledgedMillis());
            assertEquals(List.of(), connectionLosses, "the connection was never lost");
            assertEquals(0, metrics.recoveries());
            await(ch.queueDelete(q));
            await(connection.close());
        } finally {
            setEnv("consumer_timeout", timeout0);
            setEnv("channel_tick_interval", tick0);
            await(client.close());
        }
    }

    /**
     * Two consumers on the timed-out channel: x on an auto-delete queue (it holds a delivery past the timeout) and y on
     * a plain one. The broker's close of the channel cancels x, its queue's only consumer, so the broker deletes that
     * queue and its message, the auto-delete exchange whose last binding that was, and the binding into that exchange.
     * The channel-only restore declares them again, in that order from upstream, before x consumes:
     * x and y both go on. Before 8594c5b the refused basic.consume ended the channel and both consumers; after it and
     * before the queue was declared again, x ended with 404.
     */
    @ParameterizedTest(name = "server-named: {0}")
    @ValueSource(booleans = {false, true})
    void anAutoDeleteQueueThatWentWithTheTimedOutChannelIsDeclaredAgainAndItsConsumerGoesOn(
            boolean serverNamed, Broker broker, TestNames names) throws Exception {
        String timeout0 = getEnv("consumer_timeout");
        String tick0 = getEnv("channel_tick_interval");
        AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(1));
        try {
            Connection connection = await(client.connect(broker.uri()));
            List<String> events = Collections.synchronizedList(new ArrayList<>());
            CompletableFuture<Void> settled = new CompletableFuture<>();
            connection.addRecoveryListener(new RecoveryListener() {
                @Override
                public void channelRecoveryStarted(Channel channel, ChannelLostException cause) {
                    events.add("started " + cause.replyCode());
                }

                @Override
                public void channelRecoverySucceeded(Channel channel) {
                    events.add("succeeded");
                    settled.complete(null);
                }

                @Override
                public void channelRecoveryFailed(Channel channel, Throwable cause) {
                    events.add("failed " + cause);
                    settled.complete(null);
                }

                @Override
                public void topologyRecoveryFailed(Connection c, String entity, Throwable cause) {
                    events.add("topology failed: " + entity + ": " + cause);
                }
            });
            Channel ch;
            setEnv("channel_tick_interval", Long.toString(TICK_MILLIS));
            setEnv("consumer_timeout", Long.toString(TIMEOUT_MILLIS));
            try {
                ch = await(connection.openChannel());
            } finally {
                setEnv("consumer_timeout", timeout0);
            }
            String upstream = names.queue("upstream");
            String exchange = names.queue("fanout");
            String kept = names.queue("kept");
            // a server-named one is exclusive too, as the official clients' queueDeclare() makes it
            String gone = await(ch.queueDeclare(
                            serverNamed
                                    ? QueueSpec.serverNamed()
                                    : QueueSpec.named(names.queue("auto-delete"))
                                            .autoDelete(true)))
                    .queue();
            // upstream -> exchange (auto-delete) -> the queue: the broker deletes the exchange with the queue's
            // binding, its last, and the binding into it with it
            await(ch.exchangeDeclare(ExchangeSpec.of(upstream, "fanout")));
            await(ch.exchangeDeclare(ExchangeSpec.of(exchange, "fanout").autoDelete(true)));
            await(ch.exchangeBind(exchange, upstream, ""));
            await(ch.queueBind(gone, exchange, ""));
            await(ch.queueDeclare(kept));
            await(ch.confirmSelect());
            await(ch.publish("", gone, false, null, "held".getBytes(StandardCharsets.UTF_8)));

            List<Delivery> held = Collections.synchronizedList(new ArrayList<>());
            ConsumerHandle x = await(ch.consume(gone, new ConsumeOptions(), d -> held.add(d.retain())));
            List<String> received = Collections.synchronizedList(new ArrayList<>());
            ConsumerHandle y = await(ch.consume(kept, new ConsumeOptions(), d -> {
                received.add(d.body().toString(StandardCharsets.UTF_8));
                d.ack();
            }));
            settled.get(30, TimeUnit.SECONDS);
            held.remove(0).release(); // stale: its queue is gone
            assertEquals(List.of("started 406", "succeeded"), events);
            assertTrue(ch.isOpen(), "the channel is open again");
            assertTrue(x.isActive(), "x goes on: its queue was declared again");
            assertTrue(y.isActive(), "y goes on");
            await(ch.publish(upstream, "", false, null, "bound".getBytes(StandardCharsets.UTF_8)));
            await(ch.publish("", kept, false, null, "after".getBytes(StandardCharsets.UTF_8)));
            awaitTrue(() -> received.equals(List.of("after")), Duration.ofSeconds(30), "y to receive");
            awaitTrue(() -> held.size() == 1, Duration.ofSeconds(30), "x to receive through its binding");
            assertEquals("bound", held.get(0).body().toString(StandardCharsets.UTF_8));
            held.forEach(Delivery::release);
            await(ch.queueDelete(kept));
            if (serverNamed) {
                assertTrue(!x.queue().equals(gone), "declared again under a new name: " + x.queue());
            }
            await(ch.queueDelete(x.queue())); // and the auto-delete exchange with its last binding
            await(ch.exchangeDelete(upstream));
            await(connection.close());
        } finally {
            setEnv("consumer_timeout", timeout0);
            setEnv("channel_tick_interval", tick0);
            await(client.close());
        }
    }
}
