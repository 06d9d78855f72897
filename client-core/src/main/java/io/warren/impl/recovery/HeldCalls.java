package io.warren.impl.recovery;

import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpException;
import io.warren.ConnectionClosedException;
import io.warren.RpcTimeoutException;
import io.warren.impl.connection.MethodNames;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.IntSupplier;
import java.util.function.ObjLongConsumer;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The synchronous methods the application calls on a channel while it recovers (queue.declare, basic.consume,
 * basic.get, ...), each in its place in the channel's one order of held methods and publishes ({@link
 * ChannelRecovery}), sent once the channel, its modes, the topology and its consumers are back: none reaches a
 * re-opened channel before the entities it names are declared again (a basic.consume of a queue not yet re-declared
 * would get 404 and close the channel for good). Each waits at most the RPC timeout from its call, then fails unsent
 * with {@link RpcTimeoutException}, and once sent its reply is awaited for what is left of it; all fail with the cause
 * when the channel will not be recovered, and with a {@link ConnectionClosedException} when the event loop shuts down
 * (it cancels the timer: nothing would send them or time them out). Deadlines rise in call order, so one timer, armed
 * for the oldest, expires them. Event loop (the channel's, which is recovery's).
 */
final class HeldCalls {

    /**
     * A held method: {@code send} queues it on the channel as it is then; {@code fail} fails it unsent. {@code
     * queue}: the queue it names, or null.
     */
    private record Call(
            int methodKey, String queue, Runnable send, Consumer<AmqpException> fail, long place, long deadlineNanos) {}

    private static final Logger LOG = LoggerFactory.getLogger(HeldCalls.class);

    /** The channel's number, for messages (read when needed: it is set after the recovery object is made). */
    private final IntSupplier channelNumber;

    private final ArrayDeque<Call> calls = new ArrayDeque<>();
    private EventExecutor loop;
    private long timeoutNanos;
    /** Armed for the oldest held method's deadline while any is held. */
    private final DeadlineTimer timer = new DeadlineTimer(this::expire, this::loopShutDown);

    HeldCalls(IntSupplier channelNumber) {
        this.channelNumber = channelNumber;
    }

    /**
     * Holds a method called while the channel recovers, in {@code place} (after every place held before), for at
     * most {@code timeoutNanos} on {@code loop}'s clock.
     */
    void hold(
            EventExecutor loop,
            long place,
            long timeoutNanos,
            int methodKey,
            String queue,
            Runnable send,
            Consumer<AmqpException> fail) {
        assert loop.inEventLoop() : "held calls off the event loop";
        this.loop = loop;
        this.timeoutNanos = timeoutNanos;
        calls.add(new Call(methodKey, queue, send, fail, place, loop.ticker().nanoTime() + timeoutNanos));
        if (!timer.isArmed()) {
            timer.arm(loop, timeoutNanos);
        }
    }

    /** The place of the next held method, {@link Long#MAX_VALUE} when none is held. */
    long nextPlace() {
        Call c = calls.peek();
        return c == null ? Long.MAX_VALUE : c.place;
    }

    /**
     * The channel is back: sends the next held method, or fails it unsent when it names a queue that recovery
     * declared again under a new name (a server-named queue): sent, it would meet 404, which closes the channel.
     *
     * @param queueNames a queue's current name
     * @param within runs a method's send so that its reply is awaited for what is left of its timeout (nanoseconds)
     */
    void sendNext(UnaryOperator<String> queueNames, ObjLongConsumer<Runnable> within) {
        Call c = calls.poll();
        if (calls.isEmpty()) {
            timer.cancel();
        }
        long left = c.deadlineNanos - loop.ticker().nanoTime();
        String now = c.queue == null ? null : queueNames.apply(c.queue);
        if (left <= 0) {
            fail(c, notSentInTime(c, channelNumber.getAsInt())); // its timer is due and has not run yet
        } else if (now != null && !now.equals(c.queue)) {
            fail(
                    c,
                    new AmqpException(MethodNames.describe(c.methodKey) + " on channel " + channelNumber.getAsInt()
                            + " was not sent: recovery declared queue '" + c.queue + "' again as '" + now
                            + "' (server-named)"));
        } else {
            // its reply is awaited for what is left of its timeout, not a whole one more
            guarded(c, () -> within.accept(c.send, left));
        }
    }

    /** The channel will not be recovered: every held method fails with {@code cause}, unsent. */
    void failAll(AmqpException cause) {
        timer.cancel();
        List<Call> failed = new ArrayList<>(calls);
        calls.clear();
        for (Call c : failed) {
            fail(c, cause);
        }
    }

    int size() {
        return calls.size();
    }

    /** The timer: fails the methods whose wait is over, and re-arms for the next. */
    private void expire() {
        timer.fired();
        long now = loop.ticker().nanoTime();
        List<Call> expired = new ArrayList<>();
        Call c;
        while ((c = calls.peek()) != null && c.deadlineNanos - now <= 0) {
            expired.add(calls.poll());
        }
        if (c != null) {
            timer.arm(loop, c.deadlineNanos - now);
        }
        int number = channelNumber.getAsInt();
        for (Call e : expired) {
            fail(e, notSentInTime(e, number));
        }
    }

    private RpcTimeoutException notSentInTime(Call c, int number) {
        return new RpcTimeoutException(
                MethodNames.describe(c.methodKey) + " on channel " + number + " was not sent: the channel"
                        + " was not recovered within the RPC timeout of "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms",
                c.methodKey >>> 16,
                c.methodKey & 0xFFFF,
                number);
    }

    /** Nothing will send the held methods nor time them out: they fail unsent. */
    private void loopShutDown(Throwable why) {
        timer.cancel();
        List<Call> failed = new ArrayList<>(calls);
        calls.clear();
        int number = channelNumber.getAsInt();
        for (Call c : failed) {
            fail(
                    c,
                    new ConnectionClosedException(
                            MethodNames.describe(c.methodKey) + " on channel " + number + " was not sent: the"
                                    + " connection's event loop shut down while the channel was being recovered (was"
                                    + " the client or its event loop group closed?)",
                            why));
        }
    }

    private void fail(Call c, AmqpException cause) {
        guarded(c, () -> c.fail.accept(cause));
    }

    /**
     * Runs {@code action} for {@code c}; a throw is logged: one call's failure must not strand the others, which
     * nothing would send or fail any more.
     */
    private void guarded(Call c, Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            LOG.warn(
                    "channel {}: {} held during recovery could not be sent or failed",
                    channelNumber.getAsInt(),
                    MethodNames.describe(c.methodKey),
                    e);
        }
    }
}
