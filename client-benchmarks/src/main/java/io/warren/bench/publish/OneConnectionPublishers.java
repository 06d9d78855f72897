package io.warren.bench.publish;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.perf.AmqpClientDriver;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The large-message scenarios' publishers: {@code threads} application threads publishing on ONE connection (a
 * channel each; or on each of several connections sharing one event loop, {@link #warrenOnOneLoop}) to a fanout
 * exchange without bindings that they declare (the broker reads and routes every byte and stores nothing), all
 * starting together. Warren's or amqp-client's; one per JVM run.
 */
abstract class OneConnectionPublishers implements AutoCloseable {

    /** What each of Warren's publishes carries. */
    enum Body {
        /** The caller's {@code byte[]}, which Warren wraps. */
        ARRAY,
        /** A copy of it in a pooled direct buffer per message, as an application with its own pool makes. */
        POOLED_COPY,
        /** A direct {@code ByteBuffer} (a duplicate per message): nothing copied at all. */
        DIRECT
    }

    final ExecutorService pool;
    final String exchange;
    final byte[] body;
    final boolean confirms;

    private OneConnectionPublishers(int threads, String exchange, byte[] body, boolean confirms) {
        this.pool = Executors.newFixedThreadPool(threads);
        this.exchange = exchange;
        this.body = body;
        this.confirms = confirms;
    }

    /**
     * Warren: a thread waits while its channel is not writable before each publish. With confirms (a channel in
     * confirm mode each) a run ends when every publish is confirmed, without when the last one is written (a
     * channel's publishes are written in order).
     */
    static OneConnectionPublishers warren(
            String uri, String connectionName, String exchange, int threads, boolean confirms, byte[] body, Body kind)
            throws Exception {
        return new Warren(AmqpClient.create(), 1, uri, connectionName, exchange, threads, confirms, body, kind);
    }

    /**
     * Warren, {@code connections} connections on one client of ONE event loop ({@link ClientOptions#ioThreads} 1),
     * {@code threads} channels each, publishing the caller's {@code byte[]} without confirms, as {@link #warren}.
     */
    static OneConnectionPublishers warrenOnOneLoop(
            String uri, String connectionName, String exchange, int connections, int threads, byte[] body)
            throws Exception {
        return new Warren(
                AmqpClient.create(new ClientOptions().ioThreads(1)),
                connections,
                uri,
                connectionName,
                exchange,
                threads,
                false,
                body,
                Body.ARRAY);
    }

    /** amqp-client publishing the {@code byte[]}: a run ends when every call returned (and, with confirms, all are). */
    static OneConnectionPublishers amqpClient(
            String uri, String connectionName, String exchange, int threads, boolean confirms, byte[] body)
            throws Exception {
        return new AmqpClientPublishers(uri, connectionName, exchange, threads, confirms, body);
    }

    /**
     * Every thread publishes {@code messages} bodies, then makes one round trip on its channel; returns when all are
     * done, with when the last thread's publishes were done (see the factories) and when the last round trip came
     * back: the broker's channel had then taken every message before it (a channel's frames are handled in order).
     */
    final Ends run(int messages) throws Exception {
        long waitsBefore = writabilityWaits();
        int threads = threads();
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Future<long[]>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Callable<Void> publisher = publisher(t, messages);
            Callable<Void> roundTrip = roundTrip(t);
            done.add(pool.submit(() -> {
                start.await();
                publisher.call();
                long written = System.nanoTime();
                roundTrip.call();
                return new long[] {written, System.nanoTime()};
            }));
        }
        long written = Long.MIN_VALUE;
        long taken = Long.MIN_VALUE;
        for (Future<long[]> f : done) {
            long[] ends = f.get(300, TimeUnit.SECONDS);
            written = Math.max(written, ends[0]);
            taken = Math.max(taken, ends[1]);
        }
        long waitsAfter = writabilityWaits();
        return new Ends(written, taken, waitsAfter < 0 ? -1 : waitsAfter - waitsBefore);
    }

    /**
     * When a run's publishes were done ({@link System#nanoTime()}): {@code written} when the last thread's were
     * written to the socket, {@code taken} when the broker had taken the last of them (its round trip came back);
     * and how many times its threads waited for writability ({@code -1}: the client's calls block instead).
     */
    record Ends(long written, long taken, long writabilityWaits) {}

    /** The waits for writability so far, {@code -1} for a client whose calls block instead. */
    long writabilityWaits() {
        return -1;
    }

    /** One synchronous round trip on thread {@code t}'s channel: exchange.declare of the exchange it publishes to. */
    abstract Callable<Void> roundTrip(int t);

    abstract int threads();

    /** Adds {@code e} to {@code cause}'s suppressed failures, or keeps the first when there is no cause. */
    private static Exception keep(Throwable cause, Exception first, Exception e) {
        if (cause != null) {
            cause.addSuppressed(e);
            return null;
        }
        if (first != null) {
            first.addSuppressed(e);
            return first;
        }
        return e;
    }

    /** Thread {@code t}'s {@code messages} publishes. */
    abstract Callable<Void> publisher(int t, int messages);

    private static final class Warren extends OneConnectionPublishers {
        private final AmqpClient client;
        private final List<Connection> connections = new ArrayList<>();
        private final List<Channel> channels = new ArrayList<>();
        private final Body kind;
        private final ByteBuffer direct;
        /** Each time a thread found its channel not writable and waited. */
        private final LongAdder waits = new LongAdder();

        /** {@code connections} connections of {@code client} (owned from here on), {@code threads} channels each. */
        Warren(
                AmqpClient client,
                int connections,
                String uri,
                String connectionName,
                String exchange,
                int threads,
                boolean confirms,
                byte[] body,
                Body kind)
                throws Exception {
            super(connections * threads, exchange, body, confirms);
            this.client = client;
            this.kind = kind;
            this.direct =
                    kind == Body.DIRECT ? ByteBuffer.allocateDirect(body.length).put(0, body) : null;
            try {
                open(connections, uri, connectionName, threads, confirms);
            } catch (Exception | Error e) {
                closeAll(e); // the client was handed over: nothing opened so far outlives the failure
                throw e;
            }
        }

        private void open(int connections, String uri, String connectionName, int threads, boolean confirms)
                throws Exception {
            for (int c = 0; c < connections; c++) {
                Connection connection = client.connect(ConnectionOptions.fromUri(uri)
                                .connectionName(connections == 1 ? connectionName : connectionName + " " + c))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                this.connections.add(connection);
                for (int i = 0; i < threads; i++) {
                    Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
                    if (confirms) {
                        ch.confirmSelect().toCompletableFuture().get(30, TimeUnit.SECONDS);
                    }
                    channels.add(ch);
                }
            }
            channels.get(0)
                    .exchangeDeclare(exchange, "fanout")
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
        }

        @Override
        int threads() {
            return channels.size();
        }

        /** The body of one publish; Warren owns it from the publish on. */
        private ByteBuf nextBody() {
            return switch (kind) {
                case ARRAY -> Unpooled.wrappedBuffer(body);
                case POOLED_COPY ->
                    PooledByteBufAllocator.DEFAULT.directBuffer(body.length).writeBytes(body);
                case DIRECT -> Unpooled.wrappedBuffer(direct.duplicate());
            };
        }

        @Override
        Callable<Void> publisher(int t, int messages) {
            Channel ch = channels.get(t);
            return () -> {
                List<CompletableFuture<?>> awaited = new ArrayList<>();
                for (int m = 0; m < messages; m++) {
                    while (!ch.isWritable()) {
                        waits.increment();
                        ch.whenWritable().toCompletableFuture().get(60, TimeUnit.SECONDS);
                    }
                    if (confirms || m == messages - 1) {
                        awaited.add(ch.publish(exchange, "", false, null, nextBody())
                                .toCompletableFuture());
                    } else {
                        ch.publishNoOutcome(exchange, "", false, null, nextBody());
                    }
                }
                for (CompletableFuture<?> f : awaited) {
                    f.get(120, TimeUnit.SECONDS);
                }
                return null;
            };
        }

        @Override
        long writabilityWaits() {
            return waits.sum();
        }

        @Override
        Callable<Void> roundTrip(int t) {
            Channel ch = channels.get(t);
            return () -> {
                ch.exchangeDeclare(exchange, "fanout").toCompletableFuture().get(120, TimeUnit.SECONDS);
                return null;
            };
        }

        @Override
        public void close() throws Exception {
            pool.shutdownNow();
            try {
                deleteExchange();
            } catch (Exception e) {
                closeAll(e);
                throw e;
            }
            closeAll(null);
        }

        /** Deletes the exchange on a channel still open, or on a new one of a connection still open. */
        private void deleteExchange() throws Exception {
            Channel open = null;
            for (Channel ch : channels) {
                if (ch.isOpen()) {
                    open = ch;
                    break;
                }
            }
            for (int c = 0; open == null && c < connections.size(); c++) {
                if (connections.get(c).isOpen()) {
                    open = connections
                            .get(c)
                            .openChannel()
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS);
                }
            }
            if (open != null) {
                open.exchangeDelete(exchange).toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
        }

        /**
         * Closes every connection and then the client, each whatever the others did; failures go to {@code cause}'s
         * suppressed ones, or the first is thrown when there is no cause.
         */
        private void closeAll(Throwable cause) throws Exception {
            Exception first = null;
            for (Connection connection : connections) {
                try {
                    connection.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    first = keep(cause, first, e);
                }
            }
            try {
                client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                first = keep(cause, first, e);
            }
            if (first != null) {
                throw first;
            }
        }
    }

    private static final class AmqpClientPublishers extends OneConnectionPublishers {
        private final com.rabbitmq.client.Connection connection;
        private final List<com.rabbitmq.client.Channel> channels = new ArrayList<>();

        AmqpClientPublishers(
                String uri, String connectionName, String exchange, int threads, boolean confirms, byte[] body)
                throws Exception {
            super(threads, exchange, body, confirms);
            connection = AmqpClientDriver.factory(uri).newConnection(connectionName);
            try {
                for (int i = 0; i < threads; i++) {
                    com.rabbitmq.client.Channel ch = connection.createChannel();
                    if (confirms) {
                        ch.confirmSelect();
                    }
                    channels.add(ch);
                }
                channels.get(0).exchangeDeclare(exchange, "fanout");
            } catch (Exception | Error e) {
                connection.abort(); // its reading thread is not a daemon: the JVM would not end
                throw e;
            }
        }

        @Override
        int threads() {
            return channels.size();
        }

        @Override
        Callable<Void> publisher(int t, int messages) {
            com.rabbitmq.client.Channel ch = channels.get(t);
            return () -> {
                for (int m = 0; m < messages; m++) {
                    ch.basicPublish(exchange, "", null, body);
                }
                if (confirms) {
                    ch.waitForConfirmsOrDie(120_000);
                }
                return null;
            };
        }

        @Override
        Callable<Void> roundTrip(int t) {
            com.rabbitmq.client.Channel ch = channels.get(t);
            return () -> {
                ch.exchangeDeclare(exchange, "fanout");
                return null;
            };
        }

        @Override
        public void close() throws Exception {
            pool.shutdownNow();
            try {
                if (connection.isOpen()) {
                    // a channel an error closed cannot delete it: a new one can
                    com.rabbitmq.client.Channel open = channels.stream()
                            .filter(com.rabbitmq.client.Channel::isOpen)
                            .findFirst()
                            .orElse(null);
                    (open != null ? open : connection.createChannel()).exchangeDelete(exchange);
                }
            } finally {
                connection.abort(); // closes it if open, whatever happened above, and never throws
            }
        }
    }
}
