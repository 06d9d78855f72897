package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.warren.Channel;
import io.warren.ConsumeOptions;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.otel.WarrenTracing;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WarrenTracing} over a scripted broker ({@link FakeBroker}), its spans read from an in-memory exporter: a
 * span it starts ends whatever happens, and its publish keeps {@link Channel#publish}'s contract.
 */
class TracingTest {

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final SdkTracerProvider tracerProvider = SdkTracerProvider.builder()
            .addSpanProcessor(SimpleSpanProcessor.create(spans))
            .build();

    @AfterEach
    void closeProvider() {
        tracerProvider.close();
    }

    private WarrenTracing tracing(TextMapPropagator propagator) {
        return WarrenTracing.create(OpenTelemetrySdk.builder()
                .setTracerProvider(tracerProvider)
                .setPropagators(ContextPropagators.create(propagator))
                .build());
    }

    /** A propagator whose inject throws, as a faulty one would. */
    private static final TextMapPropagator FAILING_INJECT = new TextMapPropagator() {
        @Override
        public Collection<String> fields() {
            return List.of();
        }

        @Override
        public <C> void inject(Context context, C carrier, TextMapSetter<C> setter) {
            throw new IllegalStateException("propagator failed");
        }

        @Override
        public <C> Context extract(Context context, C carrier, TextMapGetter<C> getter) {
            return context;
        }
    };

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> void sneakyThrow(Throwable t) throws E {
        throw (E) t;
    }

    @Test
    void anAsyncHandlerThatThrowsACheckedExceptionEndsItsSpanWithAnError() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            IOException thrown = new IOException("handler failed");
            CompletionStage<?> consumer = ch.consumeAsync(
                    "q",
                    new ConsumeOptions().noAck(true),
                    tracing(TextMapPropagator.noop()).tracedAsync(d -> {
                        sneakyThrow(thrown);
                        return null;
                    }));
            broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
            broker.send(1, new BasicConsumeOkEncoder().consumerTag("c"));
            consumer.toCompletableFuture().join();
            broker.sendDeliver(1, "c", 1, false, BasicProperties.EMPTY, "hello".getBytes(StandardCharsets.UTF_8));
            broker.client.runPendingTasks();
            List<SpanData> ended = spans.getFinishedSpanItems();
            assertEquals(1, ended.size(), "the process span ended");
            assertEquals("x process", ended.get(0).getName());
            assertEquals(StatusCode.ERROR, ended.get(0).getStatus().getStatusCode());
        }
    }

    @Test
    void aPublishWhoseContextCannotBeInjectedEndsItsSpanWithAnErrorAndReleasesTheBody() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ByteBuf body = Unpooled.copiedBuffer("hello", StandardCharsets.UTF_8);
            CompletionStage<PublishOutcome> stage = tracing(FAILING_INJECT).publish(ch, "x", "rk", false, null, body);
            assertInstanceOf(IllegalStateException.class, ChannelTest.failure(stage));
            assertEquals(0, body.refCnt(), "the body passed to the publish is released");
            List<SpanData> ended = spans.getFinishedSpanItems();
            assertEquals(1, ended.size(), "the publish span ended");
            assertEquals("x publish", ended.get(0).getName());
            assertEquals(StatusCode.ERROR, ended.get(0).getStatus().getStatusCode());
            broker.expectNothing();
        }
    }

    @Test
    void aNullBodyFailsThePublishsStageAsChannelPublishDoes() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            WarrenTracing tracing = tracing(TextMapPropagator.noop());
            Throwable direct = ChannelTest.failure(ch.publish("x", "rk", false, null, (byte[]) null));
            assertInstanceOf(IllegalArgumentException.class, direct);
            assertSame(
                    direct.getClass(),
                    ChannelTest.failure(tracing.publish(ch, "x", "rk", false, null, (byte[]) null))
                            .getClass());
            assertInstanceOf(
                    IllegalArgumentException.class,
                    ChannelTest.failure(tracing.publish(ch, "x", "rk", false, null, (ByteBuf) null)));
            assertEquals(List.of(), spans.getFinishedSpanItems(), "refused before any span");
            broker.expectNothing();
        }
    }
}
