package io.warren.it;

import static io.warren.it.RecoveryIT.await;
import static io.warren.it.RecoveryIT.through;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.DeliveryHandler;
import io.warren.QueueSpec;
import io.warren.flow.DeliveryPublisher;
import io.warren.it.RecoveryIT.Events;
import io.warren.it.fault.FaultProxy;
import io.warren.testing.LeakRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Connections cut again and again while messages stream to consumers of every kind (on the event loop, on a
 * pool, in parallel, asynchronous, paused, on a small demand, noAck over its water marks, a Reactive Streams
 * subscriber): whatever a cut catches on its way (a delivery being assembled, queued without demand, handed to a
 * pool, waiting for a recovery that moves its consumer, waiting for a drain that an executor shut down with
 * {@code shutdownNow()} dropped), the application's close ends every consumer, empties every queue and leaves no
 * buffer unreleased.
 */
@ExtendWith(BrokerExtension.class)
class CutsUnderConsumersIT {

    private static final int CUTS = 12;

    @Test
    void everyConsumerEndsAndEveryDeliveryIsReleasedAfterRepeatedCuts(Broker broker, BrokerExtension.TestNames names)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        names.onCleanup(pool::shutdownNow);
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker, "cuts-consumers")));
            names.onCleanup(() -> c.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Events events = new Events();
            c.addRecoveryListener(events);
            Connection publisherConnection = await(BrokerExtension.client()
                    .connect(ConnectionOptions.fromUri(broker.uri()).automaticRecovery(false)));
            names.onCleanup(
                    () -> publisherConnection.close().toCompletableFuture().get(30, TimeUnit.SECONDS));
            Channel setup = await(publisherConnection.openChannel());

            DeliveryHandler ack = CutsUnderConsumersIT::ackQuietly;
            Map<String, ConsumeOptions> serial = new LinkedHashMap<>();
            serial.put("loop", new ConsumeOptions().prefetch(50));
            serial.put("pool", new ConsumeOptions().prefetch(100).executor(pool));
            serial.put(
                    "parallel",
                    new ConsumeOptions().prefetch(100).executor(pool).concurrency(4));
            serial.put("paused", new ConsumeOptions().prefetch(20).initialDemand(0));
            serial.put(
                    "paused-pool",
                    new ConsumeOptions().prefetch(20).initialDemand(0).executor(pool));
            serial.put("small-demand", new ConsumeOptions().prefetch(30).initialDemand(5));
            serial.put(
                    "noack-marks",
                    new ConsumeOptions().noAck(true).waterMarks(4, 16).executor(pool));

            List<String> queues = new ArrayList<>();
            List<ConsumerHandle> handles = new ArrayList<>();
            for (Map.Entry<String, ConsumeOptions> e : serial.entrySet()) {
                String q = declare(setup, names.queue(e.getKey()), names, broker);
                queues.add(q);
                Channel ch = await(c.openChannel());
                DeliveryHandler handler = e.getKey().equals("noack-marks") ? d -> sleepQuietly() : ack;
                handles.add(await(ch.consume(q, e.getValue(), handler)));
            }
            // its executor is shut down with shutdownNow() while a drain waits in it, as an application may do
            // one thread, and a queue the test can look into: only the consumer's drains are submitted to it
            ThreadPoolExecutor doomed =
                    new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>());
            names.onCleanup(doomed::shutdownNow);
            String doomedQueue = declare(setup, names.queue("shut-down-now"), names, broker);
            queues.add(doomedQueue);
            ConsumerHandle doomedConsumer = await(await(c.openChannel())
                    .consume(doomedQueue, new ConsumeOptions().prefetch(20).executor(doomed), ack));
            handles.add(doomedConsumer);
            String asyncQueue = declare(setup, names.queue("async"), names, broker);
            queues.add(asyncQueue);
            Channel asyncChannel = await(c.openChannel());
            handles.add(await(asyncChannel.consumeAsync(
                    asyncQueue,
                    new ConsumeOptions().prefetch(50).executor(pool).concurrency(8),
                    d -> CompletableFuture.runAsync(() -> ackQuietly(d), pool))));
            String flowQueue = declare(setup, names.queue("flow"), names, broker);
            queues.add(flowQueue);
            Channel flowChannel = await(c.openChannel());
            OneAtATime subscriber = new OneAtATime();
            DeliveryPublisher.of(
                            flowChannel,
                            flowQueue,
                            new ConsumeOptions().prefetch(10).executor(pool))
                    .subscribe(subscriber);

            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong published = new AtomicLong();
            AtomicReference<Throwable> publisherFailure = new AtomicReference<>();
            Thread publisher = new Thread(
                    () -> {
                        try {
                            Channel p = await(publisherConnection.openChannel());
                            for (long i = 0; !stop.get(); i++) {
                                String q = queues.get((int) (i % queues.size()));
                                p.publishNoOutcome("", q, false, null, Unpooled.wrappedBuffer(new byte[64]));
                                published.incrementAndGet();
                                if (i % 64 == 0) {
                                    await(p.whenWritable());
                                    Thread.sleep(2);
                                }
                            }
                        } catch (Exception e) {
                            if (!stop.get()) {
                                publisherFailure.set(e); // reported on the test's thread below
                            }
                        }
                    },
                    "cuts-publisher");
            publisher.start();
            long seed = System.nanoTime();
            Random random = new Random(seed);
            try {
                for (int cut = 0; cut < CUTS; cut++) {
                    // some cuts right after the recovery, others with deliveries queued up
                    Thread.sleep(cut % 3 == 0 ? 5 : random.nextInt(100, 400));
                    // a recovery not waited for (the cut before came while recovering) must not count for this one
                    events.succeeded.clear();
                    proxy.cutAll();
                    if (cut % 4 != 3) { // every fourth cut comes again while recovering
                        Object recovered = events.succeeded.poll(30, TimeUnit.SECONDS);
                        assertTrue(recovered != null, "recovered after cut " + cut + " (seed " + seed + ")");
                    }
                }
                events.awaitRecovery();
                CountDownLatch busy = new CountDownLatch(1);
                CountDownLatch never = new CountDownLatch(1);
                doomed.execute(() -> {
                    busy.countDown();
                    // until shutdownNow interrupts it: a park could return at once on a permit the worker was left
                    // with, and the drain would then run instead of waiting
                    try {
                        never.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                busy.await();
                // a delivery counted as queued may not have handed its drain to the executor yet
                Await.awaitTrue(
                        () -> !doomed.getQueue().isEmpty(),
                        Duration.ofSeconds(30),
                        "a drain waiting behind the busy executor");
                assertTrue(doomedConsumer.queued() > 0, "deliveries wait behind the busy executor");
                assertFalse(doomed.shutdownNow().isEmpty(), "the drain was dropped, never to run");
            } finally {
                stop.set(true);
                publisher.join(30_000);
            }
            Throwable failure = publisherFailure.get();
            if (failure != null) {
                throw new AssertionError("the publisher failed", failure);
            }
            assertTrue(published.get() > 1000, "messages streamed during the cuts: " + published.get());

            await(c.close());
            for (ConsumerHandle h : handles) {
                try {
                    h.endFuture().toCompletableFuture().get(10, TimeUnit.SECONDS);
                } catch (TimeoutException e) {
                    throw new AssertionError("consumer " + h + " never ended after the connection's close", e);
                }
                // a drain under way at the end disposes of the rest in the consumer's context, just after
                Await.awaitTrue(() -> h.queued() == 0, Duration.ofSeconds(10), "an empty queue for " + h);
                assertEquals(0, h.queued(), "nothing left queued for " + h);
            }
            // the terminal signal may wait for an onNext under way on the pool
            Await.awaitTrue(subscriber.ended::isDone, Duration.ofSeconds(10), "the subscriber's terminal signal");
            assertTrue(subscriber.ended.isDone(), "the subscriber got its terminal signal");
            pool.shutdown();
            assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "the handlers returned");
            assertEquals(List.of(), LeakRecorder.collect(), "no buffer leaked");
        }
    }

    private static String declare(Channel ch, String q, BrokerExtension.TestNames names, Broker broker)
            throws Exception {
        await(ch.queueDeclare(QueueSpec.named(q)));
        names.onCleanup(() -> FaultIT.deleteQueue(broker, q));
        return q;
    }

    private static void ackQuietly(Delivery d) {
        try {
            d.ack();
        } catch (RuntimeException stale) {
            // delivered on a channel the cut took: the broker requeued it
        }
    }

    private static void sleepQuietly() {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Requests one delivery at a time and acknowledges each. */
    private static final class OneAtATime implements Flow.Subscriber<Delivery> {
        final CompletableFuture<Throwable> ended = new CompletableFuture<>();
        private volatile Flow.Subscription subscription;

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(1);
        }

        @Override
        public void onNext(Delivery d) {
            ackQuietly(d);
            subscription.request(1);
        }

        @Override
        public void onError(Throwable t) {
            ended.complete(t);
        }

        @Override
        public void onComplete() {
            ended.complete(null);
        }
    }
}
