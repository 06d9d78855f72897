package io.warren.it;

import static io.warren.it.Await.awaitTrue;
import static io.warren.it.ConsumeIT.messageCount;
import static io.warren.it.ConsumeIT.numberOf;
import static io.warren.it.ConsumeIT.publishNumbered;
import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.streams.WriteStream;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.Connection;
import io.warren.ConsumeOptions;
import io.warren.ConsumerCancelledException;
import io.warren.Delivery;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.it.BrokerExtension.TestNames;
import io.warren.vertx.DeliveryStream;
import io.warren.vertx.VertxAmqp;
import io.warren.vertx.VertxChannel;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Vert.x adapter inside a real {@link Vertx} with deployed verticles, against the broker: futures and stream
 * callbacks on the verticle's context, pause / fetch / resume, {@code pipeTo} with a slow write stream, and the
 * end and exception handlers.
 */
@ExtendWith(BrokerExtension.class)
class VertxIT {

    private Vertx vertx;
    /** Everything a callback found wrong (a wrong context, a wrong thread): must stay empty. */
    private final List<String> violations = Collections.synchronizedList(new ArrayList<>());

    @BeforeEach
    void startVertx() {
        vertx = Vertx.vertx();
    }

    @AfterEach
    void closeVertx() throws Exception {
        vertx.close().await(30, TimeUnit.SECONDS);
        assertEquals(List.of(), violations);
    }

    /** A verticle that runs {@code start} (given the verticle's context) and completes its start with it. */
    private static final class TestVerticle extends VerticleBase {
        private final Function<Context, Future<?>> body;

        TestVerticle(Function<Context, Future<?>> body) {
            this.body = body;
        }

        @Override
        public Future<?> start() {
            return body.apply(context);
        }
    }

    private String deploy(Function<Context, Future<?>> body) throws Exception {
        return vertx.deployVerticle(new TestVerticle(body)).await(30, TimeUnit.SECONDS);
    }

    /** Declares {@code q} and publishes {@code count} numbered messages of {@code size} bytes to it; the channel. */
    private static Channel queueOf(Broker broker, Connection connection, String q, int count, int size)
            throws Exception {
        Channel setup = await(connection.openChannel());
        await(setup.queueDeclare(q));
        publishNumbered(broker, q, count, size);
        return setup;
    }

    /**
     * A verticle that consumes {@code q} through a stream and runs {@code onStart} on it, on its context, once the
     * consumer is active; {@code verticle[0]} is then its context. Returns the stream.
     */
    private DeliveryStream streamInAVerticle(
            Connection connection,
            String q,
            ConsumeOptions options,
            Context[] verticle,
            java.util.function.Consumer<DeliveryStream> onStart)
            throws Exception {
        CompletableFuture<DeliveryStream> started = new CompletableFuture<>();
        VertxAmqp amqp = VertxAmqp.create(vertx);
        deploy(context -> {
            verticle[0] = context;
            return amqp.wrap(connection)
                    .openChannel()
                    .compose(ch -> ch.consume(q, options))
                    .onSuccess(stream -> {
                        onStart.accept(stream);
                        started.complete(stream);
                    });
        });
        return started.get(30, TimeUnit.SECONDS);
    }

    private void onContext(Context expected, String what) {
        if (Vertx.currentContext() != expected || !Context.isOnEventLoopThread()) {
            violations.add(
                    what + " ran on " + Thread.currentThread().getName() + ", context " + Vertx.currentContext());
        }
    }

