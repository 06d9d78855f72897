package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConsumerHandle;
import io.warren.ExchangeSpec;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.codec.content.BasicProperties;
import io.warren.otel.WarrenTracing;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Trace context from a publish, across the broker, into the consumer's handler: OpenTelemetry SDK, in memory. */
@ExtendWith(BrokerExtension.class)
class TracingIT {

    private InMemorySpanExporter exporter;
    private SdkTracerProvider tracerProvider;
    private OpenTelemetrySdk otel;
    private WarrenTracing tracing;

    @BeforeEach
    void sdk() {
        exporter = InMemorySpanExporter.create();
        tracerProvider = SdkTracerProvider.builder()
                .addSpanProcessor(SimpleSpanProcessor.create(exporter))
                .build();
        otel = OpenTelemetrySdk.builder()
                .setTracerProvider(tracerProvider)
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                .build();
        tracing = WarrenTracing.create(otel);
    }

    @AfterEach
    void shutdown() {
        tracerProvider.close();
    }

    private SpanData span(String name) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            for (SpanData s : exporter.getFinishedSpanItems()) {
                if (s.getName().equals(name)) {
                    return s;
                }
            }
            Thread.sleep(10);
        }
        throw new AssertionError("no span named '" + name + "' in " + exporter.getFinishedSpanItems());
    }

    @Test
    void theHandlerRunsInTheProducersTrace(Connection connection, BrokerExtension.TestNames names) throws Exception {
        String exchange = names.exchange("traced");
        Channel channel = await(connection.openChannel());
        await(channel.exchangeDeclare(ExchangeSpec.of(exchange, "topic").autoDelete(true)));
        String queue = await(channel.queueDeclare(QueueSpec.serverNamed())).queue();
        await(channel.queueBind(queue, exchange, "orders.#"));
        await(channel.confirmSelect());

        BlockingQueue<String> seen = new ArrayBlockingQueue<>(1);
        AtomicReference<Map<String, Object>> headers = new AtomicReference<>();
        ConsumerHandle consumer = await(channel.consume(queue, tracing.traced(delivery -> {
            headers.set(delivery.properties().headers());
            Span current = Span.current();
            seen.add(current.getSpanContext().getTraceId() + "/"
                    + delivery.body().toString(StandardCharsets.UTF_8));
            delivery.ack();
        })));

        Span parent = otel.getTracer("test").spanBuilder("checkout").startSpan();
        PublishOutcome outcome;
        try (Scope ignored = parent.makeCurrent()) {
            outcome = await(tracing.publish(
                    channel,
                    exchange,
                    "orders.eu",
                    false,
                    BasicProperties.builder()
                            .messageId("m-1")
                            .correlationId("c-1")
                            .headers(Map.of("tenant", "acme"))
                            .build(),
                    "hello".getBytes(StandardCharsets.UTF_8)));
        } finally {
            parent.end();
        }
        assertTrue(outcome.isConfirmed());
        String traceId = parent.getSpanContext().getTraceId();
        assertEquals(traceId + "/hello", seen.poll(30, TimeUnit.SECONDS), "the handler's current span is in the trace");

        SpanData publish = span(exchange + " publish");
        SpanData process = span(exchange + " process");
        assertEquals(SpanKind.PRODUCER, publish.getKind());
        assertEquals(traceId, publish.getTraceId());
        assertEquals(parent.getSpanContext().getSpanId(), publish.getParentSpanId());
        assertEquals(SpanKind.CONSUMER, process.getKind());
        assertEquals(traceId, process.getTraceId());
        assertEquals(publish.getSpanId(), process.getParentSpanId(), "process is the publish's child");

        for (SpanData s : List.of(publish, process)) {
            assertEquals("rabbitmq", s.getAttributes().get(AttributeKey.stringKey("messaging.system")));
            assertEquals(exchange, s.getAttributes().get(AttributeKey.stringKey("messaging.destination.name")));
            assertEquals(
                    "orders.eu",
                    s.getAttributes().get(AttributeKey.stringKey("messaging.rabbitmq.destination.routing_key")));
            assertEquals("m-1", s.getAttributes().get(AttributeKey.stringKey("messaging.message.id")));
            assertEquals("c-1", s.getAttributes().get(AttributeKey.stringKey("messaging.message.conversation_id")));
            assertEquals(5L, s.getAttributes().get(AttributeKey.longKey("messaging.message.body.size")));
        }
        assertEquals("publish", publish.getAttributes().get(AttributeKey.stringKey("messaging.operation")));
        assertEquals("process", process.getAttributes().get(AttributeKey.stringKey("messaging.operation")));

        Map<String, Object> received = headers.get();
        assertNotNull(received.get("traceparent"), "W3C traceparent in the headers: " + received);
        assertTrue(received.get("traceparent").toString().contains(traceId));
        assertEquals("acme", received.get("tenant"), "the application's headers are kept");
        await(consumer.cancel());
    }

    @Test
    void aMessageWithoutContextStartsANewTraceAndAFailingHandlerIsRecorded(Connection connection) throws Exception {
        Channel channel = await(connection.openChannel());
        String queue = await(channel.queueDeclare(QueueSpec.serverNamed())).queue();
        BlockingQueue<String> traceIds = new ArrayBlockingQueue<>(1);
        ConsumerHandle consumer = await(channel.consume(queue, tracing.traced(delivery -> {
            traceIds.add(Span.current().getSpanContext().getTraceId());
            delivery.ack();
            throw new IllegalStateException("handler failed");
        })));
        await(channel.publish("", queue, false, null, "untraced".getBytes(StandardCharsets.UTF_8)));
        String traceId = traceIds.poll(30, TimeUnit.SECONDS);
        assertNotNull(traceId);
        SpanData process = span("amq.default process");
        assertEquals(traceId, process.getTraceId());
        assertTrue(!process.getParentSpanContext().isValid(), "a root span");
        assertEquals(StatusCode.ERROR, process.getStatus().getStatusCode());
        assertEquals(1, process.getEvents().size(), "the exception is recorded");
        assertTrue(Context.current() == Context.root()
                || !Span.current().getSpanContext().isValid());
        await(consumer.cancel());
    }
}
