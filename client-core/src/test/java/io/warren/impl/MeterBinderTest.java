package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientMetrics;
import io.warren.ClientOptions;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.codec.Frame;
import io.warren.codec.method.BasicCancelEncoder;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.impl.metrics.MetricsCollector;
import io.warren.micrometer.WarrenMeterBinder;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WarrenMeterBinder} with several clients bound to one registry: Micrometer gives every binding the meter
 * registered first under a name and tags, so the binder reports all of them together. Counts are driven through
 * each client's collector; consumers run against a scripted broker ({@link FakeBroker}) counting into it.
 */
class MeterBinderTest {

    private static final Tags TAGS = Tags.of("service", "orders");

    private final MeterRegistry registry = new SimpleMeterRegistry();
    private final List<AmqpClient> clients = new ArrayList<>();

    @AfterEach
    void closeClients() {
        for (AmqpClient c : clients) {
            c.close().toCompletableFuture().join();
        }
    }

    private AmqpClient client() {
        AmqpClient c =
                AmqpClient.create(new ClientOptions().metricsEnabled(true).ioThreads(1));
        clients.add(c);
        return c;
    }

    private static MetricsCollector collector(AmqpClient client) {
        return (MetricsCollector) client.metrics();
    }

    private double published() {
        return registry.get("rabbitmq.published").functionCounter().count();
    }

    @Test
    void clientsBoundUnderTheSameTagsAreCountedTogether() {
        AmqpClient publisher = client();
        AmqpClient consumer = client();
        new WarrenMeterBinder(publisher, TAGS).bindTo(registry);
        new WarrenMeterBinder(consumer, TAGS).bindTo(registry);
        collector(publisher).messagePublished();
        collector(publisher).messagePublished();
        collector(consumer).messagePublished();
        collector(consumer).messageConsumed();
        collector(publisher).connectionOpened();
        collector(consumer).connectionOpened();
        assertEquals(3, published());
        assertEquals(1, registry.get("rabbitmq.consumed").functionCounter().count());
        assertEquals(2, registry.get("rabbitmq.connections").gauge().value());
        collector(consumer).connectionClosed();
        assertEquals(1, registry.get("rabbitmq.connections").gauge().value());
    }

    @Test
    void bindingAClientTwiceRecordsEachSampleOnce() {
        AmqpClient client = client();
        WarrenMeterBinder binder = new WarrenMeterBinder(client, TAGS);
        binder.bindTo(registry);
        binder.bindTo(registry);
        new WarrenMeterBinder(client, TAGS).bindTo(registry);
        collector(client).confirmLatency(TimeUnit.MILLISECONDS.toNanos(3));
        collector(client).handlerTime(TimeUnit.MILLISECONDS.toNanos(5));
        collector(client).messagePublished();
        assertEquals(1, registry.get("rabbitmq.confirm_latency").timer().count());
        assertEquals(1, registry.get("rabbitmq.handler_duration").timer().count());
        assertEquals(1, published());
    }

    @Test
    void aClosedClientsCountsStayInTheSumOnceItIsCollected() {
        AmqpClient live = client();
        new WarrenMeterBinder(live, TAGS).bindTo(registry);
        collector(live).messagePublished();
        WeakReference<ClientMetrics> closedMetrics = closedClientThatPublishedTwice();
        // read once the closed client could be collected: its counts are kept, its metrics are let go
        for (int i = 0; i < 20 && closedMetrics.get() != null; i++) {
            System.gc();
            assertEquals(3, published());
        }
        assertNull(closedMetrics.get(), "the binder let the closed client's metrics go");
        collector(live).messagePublished();
        assertEquals(4, published());
    }

    /** A client bound, counted, closed and dropped (in a frame of its own, so that no local keeps it). */
    private WeakReference<ClientMetrics> closedClientThatPublishedTwice() {
        AmqpClient closed =
                AmqpClient.create(new ClientOptions().metricsEnabled(true).ioThreads(1));
        new WarrenMeterBinder(closed, TAGS).bindTo(registry);
        collector(closed).messagePublished();
        collector(closed).messagePublished();
        assertEquals(3, published());
        closed.close().toCompletableFuture().join();
        return new WeakReference<>(closed.metrics());
    }

    @Test
    void aQueuesGaugeStaysWhileAnotherClientStillConsumesFromIt() {
        AmqpClient first = client();
        AmqpClient second = client();
        new WarrenMeterBinder(first, TAGS).bindTo(registry);
        new WarrenMeterBinder(second, TAGS).bindTo(registry);
        try (FakeBroker a = new FakeBroker(new ConnectionOptions(), null, collector(first));
                FakeBroker b = new FakeBroker(new ConnectionOptions(), null, collector(second))) {
            consume(a);
            consume(b);
            assertNotNull(queued(), "one series for the queue");
            brokerCancels(a);
            assertNotNull(queued(), "the second client still consumes from the queue");
            assertEquals(0, queued().value());
            brokerCancels(b);
            assertNull(queued(), "the queue's last consumer ended");
        }
    }

    private Gauge queued() {
        return registry.find("rabbitmq.consumer.queued").tag("queue", "q").gauge();
    }

    private static void consume(FakeBroker broker) {
        Channel ch = broker.openChannel(broker.handshake(), 1);
        CompletionStage<ConsumerHandle> stage = ch.consume("q", new ConsumeOptions().noAck(true), d -> {});
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
        stage.toCompletableFuture().join();
    }

    private static void brokerCancels(FakeBroker broker) {
        broker.send(1, new BasicCancelEncoder().consumerTag("c").nowait(false));
        Frame ok = broker.expect(1, MethodIds.BASIC_CANCEL_OK);
        ok.release();
    }
}
