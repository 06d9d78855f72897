package io.warren.perf;

import io.netty.util.concurrent.FastThreadLocalThread;
import io.warren.Address;
import io.warren.AmqpClient;
import io.warren.AmqpUri;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.DeliveryHandler;
import io.warren.PublishOptions;
import io.warren.QueueSpec;
import io.warren.codec.content.ShortString;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Warren, driven as {@link AmqpClientDriver} drives amqp-client: one connection and one channel per producer
 * and per consumer, one publishing thread per producer. What differs is only how each client does the work
 * best:
 *
 * <ul>
 *   <li><b>Producer threads</b> are Netty {@link FastThreadLocalThread}s. Netty 4.2 pools nothing for a plain
 *       {@link Thread}: {@code Recycler.get()} makes a new object when the thread will not clean up its
 *       fast thread-locals, and {@code PooledByteBufAllocator} gives such a thread no thread cache
 *       ({@code io.netty.allocator.useCacheForAllThreads} is false by default). Publishing a pooled buffer from
 *       a plain thread therefore allocates every {@code PooledByteBuf} object of the message (body, and
 *       Warren's frame head and tail), Warren's {@code PublishTask}, and on the event loop a
 *       {@code DirectByteBuffer} duplicate per buffer written: about 600 B a message instead of nothing. With
 *       {@code -Dwarren.perf.plainProducerThreads=true} the producers are plain threads, to measure that.</li>
 *   <li><b>Event loops.</b> The client's own group with one loop per connection (amqp-client has one reader
 *       thread per connection), on NIO unless {@code --transport native} asks for io_uring or epoll (said on the
 *       standard error when none loads). Loop threads are {@code warren-io-*}.</li>
 *   <li><b>Publishing.</b> Each message is a pooled direct buffer written with the body and
 *       {@link MessageBody#stamp stamped} at its turn (below); ownership passes to Warren, which writes the
 *       buffer object itself to the socket (zero copy) and returns it to the pool. Exchange and routing key are
 *       {@link ShortString}s encoded once. Without confirms the fire-and-forget
 *       {@link Channel#publishNoOutcome} allocates no outcome; with confirms {@link Channel#publish} returns
 *       the future the broker's ack completes, which is the only way Warren reports a confirm (see
 *       {@link WarrenProducer}).</li>
 *   <li><b>Back-pressure</b> without blocking Warren: the producer thread waits, with a timeout so it sees
 *       {@link #stop}, on {@link Channel#whenWritable()} whenever {@link Channel#isWritable()} is false (socket
 *       or Warren's queue above the high-water mark, the connection blocked by the broker), so Warren never
 *       refuses a publish nor holds one for long.</li>
 *   <li><b>Confirm window.</b> {@link ConfirmTracker}, as amqp-client's driver uses it, numbering publishes 1,
 *       2, 3, ... as the channel does (confirm.select is answered before the first publish); Warren's own window
 *       ({@link PublishOptions#maxOutstandingConfirms}) is set beyond it ({@link #ownConfirmWindow}), so the tool's
 *       window alone makes the producer wait for confirms, as it does amqp-client's, and Warren holds nothing
 *       back in the client.</li>
 *   <li><b>Where latency starts</b>, as for amqp-client: each publish waits for its turn ({@link PublishGate}: its
 *       slot in the pace, then room in the confirm window) and is stamped then; the wait for writability comes
 *       after the stamp. That wait is Warren's back-pressure, where amqp-client's producer is blocked in its
 *       socket write after its stamp, so both latencies include the client's back-pressure and neither the
 *       confirm window's wait. (Stamped after the writability wait, as before, a Warren message left out a wait
 *       an amqp-client message counted: under a broker alarm, the whole alarm.)</li>
 *   <li><b>Consumers</b> run on the connection's event loop (Warren's default and fastest context: the handler
 *       is called in the read's stack, no hand-off) with a {@link DeliveryHandler} that reads the stamp in
 *       place, so no body byte is copied; acknowledgements go through Warren's coalescer.</li>
 * </ul>
 */
public final class WarrenDriver implements ClientDriver {

    private static final long CLOSE_TIMEOUT_MILLIS = 2_000;
    private static final long RPC_TIMEOUT_SECONDS = 10;
    /**
     * Diagnostic: publish from plain {@link Thread}s instead of {@link FastThreadLocalThread}s, to see what an
     * application's ordinary threads pay (see the class comment).
     */
    static final boolean PLAIN_PRODUCER_THREADS = Boolean.getBoolean("warren.perf.plainProducerThreads");
    /** The largest {@link PublishOptions#maxOutstandingConfirms} Warren takes. */
    private static final int MAX_CONFIRM_WINDOW = 1 << 24;

    private final List<io.warren.Connection> connections = new ArrayList<>();
    private final List<WarrenProducer> producers = new ArrayList<>();
    private final List<Thread> producerThreads = new ArrayList<>();
    private final List<Consumer> consumers = new ArrayList<>();
    private AmqpClient client;
    private RunOptions options;
    private Metrics metrics;
    // tool thread writes; producers, consumers and event loops read
    private volatile boolean running = true;

    @Override
    public String name() {
        return Clients.WARREN;
    }

    @Override
    public String transport() {
        return client == null ? null : client.transport();
    }

    @Override
    public void connect(RunOptions options, Metrics metrics) throws Exception {
        this.options = options;
        this.metrics = metrics;
        int connectionCount = Math.max(1, options.producers() + options.consumers());
        client = AmqpClient.create(new ClientOptions()
                .preferNativeTransport(options.nativeTransport())
                .ioThreads(Math.min(connectionCount, 2 * Runtime.getRuntime().availableProcessors())));
        if (options.nativeTransport() && client.transport().equals("nio")) {
            System.err.println("warren-perf: --transport native: no native transport loads here; Warren runs on NIO");
        }
        ConnectionOptions base = ConnectionOptions.fromUri(options.uri())
                .connectionTimeout(Duration.ofSeconds(5))
                .rpcTimeout(Duration.ofSeconds(RPC_TIMEOUT_SECONDS))
                .closeTimeout(Duration.ofMillis(CLOSE_TIMEOUT_MILLIS));
        if (options.confirms()) {
            base.publishOptions(new PublishOptions().maxOutstandingConfirms(ownConfirmWindow(options.confirm())));
        }
        for (int i = 0; i < options.producers(); i++) {
            Channel channel = open(base, "warren-perf-producer-" + i, i);
            ConfirmTracker confirms = null;
            if (options.confirms()) {
                confirms = new ConfirmTracker(options.confirm(), metrics);
                await(channel.confirmSelect());
            }
            if (options.mandatory()) {
                channel.addReturnListener(returned -> metrics.returned());
            }
            producers.add(new WarrenProducer(channel, confirms, options, metrics, () -> running, NanoClock.SYSTEM));
        }
        for (int i = 0; i < options.consumers(); i++) {
            consumers.add(new Consumer(open(base, "warren-perf-consumer-" + i, options.producers() + i)));
        }
    }

    /**
     * Warren's own confirm window for the tool's {@code window}: twice as large (within Warren's bound), so that it
     * never closes before the tool's does. Warren's window, once full, stays closed ({@link Channel#isWritable()}
     * false) until half of it is confirmed; of the same size as the tool's, it made Warren's producer wait for half a
     * window where amqp-client's waits for one slot, and, with the stamp taken before Warren's writability wait, would
     * put that wait in Warren's latency. The tool's {@link ConfirmTracker} keeps the window for both clients.
     */
    static int ownConfirmWindow(int window) {
        return (int) Math.min(2L * window, MAX_CONFIRM_WINDOW);
    }

    /** Connection {@code index}: to its own broker of {@code --uris} first, the others as failover. */
    private Channel open(ConnectionOptions base, String name, int index) throws Exception {
        ConnectionOptions own = new ConnectionOptions(base).connectionName(name);
        if (options.uris().size() > 1) {
            List<Address> addresses = new ArrayList<>();
            for (String uri : options.urisFor(index)) {
                AmqpUri parsed = AmqpUri.parse(uri);
                addresses.add(new Address(parsed.host(), parsed.port()));
            }
            own.addresses(addresses).shuffleAddresses(false);
        }
        io.warren.Connection connection = await(client.connect(own));
        connections.add(connection);
        connection.closeFuture().thenAccept(cause -> {
            if (running) {
                metrics.fail(cause);
            }
        });
        Channel channel = await(connection.openChannel());
        channel.closeFuture().thenAccept(cause -> {
            if (running) {
                metrics.fail(cause);
            }
        });
        return channel;
    }

    @Override
    public long declare() throws Exception {
        Channel any = !producers.isEmpty() ? producers.get(0).channel() : consumers.get(0).channel;
        if (options.declaresExchange()) {
            await(any.exchangeDeclare(options.exchange(), options.exchangeType()));
        }
        long queued = 0;
        if (!options.serverNamedQueues()) {
            queued = await(any.queueDeclare(QueueSpec.named(options.queue())
                            .durable(true)
                            .autoDelete(options.autoDelete())
                            .arguments(options.queueArgs())))
                    .messageCount();
            if (!options.exchange().isEmpty()) {
                await(any.queueBind(options.queue(), options.exchange(), options.routingKey()));
            }
        }
        for (Consumer consumer : consumers) {
            if (options.serverNamedQueues()) {
                consumer.queue = await(consumer.channel.queueDeclare(QueueSpec.serverNamed()))
                        .queue();
                if (!options.exchange().isEmpty()) {
                    await(consumer.channel.queueBind(consumer.queue, options.exchange(), options.routingKey()));
                }
            } else {
                consumer.queue = options.queue();
            }
        }
        return queued;
    }

    @Override
    public void startConsumers() throws Exception {
        ConsumeOptions consumeOptions = new ConsumeOptions().noAck(options.autoAck());
        if (options.qos() > 0) {
            consumeOptions.prefetch(options.qos()); // basic.qos before basic.consume
        } else if (!options.autoAck()) {
            consumeOptions.prefetch(
                    0); // --qos 0 is no limit, as amqp-client without basic.qos (not Warren's default 250)
        }
        for (Consumer consumer : consumers) {
            ConsumerHandle handle = await(consumer.channel.consume(consumer.queue, consumeOptions, consumer));
            consumer.started(handle);
            handle.endFuture().thenAccept(cause -> {
                if (cause != null && running) {
                    metrics.fail(cause);
                }
            });
        }
    }

    @Override
    public void startProducers() {
        ShortString exchange = ShortString.of(options.exchange());
        ShortString routingKey = ShortString.of(options.routingKeyFor(options.queue()));
        for (int i = 0; i < producers.size(); i++) {
            WarrenProducer producer = producers.get(i);
            Runnable run = () -> producer.run(exchange, routingKey);
            String threadName = "warren-perf-producer-" + i;
            Thread thread =
                    PLAIN_PRODUCER_THREADS ? new Thread(run, threadName) : new FastThreadLocalThread(run, threadName);
            producerThreads.add(thread);
            thread.start();
        }
    }

    @Override
    public void stop() throws Exception {
        running = false;
        for (Thread thread : producerThreads) {
            thread.join(CLOSE_TIMEOUT_MILLIS);
            thread.interrupt();
        }
        List<CompletableFuture<Void>> cancels = new ArrayList<>();
        for (Consumer consumer : consumers) {
            cancels.add(consumer.cancel());
        }
        try {
            CompletableFuture.allOf(cancels.toArray(CompletableFuture[]::new))
                    .get(CLOSE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // a consumer whose channel is going away has nothing left to cancel
        }
    }

    @Override
    public void close() {
        running = false;
        for (Thread thread : producerThreads) {
            thread.interrupt();
        }
        for (Thread thread : producerThreads) {
            try {
                thread.join(CLOSE_TIMEOUT_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        producerThreads.clear();
        producers.clear();
        consumers.clear();
        connections.clear();
        if (client != null) {
            // closes every connection (close-ok or the close timeout), then shuts the event loops down
            try {
                client.close().toCompletableFuture().get(3 * CLOSE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                // nothing more to do: the loops are daemon threads
            }
            client = null;
        }
    }

    /** Waits for a setup step (connect, declare, consume); the tool's thread, never an event loop. */
    private static <T> T await(CompletionStage<T> stage) throws Exception {
        try {
            return stage.toCompletableFuture().get(RPC_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }

    /** One consumer on its own connection and channel; its handler runs on the connection's event loop. */
    private final class Consumer implements DeliveryHandler {
        final Channel channel;
        String queue;
        // consumer context (the event loop) only
        private final ConsumerCount count = new ConsumerCount(options);
        // any thread
        private volatile boolean cancelRequested;
        // guarded by this (taken once or twice per consumer, never per delivery)
        private ConsumerHandle handle;
        private CompletableFuture<Void> cancelling;

        Consumer(Channel channel) {
            this.channel = channel;
        }

        @Override
        public void handle(Delivery delivery) {
            int what = count.take(cancelRequested);
            if (!ConsumerCount.taken(what)) {
                return; // prefetched after the last one wanted: not counted, not acknowledged
            }
            metrics.received(MessageBody.publishNanos(delivery.body()));
            if (ConsumerCount.acks(what)) {
                delivery.ack(ConsumerCount.multiple(what));
            }
            if (ConsumerCount.done(what)) {
                metrics.consumerDone();
                cancel();
            }
        }

        /** consume-ok: the consumer may have reached its count already, before its handle was known. */
        synchronized void started(ConsumerHandle h) {
            handle = h;
            if (cancelRequested && cancelling == null) {
                cancelling = h.cancel().toCompletableFuture();
            }
        }

        /**
         * Cancels the consumer once (at its count on the event loop, or from {@link #stop}); completes on
         * cancel-ok, or at once when there is nothing to cancel yet.
         */
        synchronized CompletableFuture<Void> cancel() {
            cancelRequested = true;
            if (cancelling == null && handle != null) {
                cancelling = handle.cancel().toCompletableFuture();
            }
            return cancelling != null ? cancelling : CompletableFuture.completedFuture(null);
        }
    }
}
