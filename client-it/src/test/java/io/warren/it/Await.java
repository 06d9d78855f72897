package io.warren.it;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;

/**
 * Waiting for a condition instead of sleeping: every wait has a deadline and fails (AssertionError) saying what
 * it waited for and what it last saw.
 */
public final class Await {

    private Await() {}

    /** Polls {@code condition} every 5 ms until it holds; fails after {@code timeout}. */
    public static void awaitTrue(BooleanSupplier condition, Duration timeout, String what) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }

    /** {@link #awaitTrue} for a condition that may throw (a broker query): the exception fails the wait. */
    public static void awaitQuery(Callable<Boolean> condition, Duration timeout, String what)
            throws InterruptedException {
        awaitTrue(
                () -> {
                    try {
                        return condition.call();
                    } catch (Exception e) {
                        throw new AssertionError("waiting for " + what, e);
                    }
                },
                timeout,
                what);
    }

    /**
     * Waits until the broker counts exactly {@code ready} messages ready and {@code unacknowledged} delivered but
     * not acknowledged in {@code queue} ({@link Rabbitmqctl#queueCounts}); fails after {@code timeout} with the
     * last counts. A passive queue.declare cannot do this: its message-count is the ready ones only.
     */
    public static void queueCounts(String queue, long ready, long unacknowledged, Duration timeout) throws Exception {
        long[] want = {ready, unacknowledged};
        long[] last = Rabbitmqctl.queueCounts(queue);
        long end = System.nanoTime() + timeout.toNanos();
        while (!Arrays.equals(want, last)) {
            if (System.nanoTime() > end) {
                throw new AssertionError("queue " + queue + ": the broker counts {ready, unacknowledged} "
                        + Arrays.toString(last) + ", expected " + Arrays.toString(want) + " within " + timeout);
            }
            Thread.sleep(20);
            last = Rabbitmqctl.queueCounts(queue);
        }
    }
}
