package io.warren.it;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.flow.DeliveryPublisher;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.reactivestreams.tck.TestEnvironment;
import org.reactivestreams.tck.flow.FlowPublisherVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;

/**
 * The Reactive Streams TCK's publisher rules, for a {@link DeliveryPublisher} over a real queue: each publisher
 * is a fresh queue holding exactly the elements asked for, taken with {@code limit(n)} so that it completes
 * after them. A TestNG class, run by {@link DeliveryPublisherTckIT}.
 */
public class DeliveryPublisherVerification extends FlowPublisherVerification<Delivery> {

    /** The most a publisher is asked to hold: each element is a real message in a real queue. */
    static final long MAX_ELEMENTS = 512;

    private static final AtomicLong QUEUES = new AtomicLong();

    private Connection connection;
    private final String prefix = "warren-it.tck." + Long.toHexString(System.nanoTime());

    public DeliveryPublisherVerification() {
        // generous: every signal crosses the broker
        super(new TestEnvironment(2_000, 300));
    }

    @BeforeClass
    public void connect() throws Exception {
        connection = await(BrokerExtension.client()
                .connect(ConnectionOptions.fromUri(BrokerExtension.broker().uri())
                        .connectionName("warren-it tck")));
    }

    @AfterClass
    public void close() throws Exception {
        if (connection != null) {
            await(connection.close());
        }
    }

    @Override
    public Flow.Publisher<Delivery> createFlowPublisher(long elements) {
        try {
            Channel ch = await(connection.openChannel());
            String q = prefix + ".q" + QUEUES.incrementAndGet();
            // the broker deletes it a minute after its last use
            await(ch.queueDeclare(QueueSpec.named(q).argument("x-expires", 60_000)));
            await(ch.confirmSelect());
            CompletionStage<PublishOutcome> last = CompletableFuture.completedFuture(PublishOutcome.CONFIRMED);
            for (long i = 0; i < elements; i++) {
                last = ch.publish("", q, false, null, ("m" + i).getBytes(StandardCharsets.UTF_8));
            }
            await(last);
            // the TCK's subscribers never settle: auto-ack, or the flow would stop at the prefetch
            return DeliveryPublisher.of(ch, q, new ConsumeOptions().noAck(true)).limit(elements);
        } catch (Exception e) {
            throw new IllegalStateException("could not prepare a queue of " + elements + " messages", e);
        }
    }

    @Override
    public Flow.Publisher<Delivery> createFailedFlowPublisher() {
        try {
            Channel ch = await(connection.openChannel());
            // basic.consume on a queue that does not exist: 404 NOT_FOUND closes the channel, onError follows
            return DeliveryPublisher.of(ch, prefix + ".missing");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public long maxElementsFromPublisher() {
        return MAX_ELEMENTS;
    }

    private static <T> T await(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
}
