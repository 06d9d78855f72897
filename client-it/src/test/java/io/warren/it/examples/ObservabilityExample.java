package io.warren.it.examples;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.opentelemetry.api.OpenTelemetry;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.ConnectionOptions;
import io.warren.ConsumerHandle;
import io.warren.PublishOutcome;
import io.warren.credentials.Credentials;
import io.warren.credentials.RefreshingCredentialsProvider;
import io.warren.credentials.TokenSource;
import io.warren.micrometer.WarrenMeterBinder;
import io.warren.otel.WarrenTracing;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * Metrics, tracing and refreshed credentials: the README's examples. Each is optional: Micrometer and
 * OpenTelemetry are needed only by the application that uses them.
 */
public final class ObservabilityExample {

    /** A client whose meters go to {@code registry}. */
    public static AmqpClient meteredClient(MeterRegistry registry) {
        // [metrics]
        AmqpClient client = AmqpClient.create(new ClientOptions().metricsEnabled(true));
        new WarrenMeterBinder(client, Tags.of("service", "orders")).bindTo(registry);
        // rabbitmq.published, rabbitmq.acknowledged_published, rabbitmq.consumed, rabbitmq.consumer.queued, ...
        // [/metrics]
        return client;
    }

    /** Publishes in a span and consumes with the handler inside the producer's trace. */
    public static CompletionStage<PublishOutcome> traced(
            OpenTelemetry openTelemetry, Channel channel, String queue, Consumer<String> orders) {
        // [tracing]
        WarrenTracing tracing = WarrenTracing.create(openTelemetry);
        CompletionStage<ConsumerHandle> consumer = channel.consume(queue, tracing.traced(delivery -> {
            // Span.current() is "amq.default process", a child of the publisher's span
            orders.accept(delivery.body().toString(StandardCharsets.UTF_8));
            delivery.ack();
        }));
        return consumer.thenCompose(c -> tracing.publish(
                channel,
                "",
                queue,
                false,
                null,
                "order 1".getBytes(StandardCharsets.UTF_8))); // "amq.default publish", traceparent in the headers
        // [/tracing]
    }

    /** Options whose credentials come from a token endpoint, refreshed on the live connection before they expire. */
    public static ConnectionOptions tokenCredentials(String uri, String user, TokenEndpoint endpoint) {
        // [credentials]
        TokenSource tokens = () -> endpoint.fetchToken() // your HTTP client, non-blocking
                .thenApply(t -> Credentials.of(user, t.accessToken(), t.expiresAt()));
        return ConnectionOptions.fromUri(uri).credentialsProvider(RefreshingCredentialsProvider.create(tokens));
        // asked at every connect (recovery too); connection.update-secret before each token expires
        // [/credentials]
    }

    /** What an OAuth 2 client-credentials call returns, for the example. */
    public record Token(String accessToken, Instant expiresAt) {}

    /** The application's token endpoint client, for the example. */
    @FunctionalInterface
    public interface TokenEndpoint {
        CompletableFuture<Token> fetchToken();
    }

    private ObservabilityExample() {}
}