    @Test
    void aVerticleConsumesAStreamOnItsContextInOrder(Broker broker, Connection connection, TestNames names)
            throws Exception {
        String q = names.queue("q");
        Channel setup = queueOf(broker, connection, q, 500, 16);
        List<Integer> seen = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> all = new CompletableFuture<>();
        VertxAmqp amqp = VertxAmqp.create(vertx);
        deploy(context -> amqp.wrap(connection)
                .openChannel()
                .compose(ch -> {
                    onContext(context, "openChannel's future");
                    return ch.consume(q, new ConsumeOptions().prefetch(50));
                })
                .onSuccess(stream -> {
                    onContext(context, "consume's future");
                    stream.handler(d -> {
                        onContext(context, "the stream's handler");
                        seen.add(numberOf(d));
                        d.ack();
                        if (seen.size() == 500) {
                            all.complete(null);
                        }
                    });
                }));
        all.get(60, TimeUnit.SECONDS);
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            expected.add(i);
        }
        assertEquals(expected, seen);
        // the acks counted: nothing ready, nothing unacknowledged
        Await.queueCounts(q, 0, 0, Duration.ofSeconds(10));
        await(setup.queueDelete(q));
    }

    @Test
    void pauseFetchAndResumeAreTheConsumersDemand(Broker broker, Connection connection, TestNames names)
            throws Exception {
        String q = names.queue("q");
        Channel setup = queueOf(broker, connection, q, 100, 16);
        AtomicInteger seen = new AtomicInteger();
        Context[] verticle = new Context[1];
        DeliveryStream stream = streamInAVerticle(connection, q, new ConsumeOptions().prefetch(100), verticle, s -> {
            s.pause();
            s.handler(d -> {
                onContext(verticle[0], "handler");
                seen.incrementAndGet();
                d.ack();
            });
            s.fetch(10);
        });
        awaitTrue(() -> seen.get() == 10, Duration.ofSeconds(30), "10 fetched deliveries");
        // every delivery has reached the client: the 10 fetched handled, the other 90 held by the pause
        awaitTrue(() -> stream.consumer().queued() == 90, Duration.ofSeconds(30), "the rest queued in the client");
        assertEquals(10, seen.get(), "paused: exactly the fetched ones");
        verticle[0].runOnContext(v -> stream.resume());
        awaitTrue(() -> seen.get() == 100, Duration.ofSeconds(30), "all after resume");
        await(setup.queueDelete(q));
    }

    /**
     * Demand asked before a handler is set waits for it, and survives the handler being replaced: with noAck a
     * delivery taken from the consumer without a handler to give it to would be lost.
     */
    @Test
    void fetchBeforeAHandlerWaitsForItAndSurvivesReplacingIt(Broker broker, Connection connection, TestNames names)
            throws Exception {
        String q = names.queue("q");
        Channel setup = queueOf(broker, connection, q, 20, 16);
        List<Integer> first = Collections.synchronizedList(new ArrayList<>());
        List<Integer> second = Collections.synchronizedList(new ArrayList<>());
        Context[] verticle = new Context[1];
        DeliveryStream stream = streamInAVerticle(connection, q, new ConsumeOptions().noAck(true), verticle, s -> {
            s.pause();
            s.fetch(5); // no handler yet
        });
        awaitTrue(() -> stream.consumer().queued() == 20, Duration.ofSeconds(30), "all 20 held, none taken");
        verticle[0].runOnContext(v -> stream.handler(d -> first.add(numberOf(d))));
        awaitTrue(() -> first.size() == 5, Duration.ofSeconds(30), "the 5 fetched before the handler");
        verticle[0].runOnContext(v -> {
            stream.fetch(3);
            stream.handler(d -> second.add(numberOf(d))); // replaced: the 3 go to the new one
        });
        awaitTrue(() -> second.size() == 3, Duration.ofSeconds(30), "the 3 fetched before the handler was replaced");
        verticle[0].runOnContext(v -> stream.resume());
        awaitTrue(() -> first.size() + second.size() == 20, Duration.ofSeconds(30), "all 20, none lost");
        List<Integer> all = new ArrayList<>(first);
        all.addAll(second);
        assertEquals(20, all.stream().distinct().count(), "each once: " + all);
        assertEquals(5, first.size(), "the first handler had only its 5");
        await(setup.queueDelete(q));
    }

    /**
     * The trial's case: {@code consume(queue)} with the defaults, paused while a backlog waits. Without a prefetch
     * the broker pushed everything, its writer stalled on the full socket and it dropped the connection (30 s send
     * timeout); recovery then handed the deliveries of the dead connection to the handler, whose acks threw. With
     * the default prefetch the broker holds all but the prefetch, which is what makes the connection safe however
     * long the pause (shown by the broker's own counts, not by waiting 30 s), and each message arrives once.
     */
    @Test
    void aPausedStreamWithTheDefaultsHoldsThePrefetchKeepsItsConnectionAndGetsEachMessageOnce(
            Broker broker, Connection connection, TestNames names) throws Exception {
        String q = names.queue("q");
        Channel setup = await(connection.openChannel());
        await(setup.queueDeclare(q));
        int total = 3000;
        publishNumbered(broker, q, total, 1024);
        List<String> recoveries = Collections.synchronizedList(new ArrayList<>());
        connection.addRecoveryListener(new io.warren.RecoveryListener() {
            @Override
            public void recoveryStarted(Connection c, io.warren.ConnectionLostException cause) {
                recoveries.add(cause.getMessage());
            }
        });
        java.util.BitSet seen = new java.util.BitSet();
        AtomicInteger handled = new AtomicInteger();
        AtomicInteger again = new AtomicInteger();
        CompletableFuture<DeliveryStream> started = new CompletableFuture<>();
        VertxAmqp amqp = VertxAmqp.create(vertx);
        Context[] verticle = new Context[1];
        deploy(context -> {
            verticle[0] = context;
            return amqp.wrap(connection)
                    .openChannel()
                    .compose(ch -> ch.consume(q))
                    .onSuccess(stream -> {
                        stream.pause();
                        stream.handler(d -> {
                            onContext(context, "handler");
                            int n = numberOf(d);
                            if (seen.get(n) || d.redelivered()) {
                                again.incrementAndGet();
                            }
                            seen.set(n);
                            handled.incrementAndGet();
                            d.ack();
                        });
                        started.complete(stream);
                    });
        });
        DeliveryStream stream = started.get(30, TimeUnit.SECONDS);
        int prefetch = ConsumeOptions.DEFAULT_PREFETCH;
        long[][] counts = new long[1][];
        awaitTrue(
                () -> {
                    try {
                        counts[0] = Rabbitmqctl.queueCounts(q);
                        return counts[0][1] >= prefetch;
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                },
                Duration.ofSeconds(30),
                "the prefetch delivered to the paused stream");
        // the whole prefetch has reached the paused stream: past this the broker sends more only if let
        awaitTrue(
                () -> stream.consumer().queued() == prefetch,
                Duration.ofSeconds(30),
                "the prefetch held by the paused stream");
        counts[0] = Rabbitmqctl.queueCounts(q);
        assertEquals(
                List.of((long) total - prefetch, (long) prefetch),
                List.of(counts[0][0], counts[0][1]),
                "paused: the broker keeps all but the prefetch (ready, unacknowledged)");
        assertEquals(0, handled.get());

        verticle[0].runOnContext(v -> stream.resume());
        awaitTrue(() -> handled.get() >= total, Duration.ofSeconds(60), "every message after resume");
        // every ack counted and nothing left in the queue: a duplicate would have been delivered, and handled,
        // before its ack could count
        Await.queueCounts(q, 0, 0, Duration.ofSeconds(10));
        assertEquals(total, handled.get(), "each message once");
        assertEquals(total, seen.cardinality());
        assertEquals(0, again.get(), "nothing redelivered");
        assertEquals(List.of(), recoveries, "the connection was never lost");
        assertTrue(connection.isOpen());
        await(setup.queueDelete(q));
    }

    /**
     * A write stream that keeps up to {@code maxSize} deliveries (retained) and completes one per timer tick,
     * acking it: slower than the broker, so the pipe must pause the stream.
     */
    private final class SlowWriteStream implements WriteStream<Delivery> {
        private final Context context;
        private final ArrayDeque<Delivery> queue = new ArrayDeque<>();
        private int maxSize = 16;
        // written on the context, read by the test thread
        private volatile int maxSeen;
        private volatile int written;
        private volatile boolean ended;
        private Handler<Void> drainHandler;
        private long timer = -1;

        SlowWriteStream(Context context) {
            this.context = context;
        }

        @Override
        public WriteStream<Delivery> exceptionHandler(Handler<Throwable> handler) {
            return this;
        }

        @Override
        public Future<Void> write(Delivery d) {
            onContext(context, "WriteStream.write");
            queue.add(d.retain()); // kept beyond the call: retained, released when written
            maxSeen = Math.max(maxSeen, queue.size());
            if (timer < 0) {
                timer = vertx.setPeriodic(1, id -> tick());
            }
            return Future.succeededFuture();
        }

        private void tick() {
            Delivery d = queue.poll();
            if (d == null) {
                return;
            }
            try {
                numberOf(d);
                d.ack();
            } catch (ChannelClosedException closed) {
                // the test closed the channel before the stream ended: the broker requeued this delivery
                return;
            } finally {
                d.release();
            }
            written++;
            if (drainHandler != null && queue.size() <= maxSize / 2) {
                Handler<Void> h = drainHandler;
                drainHandler = null;
                h.handle(null);
            }
        }

        @Override
        public Future<Void> end() {
            ended = true;
            vertx.cancelTimer(timer);
            Delivery d;
            while ((d = queue.poll()) != null) {
                d.release();
            }
            return Future.succeededFuture();
        }

        @Override
        public WriteStream<Delivery> setWriteQueueMaxSize(int maxSize) {
            this.maxSize = maxSize;
            return this;
        }

        @Override
        public boolean writeQueueFull() {
            return queue.size() >= maxSize;
        }

        @Override
        public WriteStream<Delivery> drainHandler(Handler<Void> handler) {
            this.drainHandler = handler;
            return this;
        }
    }

    @Test
    void pipeToASlowWriteStreamHonoursItsBackPressure(Broker broker, Connection connection, TestNames names)
            throws Exception {
        String q = names.queue("q");
        Channel setup = await(connection.openChannel());
        await(setup.queueDeclare(q));
        int total = 300;
        publishNumbered(broker, q, total, 32);
        VertxAmqp amqp = VertxAmqp.create(vertx);
        CompletableFuture<SlowWriteStream> sink = new CompletableFuture<>();
        CompletableFuture<DeliveryStream> streamRef = new CompletableFuture<>();
        CompletableFuture<Void> piped = new CompletableFuture<>();
        deploy(context -> amqp.wrap(connection)
                .openChannel()
                .compose(ch -> ch.consume(q, new ConsumeOptions().prefetch(100)))
                .onSuccess(stream -> {
                    SlowWriteStream ws = new SlowWriteStream(context);
                    ws.setWriteQueueMaxSize(8);
                    sink.complete(ws);
                    streamRef.complete(stream);
                    stream.pipeTo(ws).onComplete(ar -> {
                        onContext(context, "pipeTo's future");
                        if (ar.succeeded()) {
                            piped.complete(null);
                        } else {
                            piped.completeExceptionally(ar.cause());
                        }
                    });
                }));
        SlowWriteStream ws = sink.get(30, TimeUnit.SECONDS);
        DeliveryStream stream = streamRef.get(30, TimeUnit.SECONDS);
        awaitTrue(() -> ws.written == total, Duration.ofSeconds(60), "all written (" + ws.written + ")");
        assertTrue(ws.maxSeen <= 8, "the pipe paused the stream at the write queue's limit: saw " + ws.maxSeen);
        // the stream's end (a cancel) ends the write stream and completes the pipe
        await(stream.consumer().cancel());
        piped.get(30, TimeUnit.SECONDS);
        assertTrue(ws.ended);
        assertEquals(0, messageCount(setup, q));
        await(setup.queueDelete(q));
    }

    /**
     * The application closes the stream's channel (or its connection): an orderly end. The pipe ends its write
     * stream and succeeds, and the exception handler is not called; before, the pipe failed with "closed by the
     * application".
     */
    @Test
    void closingTheChannelEndsThePipeCleanly(Broker broker, Connection connection, TestNames names) throws Exception {
        pipeEndsCleanlyWhenTheApplicationCloses(broker, connection, names, false);
    }

    @Test
    void closingTheConnectionEndsThePipeCleanly(Broker broker, TestNames names) throws Exception {
        Connection own = await(BrokerExtension.client().connect(broker.uri()));
        // closed by the test; closed here too when the test fails first (closing a closed one completes at once)
        names.onCleanup(() -> own.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
        pipeEndsCleanlyWhenTheApplicationCloses(broker, own, names, true);
    }

    private void pipeEndsCleanlyWhenTheApplicationCloses(
            Broker broker, Connection connection, TestNames names, boolean wholeConnection) throws Exception {
        String q = names.queue("q");
        Channel setup = await(connection.openChannel());
        await(setup.queueDeclare(QueueSpec.named(q)));
        names.onCleanup(() -> {
            try (com.rabbitmq.client.Connection c = amqpClientConnection(broker)) {
                c.createChannel().queueDelete(q);
            }
        });
        publishNumbered(broker, q, 20, 16);
        VertxAmqp amqp = VertxAmqp.create(vertx);
        CompletableFuture<SlowWriteStream> sink = new CompletableFuture<>();
        CompletableFuture<VertxChannel> channel = new CompletableFuture<>();
        CompletableFuture<Void> piped = new CompletableFuture<>();
        List<String> exceptions = Collections.synchronizedList(new ArrayList<>());
        deploy(context -> amqp.wrap(connection)
                .openChannel()
                .compose(ch -> {
                    channel.complete(ch);
                    return ch.consume(q, new ConsumeOptions().prefetch(10));
                })
                .onSuccess(stream -> {
                    SlowWriteStream ws = new SlowWriteStream(context);
                    ws.setWriteQueueMaxSize(4);
                    sink.complete(ws);
                    stream.exceptionHandler(e -> exceptions.add(String.valueOf(e)));
                    stream.pipeTo(ws).onComplete(ar -> {
                        onContext(context, "pipeTo's future");
                        if (ar.succeeded()) {
                            piped.complete(null);
                        } else {
                            piped.completeExceptionally(ar.cause());
                        }
                    });
                }));
        SlowWriteStream ws = sink.get(30, TimeUnit.SECONDS);
        awaitTrue(() -> ws.written >= 5, Duration.ofSeconds(30), "some written (" + ws.written + ")");
        if (wholeConnection) {
            await(connection.close());
        } else {
            await(channel.get(30, TimeUnit.SECONDS).channel().close());
        }
        piped.get(30, TimeUnit.SECONDS); // throws when the pipe failed
        assertTrue(ws.ended, "the pipe ended the write stream");
        assertEquals(List.of(), exceptions, "an orderly close is not a failure");
    }

    private static com.rabbitmq.client.Connection amqpClientConnection(Broker broker) throws Exception {
        com.rabbitmq.client.ConnectionFactory f = new com.rabbitmq.client.ConnectionFactory();
        f.setUri(broker.uri());
        return f.newConnection("warren-it cleanup");
    }

    @Test
    void theBrokersCancelReachesTheExceptionThenTheEndHandlerOnTheContext(Connection connection, TestNames names)
            throws Exception {
        String q = names.queue("q");
        VertxAmqp amqp = VertxAmqp.create(vertx);
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> ended = new CompletableFuture<>();
        CompletableFuture<VertxChannel> channel = new CompletableFuture<>();
        deploy(context -> amqp.wrap(connection)
                .openChannel()
                .compose(ch -> ch.queueDeclare(q).map(ok -> ch))
                .compose(ch -> {
                    channel.complete(ch);
                    return ch.consume(q);
                })
                .onSuccess(stream -> stream.handler(d -> {})
                        .exceptionHandler(e -> {
                            onContext(context, "exceptionHandler");
                            events.add("exception " + e.getClass().getSimpleName());
                            assertInstanceOf(ConsumerCancelledException.class, e);
                        })
                        .endHandler(v -> {
                            onContext(context, "endHandler");
                            events.add("end");
                            ended.complete(null);
                        })));
        Channel other = await(connection.openChannel());
        await(other.queueDelete(q));
        ended.get(30, TimeUnit.SECONDS);
        assertEquals(List.of("exception ConsumerCancelledException", "end"), events);
        assertTrue(channel.get().channel().isOpen());
    }

    /**
     * A handler's exception, with no exception handler on the stream, reaches the verticle context's exception handler
     * on that context, as Vert.x reports a handler's exception; and the stream goes on. Before, only Warren's log had it.
     */
    @Test
    void aHandlersExceptionReachesTheContextsExceptionHandlerAndTheStreamGoesOn(
            Broker broker, Connection connection, TestNames names) throws Exception {
        String q = names.queue("q");
        Channel setup = queueOf(broker, connection, q, 4, 16);
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> all = new CompletableFuture<>();
        Context[] verticle = new Context[1];
        streamInAVerticle(connection, q, new ConsumeOptions(), verticle, s -> {
            verticle[0].exceptionHandler(e -> {
                onContext(verticle[0], "the context's exception handler");
                events.add("context: " + e.getMessage());
            });
            s.handler(d -> {
                int n = numberOf(d);
                d.ack();
                events.add("delivery " + n);
                if (n == 3) {
                    all.complete(null);
                }
                if (n == 1) {
                    throw new IllegalStateException("the handler fails on 1");
                }
                if (n == 2) {
                    throw new AssertionError("the handler fails on 2"); // an Error too, as Vert.x reports it
                }
            });
        });
        all.get(30, TimeUnit.SECONDS);
        assertEquals(
                List.of(
                        "delivery 0",
                        "delivery 1",
                        "context: the handler fails on 1",
                        "delivery 2",
                        "context: the handler fails on 2",
                        "delivery 3"),
                events);
        Await.queueCounts(q, 0, 0, Duration.ofSeconds(10));
        await(setup.queueDelete(q));
    }

    /**
     * Undeploying the verticle that made a stream cancels its consumer, as Vert.x unregisters a verticle's event-bus
     * consumers: the end handler runs on the verticle's context, what the paused stream held goes back to the queue,
     * and the handler is never called. Before, the consumer outlived its verticle and kept the messages.
     */
    @Test
    void undeployingTheVerticleCancelsItsStreamsConsumer(Broker broker, Connection connection, TestNames names)
            throws Exception {
        String q = names.queue("q");
        Channel setup = queueOf(broker, connection, q, 0, 16);
        VertxAmqp amqp = VertxAmqp.create(vertx);
        AtomicInteger handled = new AtomicInteger();
        CompletableFuture<Void> ended = new CompletableFuture<>();
        String deployment = deploy(context -> amqp.wrap(connection)
                .openChannel()
                .compose(ch -> ch.consume(q, new ConsumeOptions().prefetch(10)))
                .onSuccess(stream -> stream.pause()
                        .handler(d -> handled.incrementAndGet())
                        .endHandler(v -> {
                            onContext(context, "endHandler");
                            ended.complete(null);
                        })));
        publishNumbered(broker, q, 5, 16);
        Await.queueCounts(q, 0, 5, Duration.ofSeconds(10)); // all five held by the paused stream
        vertx.undeploy(deployment).await(30, TimeUnit.SECONDS);
        ended.get(30, TimeUnit.SECONDS);
        Await.queueCounts(q, 5, 0, Duration.ofSeconds(10));
        assertEquals(0, await(setup.queueDeclare(QueueSpec.passive(q))).consumerCount());
        assertEquals(0, handled.get());
        await(setup.queueDelete(q));
    }

    /**
     * A verticle undeployed while the consume it started is still on its way (its consume-ok comes after the
     * undeploy) cancels the consumer when the consume completes. Vert.x no longer counts the context a deployment
     * by then; before, the stream added no hook and the consumer outlived its verticle (review of the change above).
     */
    @Test
    void aVerticleUndeployedWhileItsConsumeIsOnItsWayCancelsTheConsumer(
            Broker broker, Connection connection, TestNames names) throws Exception {
        String q = names.queue("q");
        Channel setup = await(connection.openChannel());
        await(setup.queueDeclare(q));
        VertxAmqp amqp = VertxAmqp.create(vertx);
        // the connection's loop is held: the consume the verticle starts waits until it is let go
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        connection.eventLoop().execute(() -> {
            holding.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        holding.await();
        AtomicInteger handled = new AtomicInteger();
        CompletableFuture<Void> started = new CompletableFuture<>();
        String deployment = deploy(context -> {
            amqp.wrap(setup).consume(q, new ConsumeOptions().prefetch(10)).onSuccess(stream -> {
                stream.handler(d -> handled.incrementAndGet());
                started.complete(null);
            });
            return Future.succeededFuture();
        });
        vertx.undeploy(deployment).await(30, TimeUnit.SECONDS);
        release.countDown(); // the consume goes out now: its consume-ok comes after the undeploy
        started.get(30, TimeUnit.SECONDS);
        long consumers = -1;
        for (int i = 0; i < 100 && consumers != 0; i++) {
            consumers = await(setup.queueDeclare(QueueSpec.passive(q))).consumerCount();
            Thread.sleep(consumers == 0 ? 0 : 100);
        }
        assertEquals(0, consumers, "the consumer of the undeployed verticle is cancelled");
        publishNumbered(broker, q, 1, 16);
        Await.queueCounts(q, 1, 0, Duration.ofSeconds(10));
        assertEquals(0, handled.get());
        await(setup.queueDelete(q));
    }

    @Test
    void publishAndGetThroughTheAdapterCompleteOnTheContext(Connection connection, TestNames names) throws Exception {
        String q = names.queue("q");
        VertxAmqp amqp = VertxAmqp.create(vertx);
        CompletableFuture<String> got = new CompletableFuture<>();
        deploy(context -> amqp.wrap(connection)
                .openChannel()
                .compose(ch -> ch.queueDeclare(q)
                        .compose(ok -> ch.confirmSelect())
                        .compose(v -> ch.publish("", q, null, "hello".getBytes()))
                        .compose(outcome -> {
                            onContext(context, "publish's future");
                            if (outcome != PublishOutcome.CONFIRMED) {
                                violations.add("outcome " + outcome);
                            }
                            return ch.basicGet(q, true);
                        })
                        .map(r -> {
                            onContext(context, "basicGet's future");
                            try {
                                return r.body().toString(java.nio.charset.StandardCharsets.UTF_8);
                            } finally {
                                r.release();
                            }
                        })
                        .compose(body -> ch.queueDelete(q).map(n -> body)))
                .onComplete(ar -> {
                    if (ar.succeeded()) {
                        got.complete(ar.result());
                    } else {
                        got.completeExceptionally(ar.cause());
                    }
                }));
        assertEquals("hello", got.get(30, TimeUnit.SECONDS));
    }
}
