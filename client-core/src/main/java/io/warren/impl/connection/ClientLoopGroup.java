package io.warren.impl.connection;

import io.netty.channel.AbstractEventLoopGroup;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelPromise;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.SingleThreadIoEventLoop;
import io.netty.util.NettyRuntime;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.FastThreadLocalThread;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.FutureListener;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.netty.util.concurrent.Promise;
import io.netty.util.internal.SystemPropertyUtil;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The event loops a client creates for itself and shuts down at its close: Netty's {@link SingleThreadIoEventLoop}s,
 * handed out in turn by {@link #next()}, as {@code MultiThreadIoEventLoopGroup} does, but whose termination is told
 * without Netty's {@code GlobalEventExecutor}.
 *
 * <p>Why: a Netty loop's termination future runs its listeners on {@code GlobalEventExecutor}, whose thread is
 * started for them, is not a daemon, and stays a one-second quiet period; and every loop of Netty's group has
 * listeners (the group's own, and Bootstrap's name resolver group's, added at a loop's first connect). A program
 * that closed its client exited a second late. Here each loop's {@link #terminationFuture()} is a promise of the
 * loop's own, completed by the loop's thread on its way out (the loop terminated, Netty's own future complete), and
 * its listeners run right there, on that thread ({@link ImmediateEventExecutor}); Netty's future keeps no
 * listener. No thread but the loops' is ever started. The group's termination is told the same way, on the last
 * loop thread to end.
 *
 * <p>Thread-safe. A loop never started is started by its shutdown, to terminate (Netty's rule), so its termination
 * still comes from its thread; a loop whose thread could not be started fails its termination future at its shutdown.
 */
public final class ClientLoopGroup extends AbstractEventLoopGroup implements IoEventLoopGroup {

    private final IoEventLoop[] loops;
    private final List<EventExecutor> readOnly;
    private final AtomicInteger nextIndex = new AtomicInteger();
    private final AtomicInteger terminatedLoops = new AtomicInteger();
    /** Completed once, on the thread that tells of the last loop's termination. */
    private final Promise<Void> terminated = ImmediateEventExecutor.INSTANCE.newPromise();

    /**
     * {@code threads} loops, each on a thread of {@code threadFactory} (made when the loop is first used), each with
     * an I/O handler of {@code ioHandlerFactory}; 0 threads means Netty's default ({@link #defaultThreads()}).
     */
    public ClientLoopGroup(int threads, ThreadFactory threadFactory, IoHandlerFactory ioHandlerFactory) {
        if (threads < 0) {
            throw new IllegalArgumentException("threads must not be negative: " + threads);
        }
        int n = threads == 0 ? defaultThreads() : threads;
        loops = new IoEventLoop[n];
        List<EventExecutor> all = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            try {
                loops[i] = new ClientLoop(this, new LoopThreads(threadFactory), ioHandlerFactory);
            } catch (RuntimeException | Error e) {
                for (int j = 0; j < i; j++) {
                    loops[j].shutdownGracefully(0, 0, TimeUnit.SECONDS);
                }
                throw e;
            }
            all.add(loops[i]);
        }
        readOnly = Collections.unmodifiableList(all);
        FutureListener<Object> counter = new TerminationCounter(this);
        for (IoEventLoop loop : loops) {
            loop.terminationFuture().addListener(counter);
        }
    }

    /** Netty's default number of event loops: {@code io.netty.eventLoopThreads}, else twice the processors. */
    public static int defaultThreads() {
        return Math.max(
                1, SystemPropertyUtil.getInt("io.netty.eventLoopThreads", NettyRuntime.availableProcessors() * 2));
    }

    @Override
    public IoEventLoop next() {
        return loops[Math.floorMod(nextIndex.getAndIncrement(), loops.length)];
    }

    /** What Netty's groups do: the next loop registers it. */
    @Override
    @Deprecated
    @SuppressWarnings("deprecation")
    public ChannelFuture register(Channel channel, ChannelPromise promise) {
        return next().register(channel, promise);
    }

    @Override
    public Iterator<EventExecutor> iterator() {
        return readOnly.iterator();
    }

    /**
     * Shuts every loop down; the returned future ({@link #terminationFuture()}) completes when all have ended. A loop
     * whose thread cannot start to terminate throws what Netty rethrows (an {@link Error}: a thread the JVM could not
     * create); the others are shut down all the same, and the first failure is thrown after.
     */
    @Override
    public Future<?> shutdownGracefully(long quietPeriod, long timeout, TimeUnit unit) {
        Throwable failure = null;
        for (IoEventLoop loop : loops) {
            try {
                loop.shutdownGracefully(quietPeriod, timeout, unit);
            } catch (RuntimeException | Error e) {
                if (failure == null) {
                    failure = e;
                } else if (e != failure) {
                    // the same instance is the JVM's preallocated error thrown again: addSuppressed would refuse it
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure instanceof RuntimeException e) {
            throw e;
        }
        if (failure != null) {
            throw (Error) failure;
        }
        return terminated;
    }

    /**
     * Completes when every loop has terminated, on the last loop thread to end (its listeners run there, or at once
     * on the thread that adds them if already complete).
     */
    @Override
    public Future<?> terminationFuture() {
        return terminated;
    }

    @Override
    @Deprecated
    public void shutdown() {
        for (IoEventLoop loop : loops) {
            loop.shutdown();
        }
    }

    @Override
    public boolean isShuttingDown() {
        for (IoEventLoop loop : loops) {
            if (!loop.isShuttingDown()) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean isShutdown() {
        for (IoEventLoop loop : loops) {
            if (!loop.isShutdown()) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean isTerminated() {
        for (IoEventLoop loop : loops) {
            if (!loop.isTerminated()) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        for (IoEventLoop loop : loops) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !loop.awaitTermination(left, TimeUnit.NANOSECONDS)) {
                return isTerminated();
            }
        }
        return true;
    }

    /** Counts the loops' terminations (told on each loop's thread) and completes the group's at the last. */
    private static final class TerminationCounter implements FutureListener<Object> {
        private final ClientLoopGroup group;

        TerminationCounter(ClientLoopGroup group) {
            this.group = group;
        }

        @Override
        public void operationComplete(Future<Object> loopTerminated) {
            if (group.terminatedLoops.incrementAndGet() == group.loops.length) {
                group.terminated.trySuccess(null);
            }
        }
    }

    /**
     * A {@link SingleThreadIoEventLoop} whose {@link #terminationFuture()} is its own promise, told by its thread
     * ({@link LoopThread}) once the loop has terminated, or at once if that thread could not be started: never by
     * Netty's {@code GlobalEventExecutor}.
     */
    private static final class ClientLoop extends SingleThreadIoEventLoop {
        private final Promise<Void> terminated = ImmediateEventExecutor.INSTANCE.newPromise();

        ClientLoop(ClientLoopGroup parent, LoopThreads threads, IoHandlerFactory ioHandlerFactory) {
            super(parent, threads, ioHandlerFactory);
            // before any task can reach this loop: its thread starts with the first one
            threads.loop = this;
        }

        @Override
        public Future<?> terminationFuture() {
            return terminated;
        }

        @Override
        public Future<?> shutdownGracefully(long quietPeriod, long timeout, TimeUnit unit) {
            try {
                super.shutdownGracefully(quietPeriod, timeout, unit);
            } finally {
                // also when Netty, having failed its future for a thread that could not start, rethrows an Error
                tellIfTerminated();
            }
            return terminated;
        }

        @Override
        @Deprecated
        @SuppressWarnings("deprecation")
        public void shutdown() {
            try {
                super.shutdown();
            } finally {
                tellIfTerminated();
            }
        }

        /**
         * Any thread: mirrors Netty's own termination future once it is complete. Its thread does so on its way out;
         * a shutdown does so for a loop whose thread could not be started (Netty's future failed, no thread to tell).
         */
        void tellIfTerminated() {
            Future<?> netty = super.terminationFuture();
            if (netty.isDone()) {
                if (netty.isSuccess()) {
                    terminated.trySuccess(null);
                } else {
                    terminated.tryFailure(netty.cause());
                }
            }
        }
    }

    /**
     * Starts a loop's thread (what Netty's {@code ThreadPerTaskExecutor} does), wrapping the loop's run so that the
     * thread, having ended the loop, tells of its termination.
     */
    private static final class LoopThreads implements Executor {
        private final ThreadFactory threadFactory;
        /** Set in the loop's constructor, before its first task starts a thread; read once per thread started. */
        volatile ClientLoop loop;

        LoopThreads(ThreadFactory threadFactory) {
            this.threadFactory = threadFactory;
        }

        @Override
        public void execute(Runnable loopRun) {
            threadFactory.newThread(new LoopThread(loopRun, loop)).start();
        }
    }

    /**
     * A loop's thread: runs the loop (which returns once the loop has terminated), then tells of it. A plain thread
     * from the application's factory runs both as a {@link FastThreadLocalThread} would: the pool then gives it
     * buffers and {@link ConnectionAllocator} takes it for an event loop, and its thread-locals are removed at its end.
     */
    private static final class LoopThread implements Runnable {
        private final Runnable loopRun;
        private final ClientLoop loop;

        LoopThread(Runnable loopRun, ClientLoop loop) {
            this.loopRun = loopRun;
            this.loop = loop;
        }

        @Override
        public void run() {
            if (!FastThreadLocalThread.currentThreadHasFastThreadLocal()) {
                // comes back here, now with fast thread-locals (no lambda: the loop's first use is a connect)
                FastThreadLocalThread.runWithFastThreadLocal(this);
                return;
            }
            try {
                loopRun.run();
            } finally {
                loop.tellIfTerminated();
            }
        }
    }
}
