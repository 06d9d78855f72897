package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.warren.Channel;
import io.warren.PublishOutcome;
import io.warren.codec.content.ShortString;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Where Warren's producer stamps a publish, on a fake clock and a fake channel: at the same point as amqp-client's
 * producer, once its slot of the pace has come and the confirm window has room, so the client's back-pressure (Warren
 * not writable; amqp-client blocked in its socket write) is in the latency of both and the window's wait in neither.
 */
class WarrenProducerTest {

    private static final long BOUND_SECONDS = 10; // only bounds a wait: nothing here is timed

    private final FakeClock clock = new FakeClock();
    private final Metrics metrics = new Metrics();
    private final FakeChannel fake = new FakeChannel();
    private volatile boolean running = true;
    private Thread producerThread;

    @AfterEach
    void stopTheProducer() throws InterruptedException {
        running = false;
        if (producerThread != null) {
            producerThread.interrupt();
            producerThread.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
        }
    }

    private static RunOptions options(long producerMessages, int confirm) {
        return ConsumerCountTest.options(1, 0, producerMessages, 0, confirm, 0, false);
    }

    private void start(RunOptions options, ConfirmTracker confirms) {
        WarrenProducer producer = new WarrenProducer(fake.channel, confirms, options, metrics, () -> running, clock);
        producerThread = new Thread(() -> producer.run(ShortString.of(""), ShortString.of("k")), "test-producer");
        producerThread.start();
    }

    /** Waits until the producer thread is parked (here: waiting for room in the confirm window). */
    private void awaitProducerParked() throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
        while (producerThread.getState() != Thread.State.TIMED_WAITING && System.nanoTime() < end) {
            Thread.sleep(1);
        }
        assertEquals(Thread.State.TIMED_WAITING, producerThread.getState(), "the producer waits for the window");
    }

    private void awaitProducerDone() throws InterruptedException {
        producerThread.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
        assertFalse(producerThread.isAlive(), "the producer ended");
        assertNull(metrics.failure());
        assertEquals(1, metrics.counters().producersDone());
    }

    @Test
    void theWaitForWarrensWritabilityIsInTheLatencyAsAmqpClientsBlockingWriteIs() throws InterruptedException {
        fake.writable = false; // Warren's queue or the socket above the high-water mark: a publish now would queue
        long turn = clock.nanoTime();
        start(options(1, 0), null);

        assertTrue(fake.waitingForWritability.tryAcquire(BOUND_SECONDS, TimeUnit.SECONDS), "the producer waits");
        clock.advance(3_000_000L); // the socket drains
        fake.becomeWritable();
        fake.awaitPublish(0).complete(PublishOutcome.SENT); // the last of --pmessages: written

        awaitProducerDone();
        assertEquals(List.of(turn), fake.stamps, "stamped when its turn came, before Warren made it wait");
    }

    @Test
    void theWaitForRoomInTheConfirmWindowIsInNeitherLatency() throws InterruptedException {
        ConfirmTracker window = new ConfirmTracker(1, metrics);
        long first = clock.nanoTime();
        start(options(2, 1), window);

        CompletableFuture<PublishOutcome> confirm1 = fake.awaitPublish(0);
        awaitProducerParked(); // publish 2 waits for the window: a stamp taken before that wait would be taken now
        clock.advance(5_000_000L); // publish 2 waits for the confirm of publish 1 meanwhile
        long afterTheConfirm = clock.nanoTime();
        confirm1.complete(PublishOutcome.CONFIRMED);
        fake.awaitPublish(1).complete(PublishOutcome.CONFIRMED);

        awaitProducerDone();
        assertEquals(List.of(first, afterTheConfirm), fake.stamps, "publish 2 stamped once the window had room");
        assertEquals(2, metrics.counters().confirmed());
    }

    @Test
    void warrensOwnConfirmWindowNeverClosesBeforeTheTools() {
        assertEquals(2, WarrenDriver.ownConfirmWindow(1));
        assertEquals(20_000, WarrenDriver.ownConfirmWindow(10_000));
        assertEquals(1 << 24, WarrenDriver.ownConfirmWindow(1 << 23), "Warren's bound");
    }

    /** The few {@link Channel} methods a producer calls; each publish's stamp is read and its body released. */
    private static final class FakeChannel {
        final List<Long> stamps = new CopyOnWriteArrayList<>();
        final List<CompletableFuture<PublishOutcome>> outcomes = new CopyOnWriteArrayList<>();
        final Semaphore published = new Semaphore(0);
        final Semaphore waitingForWritability = new Semaphore(0);
        final CompletableFuture<Void> writableAgain = new CompletableFuture<>();
        volatile boolean writable = true;
        final Channel channel = (Channel) Proxy.newProxyInstance(
                Channel.class.getClassLoader(), new Class<?>[] {Channel.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "isOpen":
                            return true;
                        case "isWritable":
                            return writable;
                        case "whenWritable":
                            waitingForWritability.release();
                            return writableAgain;
                        case "publish":
                        case "publishNoOutcome":
                            ByteBuf body = (ByteBuf) args[args.length - 1];
                            try {
                                stamps.add(MessageBody.publishNanos(body));
                            } finally {
                                body.release(); // the publish owns the body: Warren would release it once written
                            }
                            CompletableFuture<PublishOutcome> outcome = new CompletableFuture<>();
                            if (method.getName().equals("publish")) {
                                outcomes.add(outcome);
                            }
                            published.release();
                            return method.getName().equals("publish") ? outcome : null;
                        default:
                            throw new UnsupportedOperationException(method.getName());
                    }
                });

        void becomeWritable() {
            writable = true;
            writableAgain.complete(null);
        }

        /** The outcome of publish {@code index} (from 0), once it was made; the test completes it. */
        CompletableFuture<PublishOutcome> awaitPublish(int index) throws InterruptedException {
            while (outcomes.size() <= index) {
                assertTrue(published.tryAcquire(BOUND_SECONDS, TimeUnit.SECONDS), "publish " + index + " made");
            }
            return outcomes.get(index);
        }
    }
}
