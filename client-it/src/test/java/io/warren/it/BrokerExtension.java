package io.warren.it;

import io.warren.AmqpClient;
import io.warren.AmqpUri;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Finds the RabbitMQ broker the integration tests talk to, and gives each test its own names.
 *
 * <p>Order: the {@code AMQP_URI} environment variable; else a broker answering on 127.0.0.1:5672;
 * else a Testcontainers {@code RabbitMQContainer} when a Docker engine is available. When none of
 * these works the test <b>fails</b> with a message that says what was tried: a missing broker is
 * never a silent skip.
 *
 * <p>Parameters it resolves: {@link Broker}, {@link TestNames}, and a Warren {@link Connection} opened to
 * the broker for the test and closed after it (by one {@link AmqpClient} shared by the test JVM).
 * Resources registered with {@link TestNames#onCleanup(AutoCloseable)} are closed after the test, last first.
 */
public final class BrokerExtension implements BeforeAllCallback, AfterEachCallback, ParameterResolver {

    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(BrokerExtension.class);
    private static volatile Broker broker;
    private static volatile String failure;
    private static AmqpClient client;

    @Override
    public void beforeAll(ExtensionContext context) {
        broker();
    }

    /** The broker for this JVM, found on first use. Throws {@link AssertionError} when there is none. */
    public static synchronized Broker broker() {
        if (broker != null) {
            return broker;
        }
        if (failure != null) {
            throw new AssertionError(failure);
        }
        List<String> tried = new ArrayList<>();
        String env = System.getenv("AMQP_URI");
        if (env != null && !env.isBlank()) {
            Broker candidate = Broker.fromUri(env.trim(), "AMQP_URI");
            if (answers(candidate.host(), candidate.port())) {
                return broker = candidate;
            }
            tried.add("AMQP_URI=" + AmqpUri.redact(env) + " (nothing answers at " + candidate.host() + ":"
                    + candidate.port() + ")");
        } else {
            tried.add("AMQP_URI (not set)");
        }
        if (answers("127.0.0.1", 5672)) {
            return broker = new Broker("127.0.0.1", 5672, "guest", "guest", "/", "local broker on 127.0.0.1:5672");
        }
        tried.add("127.0.0.1:5672 (connection refused or timed out)");
        String docker = TestcontainersBroker.tryStart();
        if (docker.startsWith("amqp://")) {
            return broker = Broker.fromUri(docker, "Testcontainers RabbitMQContainer");
        }
        tried.add("Testcontainers (" + docker + ")");
        failure = "No RabbitMQ broker for the integration tests. Tried: " + String.join("; ", tried)
                + ". Start one (`rabbitmq-server -detached && rabbitmqctl await_startup`), or set AMQP_URI.";
        throw new AssertionError(failure);
    }

    private static boolean answers(String host, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 2_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        TestNames names = context.getStore(NS).remove(TestNames.class, TestNames.class);
        if (names != null) {
            names.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == Broker.class || type == TestNames.class || type == Connection.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        if (type == Broker.class) {
            return broker();
        }
        if (type == TestNames.class) {
            return names(context);
        }
        if (type == Connection.class) {
            Broker b = broker();
            Connection connection;
            try {
                connection = client().connect(new ConnectionOptions(ConnectionOptions.fromUri(b.uri()))
                                .connectionName("warren-it "
                                        + context.getRequiredTestMethod().getName()))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new ParameterResolutionException(
                        "could not open a Warren connection to " + b.host() + ":" + b.port() + " (" + b.source() + "): "
                                + e,
                        e);
            }
            names(context)
                    .onCleanup(() -> connection.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            return connection;
        }
        throw new ParameterResolutionException("unsupported parameter " + type);
    }

    private static TestNames names(ExtensionContext context) {
        return context.getStore(NS)
                .getOrComputeIfAbsent(
                        TestNames.class,
                        k -> new TestNames(
                                context.getRequiredTestClass().getSimpleName(),
                                context.getRequiredTestMethod().getName()),
                        TestNames.class);
    }

    /** The Warren client the tests of this JVM share (its event loops are daemon threads). */
    public static synchronized AmqpClient client() {
        if (client == null) {
            client = AmqpClient.create();
        }
        return client;
    }

    /** Unique names for one test, and the resources to close after it. */
    public static final class TestNames implements AutoCloseable {
        private final String prefix;
        private final ConcurrentLinkedDeque<AutoCloseable> cleanups = new ConcurrentLinkedDeque<>();

        TestNames(String testClass, String testMethod) {
            this.prefix = "warren-it." + testClass + "." + testMethod + "." + Long.toHexString(System.nanoTime());
        }

        /** A queue name that no other test uses. */
        public String queue(String suffix) {
            return prefix + ".q." + suffix;
        }

        /** An exchange name that no other test uses. */
        public String exchange(String suffix) {
            return prefix + ".x." + suffix;
        }

        public <T extends AutoCloseable> T onCleanup(T resource) {
            cleanups.push(resource);
            return resource;
        }

        @Override
        public void close() throws Exception {
            Exception first = null;
            AutoCloseable next;
            while ((next = cleanups.poll()) != null) {
                try {
                    next.close();
                } catch (Exception e) {
                    if (first == null) {
                        first = e;
                    } else {
                        first.addSuppressed(e);
                    }
                }
            }
            if (first != null) {
                throw first;
            }
        }
    }
}
