package io.warren.impl.queue;

import io.netty.util.concurrent.DefaultThreadFactory;
import java.lang.reflect.Method;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/** Consumer executors for the tests, and a way to tell whether a callback runs on one of them. */
final class ConsumerExecutors {

    private static final Method NEW_VIRTUAL_THREAD_PER_TASK_EXECUTOR = findVirtualThreadFactory();

    private ConsumerExecutors() {}

    private static Method findVirtualThreadFactory() {
        try {
            // JDK 21+; looked up reflectively so that the tests compile with --release 17.
            return Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    static boolean hasVirtualThreads() {
        return NEW_VIRTUAL_THREAD_PER_TASK_EXECUTOR != null;
    }

    /**
     * A virtual-thread-per-task executor when the JDK has one (every task on a new thread), else a
     * cached worker pool, where successive tasks also land on whichever thread is free.
     */
    static ExecutorService virtualThreadsOrWorkerPool() {
        if (NEW_VIRTUAL_THREAD_PER_TASK_EXECUTOR == null) {
            return Executors.newCachedThreadPool(new DefaultThreadFactory("consumer-cached", true));
        }
        try {
            return (ExecutorService) NEW_VIRTUAL_THREAD_PER_TASK_EXECUTOR.invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static String virtualThreadsOrWorkerPoolName() {
        return hasVirtualThreads() ? "virtual thread per task" : "cached worker pool (no virtual threads on this JDK)";
    }

    static ExecutorService workerPool(int threads) {
        return Executors.newFixedThreadPool(threads, new DefaultThreadFactory("consumer-pool", true));
    }

    static void shutdown(ExecutorService executor) throws InterruptedException {
        executor.shutdown();
        if (!executor.awaitTermination(30, TimeUnit.SECONDS)) {
            throw new AssertionError("consumer executor did not terminate");
        }
    }

    /** Runs every task through {@code delegate} and knows whether the current thread is in one of them. */
    static final class Marking implements Executor {
        private static final ThreadLocal<Marking> CURRENT = new ThreadLocal<>();

        private final Executor delegate;

        Marking(Executor delegate) {
            this.delegate = delegate;
        }

        @Override
        public void execute(Runnable task) {
            delegate.execute(() -> {
                Marking outer = CURRENT.get();
                CURRENT.set(this);
                try {
                    task.run();
                } finally {
                    CURRENT.set(outer);
                }
            });
        }

        boolean inside() {
            return CURRENT.get() == this;
        }
    }
}
