package io.warren.impl.connection;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Tells an open connection that its event loop shut down. A loop that shuts down cancels its timers, but Netty's loop
 * does not always close its sockets first (a shutdown without a quiet period that comes in the middle of a loop round
 * ends the loop without), and then nothing would tell the connection: its close future and every pending call would
 * wait for ever. The watch is one timer, far off and armed again when it runs; its cancellation by the loop is the
 * news. Event loop.
 */
final class LoopShutdownWatch implements Runnable, GenericFutureListener<Future<Object>> {

    /** Long enough to cost nothing, short enough to stay clear of any clock's overflow. */
    private static final long PERIOD_NANOS = TimeUnit.HOURS.toNanos(1);

    private final EventExecutor loop;
    private final Runnable loopShutDown;
    private ScheduledFuture<?> timer;

    /** {@code loopShutDown} runs on {@code loop}, once, when it shuts down while watched. */
    LoopShutdownWatch(EventExecutor loop, Runnable loopShutDown) {
        this.loop = loop;
        this.loopShutDown = loopShutDown;
    }

    /** Starts watching; a loop already going says so at once. */
    void start() {
        assert loop.inEventLoop() : "loop watch off the event loop";
        assert timer == null : "watched twice";
        if (loop.isShuttingDown()) {
            loopShutDown.run();
            return;
        }
        try {
            ScheduledFuture<?> t = loop.schedule(this, PERIOD_NANOS, TimeUnit.NANOSECONDS);
            timer = t;
            t.addListener(this);
        } catch (RejectedExecutionException e) {
            loopShutDown.run();
        }
    }

    /** Stops watching (the connection closed): the cancellation that follows is its own, not the loop's. */
    void stop() {
        ScheduledFuture<?> t = timer;
        if (t != null) {
            timer = null;
            t.cancel(false);
        }
    }

    /** An hour went by: armed again. */
    @Override
    public void run() {
        timer = null;
        start();
    }

    @Override
    public void operationComplete(Future<Object> f) {
        if (f.isCancelled() && f == timer) {
            timer = null;
            loopShutDown.run();
        }
    }
}
