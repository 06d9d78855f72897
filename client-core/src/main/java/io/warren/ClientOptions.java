package io.warren;

import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.Objects;
import java.util.concurrent.ThreadFactory;

/**
 * How an {@link AmqpClient} runs its connections: on its own event loops (native epoll or io_uring when
 * their Netty transport is on the classpath, NIO otherwise), or on an {@link EventLoopGroup} the
 * application already has (a Vert.x instance's, for example), which the client then never shuts down.
 */
public final class ClientOptions {

    private EventLoopGroup eventLoopGroup;
    private int ioThreads;
    private ThreadFactory threadFactory = new DefaultThreadFactory("warren-io", true);
    private boolean preferNativeTransport = true;
    private boolean metricsEnabled;

    public ClientOptions() {}

    public ClientOptions(ClientOptions other) {
        this.eventLoopGroup = other.eventLoopGroup;
        this.ioThreads = other.ioThreads;
        this.threadFactory = other.threadFactory;
        this.preferNativeTransport = other.preferNativeTransport;
        this.metricsEnabled = other.metricsEnabled;
    }

    /** Run on this group (owned by the caller: {@link AmqpClient#close()} leaves it running). */
    public ClientOptions eventLoopGroup(EventLoopGroup group) {
        this.eventLoopGroup = group;
        return this;
    }

    public EventLoopGroup eventLoopGroup() {
        return eventLoopGroup;
    }

    /** Threads of the client's own group; 0 (the default) for Netty's default (2 × cores). */
    public ClientOptions ioThreads(int ioThreads) {
        if (ioThreads < 0) {
            throw new IllegalArgumentException("ioThreads must not be negative: " + ioThreads);
        }
        this.ioThreads = ioThreads;
        return this;
    }

    public int ioThreads() {
        return ioThreads;
    }

    /**
     * Where the client's own event loops get their threads, one per loop, made when the loop is first used (to name
     * them, put them in a thread group, set their priority or whether they are daemons); not used with
     * {@link #eventLoopGroup(EventLoopGroup)}. The default makes daemon threads named {@code warren-io-*}. A loop's
     * thread runs the loop until the client's {@link AmqpClient#close()} and must not be used for anything else.
     *
     * <p>Netty's {@link DefaultThreadFactory} (or any factory of {@link io.netty.util.concurrent.FastThreadLocalThread}s)
     * is best. A plain {@link Thread} works as well: its loop is run through
     * {@link io.netty.util.concurrent.FastThreadLocalThread#runWithFastThreadLocal(Runnable)}, so that it gets pooled
     * buffers and its thread-locals are removed at its end as on Netty's threads; what it costs is that Netty's
     * thread-locals are then looked up in the JDK's {@link ThreadLocal} map, not a field of the thread.
     *
     * @throws NullPointerException when {@code threadFactory} is null
     */
    public ClientOptions threadFactory(ThreadFactory threadFactory) {
        this.threadFactory = Objects.requireNonNull(threadFactory, "threadFactory");
        return this;
    }

    public ThreadFactory threadFactory() {
        return threadFactory;
    }

    /**
     * Use io_uring or epoll when present on the classpath and usable (default); false forces NIO. An idle
     * connection's publish is written by the publishing thread itself on NIO only ({@link
     * PublishOptions#callerWritesPerBurst(int)}); on a native transport every publish goes through the event loop, which
     * at a paced rate costs more CPU and latency per message than NIO saves (BENCHMARKS.md, "Latency, paced").
     */
    public ClientOptions preferNativeTransport(boolean preferNativeTransport) {
        this.preferNativeTransport = preferNativeTransport;
        return this;
    }

    public boolean preferNativeTransport() {
        return preferNativeTransport;
    }

    /**
     * Count what the client's connections do ({@link AmqpClient#metrics()}: messages published, confirmed,
     * consumed, bytes, ...), for the Micrometer binder ({@code io.warren.micrometer.WarrenMeterBinder}) or any
     * other reader. Off by default: then nothing is counted and the publish and delivery paths pay nothing.
     */
    public ClientOptions metricsEnabled(boolean metricsEnabled) {
        this.metricsEnabled = metricsEnabled;
        return this;
    }

    public boolean metricsEnabled() {
        return metricsEnabled;
    }
}
