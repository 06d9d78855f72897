package io.warren.impl.recovery;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.AmqpException;
import io.warren.RpcTimeoutException;
import io.warren.impl.connection.MethodNames;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The synchronous methods the application calls on a channel while it recovers (queue.declare, basic.consume,
 * basic.get, ...), held in call order and sent once the channel, its modes, the topology and its consumers are
 * back: none reaches a re-opened channel before the entities it names are declared again (a basic.consume of a
 * queue not yet re-declared would get 404 and close the channel for good). Each waits at most the RPC timeout from
 * its call, then fails unsent with {@link RpcTimeoutException}; all fail with the cause when the channel will not
 * be recovered. Deadlines rise in call order, so one timer, armed for the oldest, expires them. Event loop (the
 * channel's, which is recovery's).
 */
final class HeldCalls {

    /** A held method: {@code send} queues it on the channel as it is then; {@code fail} fails it unsent. */
    private record Call(int methodKey, Runnable send, Consumer<AmqpException> fail, long deadlineNanos) {}

    private final RecoverableChannel channel;
    private final ArrayDeque<Call> calls = new ArrayDeque<>();
    private EventExecutor loop;
    private long timeoutNanos;
    private ScheduledFuture<?> timer;

    HeldCalls(RecoverableChannel channel) {
        this.channel = channel;
    }

    /**
     * Holds a method called while the channel recovers, for at most {@code timeoutNanos} on {@code loop}'s clock.
     */
    void hold(EventExecutor loop, long timeoutNanos, int methodKey, Runnable send, Consumer<AmqpException> fail) {
        assert loop.inEventLoop() : "held calls off the event loop";
        this.loop = loop;
        this.timeoutNanos = timeoutNanos;
        calls.add(new Call(methodKey, send, fail, loop.ticker().nanoTime() + timeoutNanos));
        if (timer == null) {
            timer = loop.schedule(this::expire, timeoutNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** The channel is back: sends every held method, in call order. */
    void sendAll() {
        cancelTimer();
        Call c;
        while ((c = calls.poll()) != null) {
            c.send.run();
        }
    }

    /** The channel will not be recovered: every held method fails with {@code cause}, unsent. */
    void failAll(AmqpException cause) {
        cancelTimer();
        List<Call> failed = new ArrayList<>(calls);
        calls.clear();
        for (Call c : failed) {
            c.fail.accept(cause);
        }
    }

    int size() {
        return calls.size();
    }

    /** The timer: fails the methods whose wait is over, and re-arms for the next. */
    private void expire() {
        timer = null;
        long now = loop.ticker().nanoTime();
        List<Call> expired = new ArrayList<>();
        Call c;
        while ((c = calls.peek()) != null && c.deadlineNanos - now <= 0) {
            expired.add(calls.poll());
        }
        if (c != null) {
            timer = loop.schedule(this::expire, c.deadlineNanos - now, TimeUnit.NANOSECONDS);
        }
        int channelNumber = channel.channelNumber();
        for (Call e : expired) {
            e.fail.accept(new RpcTimeoutException(
                    MethodNames.describe(e.methodKey) + " on channel " + channelNumber + " was not sent: the channel"
                            + " was not recovered within the RPC timeout of "
                            + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms",
                    e.methodKey >>> 16,
                    e.methodKey & 0xFFFF,
                    channelNumber));
        }
    }

    private void cancelTimer() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }
}
