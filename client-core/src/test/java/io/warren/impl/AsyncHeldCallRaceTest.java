package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.warren.Channel;
import io.warren.ConsumerHandle;
import io.warren.codec.content.BasicProperties;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * An asynchronous handler's calls never overlap when the drain takes a new delivery while a fetch lets a held one go on
 * a pool thread: the moment between the drain's two reads (anything held, anyone calling) is held open by a held
 * queue whose {@code isEmpty} runs the fetch and starts the pool thread. Found by a review: with the reads the other
 * way round, the drain called the new delivery while the pool thread was inside the held one's call.
 */
class AsyncHeldCallRaceTest {

    private static final byte[] HELLO = "hello".getBytes(StandardCharsets.UTF_8);

    /** Held queue whose isEmpty runs a hook once, when armed. */
    static final class HookedQueue extends ConcurrentLinkedQueue<Object> {
        volatile Runnable hook;

        @Override
        public boolean isEmpty() {
            Runnable h = hook;
            if (h != null) {
                hook = null;
                h.run();
            }
            return super.isEmpty();
        }
    }

    @Test
    void anAsyncHandlersCallsDoNotOverlapWhenTheDrainRacesAFetch() throws Exception {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ConcurrentLinkedDeque<Runnable> tasks = new ConcurrentLinkedDeque<>();
            List<String> events = new CopyOnWriteArrayList<>();
            AtomicInteger inHandler = new AtomicInteger();
            AtomicInteger maxInHandler = new AtomicInteger();
            CountDownLatch firstEntered = new CountDownLatch(1);
            CountDownLatch letFirstGo = new CountDownLatch(1);
            ConsumerHandle c = ConsumeTest.heldAsyncConsumer(broker, ch, tasks::add, d -> {
                int now = inHandler.incrementAndGet();
                maxInHandler.accumulateAndGet(now, Math::max);
                events.add("enter " + d.deliveryTag() + " on "
                        + Thread.currentThread().getName());
                if (d.deliveryTag() == 1) {
                    firstEntered.countDown();
                    try {
                        letFirstGo.await(5, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                events.add("exit " + d.deliveryTag());
                inHandler.decrementAndGet();
                return null;
            });

            // swap the held queue for one with a hook (same initial demand 0)
            Field slotsF = c.getClass().getDeclaredField("slots");
            slotsF.setAccessible(true);
            Object slots = slotsF.get(c);
            Field gateF = slots.getClass().getDeclaredField("userDemand");
            gateF.setAccessible(true);
            Class<?> gateClass = gateF.getType();
            Constructor<?> ctor = gateClass.getDeclaredConstructor(long.class, Queue.class);
            ctor.setAccessible(true);
            HookedQueue held = new HookedQueue();
            gateF.set(slots, ctor.newInstance(0L, held));

            deliver(broker, "a", 1);
            runAll(tasks);
            assertEquals(1, c.queued(), "1 held, no demand");

            Thread[] pool = new Thread[1];
            // The drain, taking delivery 2, asks whether anything is held: meanwhile an application thread fetches
            // and a pool thread runs the call-held task, which takes delivery 1 and is inside its call.
            held.hook = () -> {
                c.fetch(2);
                Runnable callHeld = tasks.pollLast();
                pool[0] = new Thread(callHeld, "pool-thread");
                pool[0].start();
                try {
                    firstEntered.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            deliver(broker, "a", 2);
            runAll(tasks); // the drain, on this thread
            letFirstGo.countDown();
            pool[0].join(5000);
            assertEquals(1, maxInHandler.get(), "handler calls overlapped: " + events);
            assertEquals(List.of("enter 1 on pool-thread", "exit 1", "enter 2 on pool-thread", "exit 2"), events);
        }
    }

    private static void runAll(ConcurrentLinkedDeque<Runnable> tasks) {
        Runnable t;
        while ((t = tasks.pollFirst()) != null) {
            t.run();
        }
    }

    private static void deliver(FakeBroker broker, String tag, long deliveryTag) {
        broker.sendDeliver(
                1,
                tag,
                deliveryTag,
                false,
                BasicProperties.builder().messageId("m-" + deliveryTag).build(),
                HELLO);
    }
}
