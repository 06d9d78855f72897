package io.warren.perf;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Address;
import com.rabbitmq.client.AddressResolver;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.MessageProperties;
import com.rabbitmq.client.ShutdownSignalException;
import io.warren.AmqpUri;
import java.io.IOException;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The official RabbitMQ Java client ({@code com.rabbitmq:amqp-client}) as PerfTest uses it: blocking
 * socket I/O (the client's default), one connection and channel per producer and per consumer, one
 * publishing thread per producer, {@link DefaultConsumer} callbacks on the client's consumer work pool,
 * {@link ConfirmListener} on the connection's reader thread. Automatic recovery is off: a lost
 * connection fails the run instead of hiding in it.
 *
 * <p>A producer re-stamps and re-sends one {@code byte[]} per thread: {@code basicPublish} writes the
 * body to the socket before it returns, so the array is free again when the call comes back.
 *
 * <p>Where latency starts, as for Warren: each publish waits for its turn ({@link PublishGate}: its slot in the
 * pace, then room in the confirm window) and is stamped then, right before {@code basicPublish}. The client's
 * back-pressure comes after the stamp, inside the call (blocked in the socket write while the socket is full, the
 * broker reading slowly or not at all under an alarm), so it is in the latency, as Warren's wait for writability is
 * in Warren's; the confirm window's wait is in neither.
 */
public final class AmqpClientDriver implements ClientDriver {

    private static final long CLOSE_TIMEOUT_MILLIS = 2_000;

    private final List<Connection> connections = new ArrayList<>();
    private final List<Producer> producers = new ArrayList<>();
    private final List<Consumer> consumers = new ArrayList<>();
    private RunOptions options;
    private Metrics metrics;
    private volatile boolean running = true;

    @Override
    public boolean onNetty() {
        return false; // its sockets' buffers are the JDK's
    }

    @Override
    public String name() {
        return "amqp-client";
    }

    @Override
    public String transport() {
        return "socket"; // amqp-client's default: a blocking java.net socket, read by its own thread
    }

    /**
     * amqp-client's connection factory for {@code uri}; a URI it refuses fails with an {@link IllegalArgumentException}
     * that names the URI without its password (amqp-client's own message quotes it whole: neither it nor its cause
     * goes on).
     */
    public static ConnectionFactory factory(String uri) {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(uri);
        } catch (URISyntaxException | IllegalArgumentException | java.security.GeneralSecurityException e) {
            throw new IllegalArgumentException("amqp-client cannot use the URI " + AmqpUri.redact(uri) + " ("
                    + e.getClass().getSimpleName() + ")");
        }
        return factory;
    }

    @Override
    public void connect(RunOptions options, Metrics metrics) throws Exception {
        this.options = options;
        this.metrics = metrics;
        ConnectionFactory factory = factory(options.uri());
        factory.setAutomaticRecoveryEnabled(false);
        factory.setTopologyRecoveryEnabled(false);
        factory.setConnectionTimeout(5_000);
        for (int i = 0; i < options.producers(); i++) {
            Connection connection = open(factory, "warren-perf-producer-" + i, i);
            Channel channel = connection.createChannel();
            producers.add(new Producer(i, channel));
        }
        for (int i = 0; i < options.consumers(); i++) {
            Connection connection = open(factory, "warren-perf-consumer-" + i, options.producers() + i);
            Channel channel = connection.createChannel();
            if (options.qos() > 0) {
                channel.basicQos(options.qos());
            }
            consumers.add(new Consumer(channel));
        }
    }

    /** The addresses as given: amqp-client's {@link AddressResolver#maybeShuffle} shuffles a list by default. */
    public static AddressResolver inOrder(List<Address> addresses) {
        return new AddressResolver() {
            @Override
            public List<Address> getAddresses() {
                return addresses;
            }

            @Override
            public List<Address> maybeShuffle(List<Address> input) {
                return input;
            }
        };
    }

    /** Connection {@code index}: to its own broker of {@code --uris} first, the others as failover. */
    private Connection open(ConnectionFactory factory, String name, int index) throws Exception {
        List<Address> addresses = new ArrayList<>();
        for (String uri : options.urisFor(index)) {
            AmqpUri parsed = AmqpUri.parse(uri); // its errors name no password, java.net.URI's quote it
            addresses.add(new Address(parsed.host(), parsed.port()));
        }
        // in this order, as Warren's connections with shuffling off: amqp-client's resolver shuffles by default
        Connection connection = factory.newConnection(null, inOrder(addresses), name);
        connections.add(connection);
        connection.addShutdownListener(cause -> {
            if (running && !cause.isInitiatedByApplication()) {
                metrics.fail(cause);
            }
        });
        return connection;
    }

    @Override
    public long declare() throws Exception {
        Channel any = !producers.isEmpty()
                ? producers.get(0).channel
                : consumers.get(0).getChannel();
        if (options.declaresExchange()) {
            any.exchangeDeclare(options.exchange(), options.exchangeType());
        }
        long queued = 0;
        if (!options.serverNamedQueues()) {
            Map<String, Object> args = options.queueArgs().isEmpty() ? null : options.queueArgs();
            queued = any.queueDeclare(options.queue(), true, false, options.autoDelete(), args)
                    .getMessageCount();
            if (!options.exchange().isEmpty()) {
                any.queueBind(options.queue(), options.exchange(), options.routingKey());
            }
        }
        for (Consumer consumer : consumers) {
            if (options.serverNamedQueues()) {
                consumer.queue = consumer.getChannel().queueDeclare().getQueue();
                if (!options.exchange().isEmpty()) {
                    consumer.getChannel().queueBind(consumer.queue, options.exchange(), options.routingKey());
                }
            } else {
                consumer.queue = options.queue();
            }
        }
        return queued;
    }

    @Override
    public void startConsumers() throws Exception {
        for (Consumer consumer : consumers) {
            consumer.getChannel().basicConsume(consumer.queue, options.autoAck(), consumer);
        }
    }

    @Override
    public void startProducers() {
        String routingKey = options.routingKeyFor(options.queue());
        for (Producer producer : producers) {
            producer.thread = new Thread(() -> producer.run(routingKey), "warren-perf-producer-" + producer.index);
            producer.thread.start();
        }
    }

    @Override
    public void stop() throws Exception {
        running = false;
        for (Producer producer : producers) {
            if (producer.thread != null) {
                producer.thread.join(CLOSE_TIMEOUT_MILLIS);
                producer.thread.interrupt();
            }
        }
        for (Consumer consumer : consumers) {
            consumer.cancel();
        }
    }

    @Override
    public void close() {
        running = false;
        for (Producer producer : producers) {
            if (producer.thread != null) {
                producer.thread.interrupt();
            }
        }
        for (Connection connection : connections) {
            try {
                connection.close((int) CLOSE_TIMEOUT_MILLIS);
            } catch (IOException | ShutdownSignalException e) {
                connection.abort((int) CLOSE_TIMEOUT_MILLIS);
            }
        }
        connections.clear();
    }

    /** One publishing thread on its own channel. */
    private final class Producer {
        final int index;
        final Channel channel;
        final ConfirmTracker confirms;
        Thread thread;

        Producer(int index, Channel channel) throws IOException {
            this.index = index;
            this.channel = channel;
            if (options.confirms()) {
                confirms = new ConfirmTracker(options.confirm(), metrics);
                channel.confirmSelect();
                channel.addConfirmListener(new ConfirmListener() {
                    @Override
                    public void handleAck(long tag, boolean multiple) {
                        confirms.ack(tag, multiple);
                    }

                    @Override
                    public void handleNack(long tag, boolean multiple) {
                        confirms.nack(tag, multiple);
                    }
                });
            } else {
                confirms = null;
            }
            if (options.mandatory()) {
                channel.addReturnListener(returned -> metrics.returned());
            }
        }

        void run(String routingKey) {
            byte[] body = new byte[options.size()];
            AMQP.BasicProperties props =
                    options.persistent() ? MessageProperties.MINIMAL_PERSISTENT_BASIC : MessageProperties.MINIMAL_BASIC;
            PublishGate gate = new PublishGate(new Pacer(options.rate()), confirms);
            long limit = options.producerMessages();
            long sent = 0;
            try {
                while (running && (limit == 0 || sent < limit)) {
                    if (!gate.await()) {
                        continue; // no room in the window yet: look at the stop flag, then wait again (the slot is
                        // kept)
                    }
                    long now = System.nanoTime();
                    MessageBody.stamp(body, now);
                    if (confirms != null) {
                        confirms.sent(channel.getNextPublishSeqNo(), now);
                    }
                    channel.basicPublish(options.exchange(), routingKey, options.mandatory(), false, props, body);
                    metrics.published();
                    sent++;
                }
                if (running && confirms != null) {
                    while (running && !confirms.awaitDrained(PublishGate.WAIT_SLICE_MILLIS)) {
                        // the last confirms are still on their way
                    }
                }
                if (running) {
                    metrics.producerDone();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException | AlreadyClosedException e) {
                if (running) {
                    metrics.fail(e);
                }
            }
        }
    }

    /** One consumer on its own channel, acknowledging as the options say. */
    private final class Consumer extends DefaultConsumer {
        String queue;
        // consumer work pool: amqp-client calls one channel's consumer from one thread at a time
        private final ConsumerCount count = new ConsumerCount(options);
        private volatile boolean cancelled;

        Consumer(Channel channel) {
            super(channel);
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                throws IOException {
            int what = count.take(cancelled);
            if (!ConsumerCount.taken(what)) {
                return; // prefetched after the last one wanted: not counted
            }
            metrics.received(MessageBody.publishNanos(body));
            if (ConsumerCount.acks(what)) {
                getChannel().basicAck(envelope.getDeliveryTag(), ConsumerCount.multiple(what));
            }
            if (ConsumerCount.done(what)) {
                metrics.consumerDone();
                cancel();
            }
        }

        @Override
        public void handleShutdownSignal(String consumerTag, ShutdownSignalException sig) {
            if (running && !sig.isInitiatedByApplication()) {
                metrics.fail(sig);
            }
        }

        void cancel() {
            if (cancelled) {
                return;
            }
            cancelled = true;
            String tag = getConsumerTag();
            if (tag == null) {
                return;
            }
            try {
                getChannel().basicCancel(tag);
            } catch (IOException | AlreadyClosedException e) {
                // the channel is going away anyway: nothing left to cancel
            }
        }
    }
}
