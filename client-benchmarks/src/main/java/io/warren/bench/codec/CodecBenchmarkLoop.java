package io.warren.bench.codec;

import io.netty.channel.DefaultEventLoop;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;

/**
 * The Netty event-loop thread Warren's side of the codec benchmarks runs on, as Warren does in
 * production. It matters: since Netty 4.2 the {@code Recycler} behind pooled {@code Frame}s, retained
 * slices and duplicates, and the pooled allocator's thread cache only work on threads that clean up
 * their fast thread-locals (event loops), so a JMH worker thread would measure allocations Warren never
 * makes. Each benchmark invocation hands the loop a batch of operations and waits for it; the hand-off
 * is counted in the result, spread over the batch.
 */
final class CodecBenchmarkLoop implements AutoCloseable {

    private final DefaultEventLoop loop = new DefaultEventLoop();

    CodecBenchmarkLoop() {
        boolean cleans = call(FastThreadLocalThread::currentThreadWillCleanupFastThreadLocals);
        if (!cleans) {
            throw new IllegalStateException("the benchmark loop's thread does not clean up its fast thread-locals:"
                    + " Netty's recyclers would be off");
        }
    }

    <T> T call(Callable<T> task) {
        try {
            return loop.submit(task).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    void run(Runnable task) {
        try {
            loop.submit(task).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    @Override
    public void close() {
        loop.shutdownGracefully().syncUninterruptibly();
    }
}
