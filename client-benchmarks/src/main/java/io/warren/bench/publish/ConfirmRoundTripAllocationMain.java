package io.warren.bench.publish;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.PublishOutcome;
import io.warren.perf.AmqpClientDriver;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The allocation scenario of the RabbitMQ .NET client's pooling work, against the real broker: one connection
 * publishes 50,000 messages with confirms in batches of 500 (publish 500, wait for their confirms), another
 * connection consumes them back (automatic acknowledgement); the total bytes this JVM allocates while doing it
 * (every live thread: the caller, Warren's event loops or amqp-client's connection threads). Warren consumes
 * with its consume API (Channel.consume, a handler on the event loop). Bodies come from one {@code byte[]}.
 * A warm-up round of the same scenario runs first (JIT, pools), then the measured one.
 *
 * <pre>
 * java -Xmx1g -cp client-benchmarks/target/benchmarks.jar io.warren.bench.publish.ConfirmRoundTripAllocationMain warren|amqp-client 512|16384 [uri]
 * </pre>
 */
public final class ConfirmRoundTripAllocationMain {

    static final int MESSAGES = 50_000;
    static final int BATCH = 500;

    private ConfirmRoundTripAllocationMain() {}

    public static void main(String[] args) throws Exception {
        String client = args.length > 0 ? args[0] : "warren";
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 512;
        String uri = args.length > 2 ? args[2] : "amqp://guest:guest@127.0.0.1:5672";
        byte[] body = new byte[size];
        try (Scenario s = client.equals("warren") ? new Warren(uri) : new AmqpJavaClient(uri)) {
            s.run(MESSAGES / 5, body); // warm-up
            long allocated = JvmMeter.allocatedBytes();
            long cpu = JvmMeter.cpuNanos();
            long start = System.nanoTime();
            s.run(MESSAGES, body);
            long bytes = JvmMeter.allocatedBytes() - allocated;
            System.out.printf(
                    Locale.ROOT,
                    "%-11s %6d B bodies: %,d messages published+confirmed+consumed in %.2f s;"
                            + " allocated %,.1f MiB (%,d B/message); CPU %,.0f us/message%n",
                    client,
                    size,
                    MESSAGES,
                    (System.nanoTime() - start) / 1e9,
                    bytes / 1048576.0,
                    bytes / MESSAGES,
                    (JvmMeter.cpuNanos() - cpu) / 1e3 / MESSAGES);
        }
    }

    interface Scenario extends AutoCloseable {
        void run(int messages, byte[] body) throws Exception;
    }

    static final class Warren implements Scenario {
        final AmqpClient client = AmqpClient.create();
        final Connection publisher;
        final Connection consumer;
        final Channel pub;
        final Channel sub;
        final String queue = "warren-bench.roundtrip." + Long.toHexString(System.nanoTime());
        final AtomicLong received = new AtomicLong();
        volatile CountDownLatch done;
        volatile long target;
        final ConsumerHandle handle;

        Warren(String uri) throws Exception {
            publisher = client.connect(ConnectionOptions.fromUri(uri).connectionName("roundtrip publisher"))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            consumer = client.connect(ConnectionOptions.fromUri(uri).connectionName("roundtrip consumer"))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            pub = publisher.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            sub = consumer.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            pub.queueDeclare(queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
            pub.confirmSelect().toCompletableFuture().get(30, TimeUnit.SECONDS);
            handle = sub.consume(queue, new ConsumeOptions().noAck(true), d -> {
                        if (received.incrementAndGet() == target) {
                            done.countDown();
                        }
                    })
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
        }

        @Override
        public void run(int messages, byte[] body) throws Exception {
            done = new CountDownLatch(1);
            target = received.get() + messages;
            @SuppressWarnings("unchecked")
            CompletableFuture<PublishOutcome>[] batch = new CompletableFuture[BATCH];
            for (int sent = 0; sent < messages; sent += BATCH) {
                for (int i = 0; i < BATCH; i++) {
                    batch[i] = pub.publish("", queue, false, null, body).toCompletableFuture();
                }
                for (CompletableFuture<PublishOutcome> f : batch) {
                    f.get(60, TimeUnit.SECONDS);
                }
            }
            if (!done.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("consumed " + received.get() + " of " + target);
            }
        }

        @Override
        public void close() throws Exception {
            handle.cancel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            pub.queueDelete(queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
            publisher.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            consumer.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    static final class AmqpJavaClient implements Scenario {
        final com.rabbitmq.client.Connection publisher;
        final com.rabbitmq.client.Connection consumer;
        final com.rabbitmq.client.Channel pub;
        final com.rabbitmq.client.Channel sub;
        final String queue = "warren-bench.roundtrip." + Long.toHexString(System.nanoTime());
        final AtomicInteger received = new AtomicInteger();
        volatile CountDownLatch done;
        volatile long target;

        AmqpJavaClient(String uri) throws Exception {
            ConnectionFactory f = AmqpClientDriver.factory(uri); // a refused URI is named without its password
            publisher = f.newConnection("roundtrip publisher (amqp-client)");
            consumer = f.newConnection("roundtrip consumer (amqp-client)");
            pub = publisher.createChannel();
            sub = consumer.createChannel();
            pub.queueDeclare(queue, false, false, false, null);
            pub.confirmSelect();
            sub.basicConsume(queue, true, new DefaultConsumer(sub) {
                @Override
                public void handleDelivery(
                        String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] bytes) {
                    if (received.incrementAndGet() == target) {
                        done.countDown();
                    }
                }
            });
        }

        @Override
        public void run(int messages, byte[] body) throws Exception {
            done = new CountDownLatch(1);
            target = received.get() + messages;
            for (int sent = 0; sent < messages; sent += BATCH) {
                for (int i = 0; i < BATCH; i++) {
                    pub.basicPublish("", queue, null, body);
                }
                pub.waitForConfirmsOrDie(60_000);
            }
            if (!done.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("consumed " + received.get() + " of " + target);
            }
        }

        @Override
        public void close() throws Exception {
            pub.queueDelete(queue);
            publisher.close();
            consumer.close();
        }
    }
}
