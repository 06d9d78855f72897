package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.QueueSpec;
import io.warren.it.Await;
import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs the README's metrics, tracing and credentials examples against the broker. */
@ExtendWith(BrokerExtension.class)
class ObservabilityExampleIT {

    @Test
    void metricsCountAPublish(Broker broker) throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AmqpClient client = ObservabilityExample.meteredClient(registry);
        try {
            Connection c = client.connect(broker.uri()).toCompletableFuture().get(30, TimeUnit.SECONDS);
            Channel ch = c.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            ch.publish("", "nowhere", false, null, new byte[1])
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            assertEquals(
                    1,
                    registry.get("rabbitmq.published")
                            .tag("service", "orders")
                            .functionCounter()
                            .count());
        } finally {
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void tracingSpansTheBroker(Connection connection) throws Exception {
        InMemorySpanExporter exporter = InMemorySpanExporter.create();
        try (SdkTracerProvider provider = SdkTracerProvider.builder()
                .addSpanProcessor(SimpleSpanProcessor.create(exporter))
                .build()) {
            OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
                    .setTracerProvider(provider)
                    .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                    .build();
            Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            String queue = ch.queueDeclare(QueueSpec.serverNamed())
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS)
                    .queue();
            BlockingQueue<String> orders = new ArrayBlockingQueue<>(1);
            ObservabilityExample.traced(otel, ch, queue, orders::add)
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            assertEquals("order 1", orders.poll(30, TimeUnit.SECONDS));
            Await.awaitTrue(
                    () -> exporter.getFinishedSpanItems().size() >= 2,
                    Duration.ofSeconds(30),
                    "the publish and the consume span");
            assertEquals(2, exporter.getFinishedSpanItems().size());
            assertEquals(
                    exporter.getFinishedSpanItems().get(0).getTraceId(),
                    exporter.getFinishedSpanItems().get(1).getTraceId(),
                    "one trace across the broker");
        }
    }

    @Test
    void tokenCredentialsConnect(Broker broker) throws Exception {
        // the test broker's users take their password as the "token"
        ObservabilityExample.TokenEndpoint endpoint = () -> CompletableFuture.completedFuture(
                new ObservabilityExample.Token(broker.password(), Instant.now().plusSeconds(3600)));
        Connection c = BrokerExtension.client()
                .connect(ObservabilityExample.tokenCredentials(broker.uri(), broker.username(), endpoint))
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        assertTrue(c.isOpen());
        c.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
}
