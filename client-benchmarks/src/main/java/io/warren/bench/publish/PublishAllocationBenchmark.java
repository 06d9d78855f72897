package io.warren.bench.publish;

import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.ConnectionFactory;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.concurrent.DefaultEventExecutor;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.bench.PeerProcess;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The whole publish path, end to end into a socket: the caller's checks, the hand-over to the event loop, the
 * framing and the write, and with confirms the tracking and the broker's acks (read and decoded by the client).
 * The other end is the loopback peer in sink mode in its own JVM: it reads everything and confirms with one
 * multiple ack per read, like a broker.
 *
 * <p>The application publishes from a Netty {@code FastThreadLocalThread} (a {@code DefaultEventExecutor}), as a
 * Netty or Vert.x application does (or, {@code thread=plain}, from a plain thread, as most applications do), in batches of {@value #BATCH} handed over by the JMH thread: on such a thread
 * Netty's pooled allocator has a thread cache and recycles buffer objects, so Warren's body (the caller's own
 * buffer, a pooled direct buffer written with the 16 bytes) is as cheap as Netty can make it. On a plain
 * thread the pooled allocator recycles nothing (~110 B per buffer object, Netty's cost, not Warren's).
 * amqp-client publishes from the same kind of thread, one {@code byte[]} allocated once and reused.
 *
 * <p>Read {@code gc.alloc.rate.norm}: bytes per publish over every thread of this JVM (the application thread,
 * Warren's event loop or amqp-client's reader thread). {@code userBuffersOnly} is what the application's bodies
 * cost by themselves (allocated here, released on another event loop): Warren's figure minus it is what Warren
 * allocates beyond the user's own buffer. Leak detection is off, as in production (its sampled
 * records are allocation too).
 *
 * <pre>
 * java -jar client-benchmarks/target/benchmarks.jar PublishAllocationBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s -prof gc
 * </pre>
 *
 * With confirms both clients keep at most 1,000 publishes unconfirmed: Warren by its confirm window
 * ({@link PublishOptions#maxOutstandingConfirms}) and {@link Channel#whenWritable()}, amqp-client by a
 * semaphore released from its {@code ConfirmListener} (PerfTest's way).
 */
// explicit rather than JMH's defaults (5 + 5 iterations of 10 s): the 10 s iterations BENCHMARKS.md's figures used
@Warmup(iterations = 3, time = 10)
@Measurement(iterations = 5, time = 10)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Dio.netty.leakDetection.level=disabled"})
@OperationsPerInvocation(PublishAllocationBenchmark.BATCH)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PublishAllocationBenchmark {

    static final int BATCH = 1000;
    static final int SIZE = 16;
    static final int IN_FLIGHT = 1000;
    static final byte[] BODY = new byte[SIZE];

    @State(Scope.Benchmark)
    public static class Peer {
        /**
         * The application's publishing thread: {@code netty}, a FastThreadLocalThread (a Netty or Vert.x
         * application); {@code plain}, a plain {@code java.lang.Thread} (most applications), where Netty's pooled
         * allocator has no thread cache and its recyclers keep nothing.
         */
        @Param({"netty", "plain"})
        public String thread;

        PeerProcess peer;
        DefaultEventExecutor app;

        @Setup(Level.Trial)
        public void start() throws Exception {
            peer = PeerProcess.startSink();
            java.util.concurrent.ThreadFactory threads =
                    thread.equals("netty") ? new DefaultThreadFactory("app") : r -> new Thread(r, "app");
            app = new DefaultEventExecutor(threads);
        }

        @TearDown(Level.Trial)
        public void stop() throws Exception {
            app.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            peer.close();
        }
    }

    @State(Scope.Benchmark)
    public static class Warren {
        /** Routing key as a String (UTF-8 encoded per publish) or a ShortString (encoded once). */
        @Param({"string", "shortstring"})
        public String key;

        @Param({"false", "true"})
        public boolean confirms;

        AmqpClient client;
        Connection connection;
        Channel channel;
        CharSequence routingKey;
        ByteBufAllocator alloc;
        DefaultEventExecutor app;
        final Runnable fireAndForget = () -> {
            for (int i = 0; i < BATCH; i++) {
                awaitWritable();
                channel.publishNoOutcome("", routingKey, false, BasicProperties.EMPTY, body());
            }
        };
        final Runnable withOutcome = () -> {
            for (int i = 0; i < BATCH; i++) {
                awaitWritable();
                last = channel.publish("", routingKey, false, BasicProperties.EMPTY, body());
            }
        };
        CompletionStage<PublishOutcome> last;

        @Setup(Level.Trial)
        public void connect(Peer peer) throws Exception {
            client = AmqpClient.create();
            ConnectionOptions options = ConnectionOptions.fromUri(peer.peer.uri())
                    .publishOptions(new PublishOptions().maxOutstandingConfirms(IN_FLIGHT));
            connection = client.connect(options).toCompletableFuture().get(30, TimeUnit.SECONDS);
            channel = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
            if (confirms) {
                channel.confirmSelect().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
            routingKey = key.equals("string") ? "publish.bench" : ShortString.of("publish.bench");
            alloc = PooledByteBufAllocator.DEFAULT;
            app = peer.app;
        }

        @TearDown(Level.Trial)
        public void close() throws Exception {
            connection.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
            client.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }

        ByteBuf body() {
            return alloc.directBuffer(SIZE, SIZE).writeBytes(BODY);
        }

        void awaitWritable() {
            if (!channel.isWritable()) {
                channel.whenWritable().toCompletableFuture().join();
            }
        }
    }

    /**
     * The application's own buffers and nothing else: the baseline the targets count beyond ("beyond the
     * user's own buffer"). The same bodies as {@link Warren#body()}, allocated on the application thread and released
     * on another Netty event loop, as Warren's loop releases a body once written.
     */
    @State(Scope.Benchmark)
    public static class UserBuffers {
        final ByteBuf[] bodies = new ByteBuf[BATCH];
        DefaultEventExecutor app;
        DefaultEventExecutor releaser;
        final Runnable allocate = () -> {
            for (int i = 0; i < BATCH; i++) {
                bodies[i] =
                        PooledByteBufAllocator.DEFAULT.directBuffer(SIZE, SIZE).writeBytes(BODY);
            }
        };
        final Runnable release = () -> {
            for (int i = 0; i < BATCH; i++) {
                bodies[i].release();
                bodies[i] = null;
            }
        };

        @Setup(Level.Trial)
        public void start(Peer peer) {
            app = peer.app;
            releaser = new DefaultEventExecutor(new DefaultThreadFactory("releaser"));
        }

        @TearDown(Level.Trial)
        public void stop() throws Exception {
            releaser.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @State(Scope.Benchmark)
    public static class AmqpJavaClient {
        @Param({"false", "true"})
        public boolean confirms;

        com.rabbitmq.client.Connection connection;
        com.rabbitmq.client.Channel channel;
        final Semaphore window = new Semaphore(IN_FLIGHT);
        DefaultEventExecutor app;
        final Callable<Void> batch = () -> {
            for (int i = 0; i < BATCH; i++) {
                if (confirms) {
                    window.acquire();
                }
                channel.basicPublish("", "publish.bench", null, BODY);
            }
            return null;
        };

        @Setup(Level.Trial)
        public void connect(Peer peer) throws Exception {
            app = peer.app;
            ConnectionFactory f = new ConnectionFactory();
            f.setUri(peer.peer.uri());
            connection = f.newConnection("amqp-client publish bench");
            channel = connection.createChannel();
            if (confirms) {
                channel.confirmSelect();
                channel.addConfirmListener(new ConfirmListener() {
                    long last;

                    @Override
                    public void handleAck(long tag, boolean multiple) {
                        release(tag, multiple);
                    }

                    @Override
                    public void handleNack(long tag, boolean multiple) {
                        release(tag, multiple);
                    }

                    private void release(long tag, boolean multiple) {
                        int n = multiple ? (int) (tag - last) : 1;
                        last = Math.max(last, tag);
                        window.release(n);
                    }
                });
            }
        }

        @TearDown(Level.Trial)
        public void close() throws Exception {
            connection.close();
        }
    }

    @Benchmark
    public void warren(Warren w) throws Exception {
        w.app.submit(w.fireAndForget).sync();
    }

    /** With an outcome per publish: the future is the one allocation (a confirm completes it with a shared outcome). */
    @Benchmark
    public CompletionStage<PublishOutcome> warrenWithOutcome(Warren w) throws Exception {
        w.app.submit(w.withOutcome).sync();
        return w.last;
    }

    /** The baseline: what the application's bodies cost by themselves (subtract it from {@code warren}'s figure). */
    @Benchmark
    public void userBuffersOnly(UserBuffers u) throws Exception {
        u.app.submit(u.allocate).sync();
        u.releaser.submit(u.release).sync();
    }

    @Benchmark
    public void amqpClient(AmqpJavaClient a) throws Exception {
        a.app.submit(a.batch).sync();
    }
}
