package io.warren.bench.latency;

import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * JMH's worker threads as Netty {@code FastThreadLocalThread}s, the caller of a Netty or Vert.x application: there
 * Netty's pooled allocator has a thread cache and recycles buffer objects, Warren's body buffers among them. JMH
 * makes its executor from this class when the forked JVM is started with
 * {@code -jvmArgsAppend "-Djmh.executor=CUSTOM -Djmh.executor.class=io.warren.bench.latency.NettyThreadExecutor"}.
 */
public final class NettyThreadExecutor extends ThreadPoolExecutor {

    /** The constructor JMH's custom executor calls: its thread count and its name prefix for the threads. */
    public NettyThreadExecutor(int threads, String prefix) {
        super(
                threads,
                threads,
                0,
                TimeUnit.MILLISECONDS,
                new LinkedBlockingQueue<>(),
                new DefaultThreadFactory(prefix, true));
    }
}
