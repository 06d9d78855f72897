package io.warren.otel;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import io.warren.AsyncDeliveryHandler;
import io.warren.Channel;
import io.warren.Delivery;
import io.warren.DeliveryHandler;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.table.FieldTable;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * OpenTelemetry tracing for Warren, following the messaging semantic conventions for RabbitMQ: a publish starts a
 * {@code PRODUCER} span and carries its context to the consumer in the message headers (W3C
 * {@code traceparent}/{@code tracestate}, or whatever propagators the {@link OpenTelemetry} instance has), and a
 * consumer's handler runs inside a {@code CONSUMER} span whose parent is the context extracted from the message,
 * so the trace goes on across the broker.
 *
 * <pre>{@code
 * WarrenTracing tracing = WarrenTracing.create(openTelemetry);
 * tracing.publish(channel, "orders", "eu.new", false, props, body);        // span "orders publish"
 * channel.consume("orders.eu", tracing.traced(delivery -> handle(delivery))); // span "orders process", child of it
 * }</pre>
 *
 * <table>
 *   <caption>Span attributes</caption>
 *   <tr><td>{@code messaging.system}</td><td>{@code rabbitmq}</td></tr>
 *   <tr><td>{@code messaging.destination.name}</td><td>the exchange ({@code amq.default} for {@code ""})</td></tr>
 *   <tr><td>{@code messaging.rabbitmq.destination.routing_key}</td><td>the routing key</td></tr>
 *   <tr><td>{@code messaging.operation}, {@code messaging.operation.name}</td><td>{@code publish} / {@code process}</td></tr>
 *   <tr><td>{@code messaging.operation.type}</td><td>{@code send} / {@code process}</td></tr>
 *   <tr><td>{@code messaging.message.id}, {@code messaging.message.conversation_id}</td><td>message-id, correlation-id when set</td></tr>
 *   <tr><td>{@code messaging.message.body.size}</td><td>the body's size in bytes</td></tr>
 *   <tr><td>{@code messaging.rabbitmq.message.delivery_tag}</td><td>the delivery tag (process)</td></tr>
 * </table>
 *
 * Off unless used: nothing in Warren calls this class by itself, so an application without OpenTelemetry (an
 * optional dependency) pays nothing. Publishing through {@link #publish} rebuilds the properties once to add the
 * headers (a copy of the header map per message, the price of propagation). Thread-safe.
 */
public final class WarrenTracing {

    /** The instrumentation scope name of the spans. */
    public static final String INSTRUMENTATION_NAME = "io.warren";

    static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> ROUTING_KEY =
            AttributeKey.stringKey("messaging.rabbitmq.destination.routing_key");
    static final AttributeKey<String> OPERATION = AttributeKey.stringKey("messaging.operation");
    static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("messaging.operation.name");
    static final AttributeKey<String> OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    static final AttributeKey<String> CONVERSATION_ID = AttributeKey.stringKey("messaging.message.conversation_id");
    static final AttributeKey<Long> BODY_SIZE = AttributeKey.longKey("messaging.message.body.size");
    static final AttributeKey<Long> DELIVERY_TAG = AttributeKey.longKey("messaging.rabbitmq.message.delivery_tag");

    /** The default exchange's name in spans, as the semantic conventions ask. */
    static final String DEFAULT_EXCHANGE = "amq.default";

    private final Tracer tracer;
    private final TextMapPropagator propagator;

    private WarrenTracing(OpenTelemetry openTelemetry) {
        this.tracer = openTelemetry.getTracer(INSTRUMENTATION_NAME);
        this.propagator = openTelemetry.getPropagators().getTextMapPropagator();
    }

    /** Tracing with {@code openTelemetry}'s tracer provider and propagators. */
    public static WarrenTracing create(OpenTelemetry openTelemetry) {
        return new WarrenTracing(Objects.requireNonNull(openTelemetry, "openTelemetry"));
    }

    // ---- publish -----------------------------------------------------------------------------------------

    /**
     * {@link Channel#publish(CharSequence, CharSequence, boolean, BasicProperties, ByteBuf)} inside a
     * {@code "<exchange> publish"} span (a child of the current context), with the span's context injected into
     * the headers. The span ends when the publish's stage completes: on the broker's confirm in confirm mode,
     * when written otherwise; a failure is recorded on it. Ownership of {@code body} passes to Warren as with
     * {@code publish}, and a {@code null} body fails the stage with {@link IllegalArgumentException} as there.
     */
    @SuppressWarnings("try") // the Scope is held for its extent, never read: OpenTelemetry's idiom
    public CompletionStage<PublishOutcome> publish(
            Channel channel,
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body) {
        if (body == null) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("body must not be null"));
        }
        Span span;
        try {
            span = publishSpan(exchange, routingKey, properties, body);
        } catch (RuntimeException e) {
            return refused(body, e);
        }
        BasicProperties traced;
        try {
            traced = inject(Context.current().with(span), properties);
        } catch (RuntimeException e) { // the propagators or the properties failed: the started span ends here
            span.recordException(e);
            span.setStatus(StatusCode.ERROR, e.toString());
            span.end();
            return refused(body, e);
        }
        CompletionStage<PublishOutcome> stage;
        try (Scope ignored = span.makeCurrent()) {
            stage = channel.publish(exchange, routingKey, mandatory, traced, body);
        }
        return stage.whenComplete((outcome, error) -> {
            if (error != null) {
                span.recordException(error);
                span.setStatus(StatusCode.ERROR, error.toString());
            } else if (outcome.isReturned()) {
                span.setAttribute("messaging.rabbitmq.returned", true);
            }
            span.end();
        });
    }

    /** As {@link #publish(Channel, CharSequence, CharSequence, boolean, BasicProperties, ByteBuf)}; the array is wrapped. */
    public CompletionStage<PublishOutcome> publish(
            Channel channel,
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            byte[] body) {
        return publish(
                channel,
                exchange,
                routingKey,
                mandatory,
                properties,
                body == null ? null : Unpooled.wrappedBuffer(body));
    }

    private Span publishSpan(CharSequence exchange, CharSequence routingKey, BasicProperties properties, ByteBuf body) {
        String destination = destination(exchange.toString());
        SpanBuilder builder = tracer.spanBuilder(destination + " publish")
                .setSpanKind(SpanKind.PRODUCER)
                .setAttribute(SYSTEM, "rabbitmq")
                .setAttribute(DESTINATION, destination)
                .setAttribute(ROUTING_KEY, routingKey.toString())
                .setAttribute(OPERATION, "publish")
                .setAttribute(OPERATION_NAME, "publish")
                .setAttribute(OPERATION_TYPE, "send")
                .setAttribute(BODY_SIZE, (long) body.readableBytes());
        if (properties != null) {
            if (properties.messageId() != null) {
                builder.setAttribute(MESSAGE_ID, properties.messageId());
            }
            if (properties.correlationId() != null) {
                builder.setAttribute(CONVERSATION_ID, properties.correlationId());
            }
        }
        return builder.startSpan();
    }

    /** A publish failed before it reached the channel: the caller's reference to {@code body} is released here. */
    private static CompletionStage<PublishOutcome> refused(ByteBuf body, RuntimeException cause) {
        if (body.refCnt() > 0) { // one already released is not released again (publish refuses it the same way)
            body.release();
        }
        return CompletableFuture.failedFuture(cause);
    }

    /**
     * {@code properties} (null for none) with {@code context} injected into its headers by the propagators: for a
     * publish made some other way (an RPC request, say). The other headers are kept.
     */
    public BasicProperties inject(Context context, BasicProperties properties) {
        BasicProperties base = properties == null ? BasicProperties.EMPTY : properties;
        Map<String, Object> headers =
                base.headers() == null ? new LinkedHashMap<>() : new LinkedHashMap<>(base.headers());
        propagator.inject(context, headers, SETTER);
        return base.toBuilder().headers(headers).build();
    }

    /** {@code properties} with the current context injected; see {@link #inject(Context, BasicProperties)}. */
    public BasicProperties inject(BasicProperties properties) {
        return inject(Context.current(), properties);
    }

    // ---- consume -----------------------------------------------------------------------------------------

    /**
     * The context a message carries in its headers (the root context when none), read in place from the
     * content header. Valid while the delivery is.
     */
    public Context extract(Delivery delivery) {
        return propagator.extract(Context.root(), delivery.header(), GETTER);
    }

    /**
     * {@code handler} run inside a {@code "<exchange> process"} span, child of the context the message carries,
     * and made current for the handler's code (so its own spans and logs join the producer's trace). An
     * exception is recorded on the span and passed on.
     */
    @SuppressWarnings("try") // the Scope is held for its extent, never read: OpenTelemetry's idiom
    public DeliveryHandler traced(DeliveryHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return delivery -> {
            Span span = processSpan(delivery);
            try (Scope ignored = span.makeCurrent()) {
                handler.handle(delivery);
            } catch (Exception | Error e) {
                span.recordException(e);
                span.setStatus(StatusCode.ERROR, e.toString());
                throw e;
            } finally {
                span.end();
            }
        };
    }

    /**
     * {@code handler} run inside a {@code "<exchange> process"} span that ends when the returned stage completes.
     * The span is current while the handler starts its work; code it runs later on other threads should take
     * {@code Context.current()} along (OpenTelemetry's {@code Context.wrap}).
     */
    @SuppressWarnings("try") // the Scope is held for its extent, never read: OpenTelemetry's idiom
    public AsyncDeliveryHandler tracedAsync(AsyncDeliveryHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return delivery -> {
            Span span = processSpan(delivery);
            CompletionStage<?> stage;
            try (Scope ignored = span.makeCurrent()) {
                stage = handler.handle(delivery);
            } catch (Exception | Error e) { // Exception: a checked one thrown sneakily must end the span too
                span.recordException(e);
                span.setStatus(StatusCode.ERROR, e.toString());
                span.end();
                throw e;
            }
            if (stage == null) {
                span.end();
                return null;
            }
            return stage.whenComplete((v, error) -> {
                if (error != null) {
                    span.recordException(error);
                    span.setStatus(StatusCode.ERROR, error.toString());
                }
                span.end();
            });
        };
    }

    private Span processSpan(Delivery delivery) {
        String destination = destination(delivery.exchange());
        SpanBuilder builder = tracer.spanBuilder(destination + " process")
                .setParent(extract(delivery))
                .setSpanKind(SpanKind.CONSUMER)
                .setAttribute(SYSTEM, "rabbitmq")
                .setAttribute(DESTINATION, destination)
                .setAttribute(ROUTING_KEY, delivery.routingKey())
                .setAttribute(OPERATION, "process")
                .setAttribute(OPERATION_NAME, "process")
                .setAttribute(OPERATION_TYPE, "process")
                .setAttribute(BODY_SIZE, (long) delivery.body().readableBytes())
                .setAttribute(DELIVERY_TAG, delivery.deliveryTag());
        ContentHeader header = delivery.header();
        if (header.hasMessageId()) {
            builder.setAttribute(MESSAGE_ID, header.messageIdAsString());
        }
        if (header.hasCorrelationId()) {
            builder.setAttribute(CONVERSATION_ID, header.correlationIdAsString());
        }
        return builder.startSpan();
    }

    static String destination(String exchange) {
        return exchange.isEmpty() ? DEFAULT_EXCHANGE : exchange;
    }

    // ---- carriers ----------------------------------------------------------------------------------------

    private static final TextMapSetter<Map<String, Object>> SETTER = (carrier, key, value) -> {
        if (carrier != null) {
            carrier.put(key, value);
        }
    };

    /** Reads headers in place from the content header's field table; longstr values arrive as bytes or text. */
    private static final TextMapGetter<ContentHeader> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(ContentHeader carrier) {
            FieldTable headers = carrier == null ? null : carrier.headers();
            return headers == null ? List.of() : headers.toMap().keySet();
        }

        @Override
        public String get(ContentHeader carrier, String key) {
            FieldTable headers = carrier == null ? null : carrier.headers();
            if (headers == null) {
                return null;
            }
            Object value = headers.get(key);
            if (value == null) {
                return null;
            }
            if (value instanceof byte[] bytes) {
                return new String(bytes, StandardCharsets.UTF_8);
            }
            return value.toString();
        }
    };
}
