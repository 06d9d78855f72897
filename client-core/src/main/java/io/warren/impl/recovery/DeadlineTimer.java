package io.warren.impl.recovery;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The one timer of a hold ({@link HeldCalls}, {@link HeldPublishes}), armed on recovery's event loop for the oldest
 * of its deadlines, which also tells the hold when that loop shut down: a loop that shuts down cancels its timers
 * (and drops unrun one armed from a cancelled one's listener), after which nothing would send what is held nor time
 * it out. {@link ConnectionRecovery} keeps one armed while it recovers for that alone. Event loop.
 */
final class DeadlineTimer {

    private final Runnable expire;
    private final Consumer<Throwable> loopShutDown;
    /** Tells the timer's end: run, cancelled by {@link #cancel}, or cancelled by a loop that shuts down. */
    private final GenericFutureListener<Future<Object>> listener = this::done;

    private ScheduledFuture<?> timer;

    /**
     * A timer that runs {@code expire} when armed and due (which calls {@link #fired()} first), and
     * {@code loopShutDown} (with the refusal, or null) when the loop shut down under it or refuses to arm it.
     */
    DeadlineTimer(Runnable expire, Consumer<Throwable> loopShutDown) {
        this.expire = expire;
        this.loopShutDown = loopShutDown;
    }

    boolean isArmed() {
        return timer != null;
    }

    /** Arms it on {@code loop} for {@code delayNanos} from now; a loop that is going says so at once. */
    void arm(EventExecutor loop, long delayNanos) {
        assert timer == null : "armed twice: the first timer would run unseen"; // its cancel would go unheard too
        if (loop.isShuttingDown()) {
            loopShutDown.accept(null);
            return;
        }
        ScheduledFuture<?> t;
        try {
            t = loop.schedule(expire, delayNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            loopShutDown.accept(e);
            return;
        }
        timer = t;
        t.addListener(listener);
    }

    /** The expiry runs: it is not armed any more. */
    void fired() {
        timer = null;
    }

    void cancel() {
        ScheduledFuture<?> t = timer;
        if (t != null) {
            timer = null; // first: done() then takes the cancellation for this one's, not the loop's
            t.cancel(false);
        }
    }

    private void done(Future<Object> f) {
        if (f.isCancelled() && f == timer) {
            timer = null;
            loopShutDown.accept(null);
        }
    }
}
