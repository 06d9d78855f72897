package io.warren.perf;

/**
 * One AMQP client under test, as warren-perf drives it. A run calls, in this order and from one thread:
 * {@link #connect}, {@link #declare}, {@link #startConsumers}, {@link #startProducers}, then
 * {@link #stop} when the time is up, the counts are reached, Ctrl-C is pressed or a failure was
 * reported; {@link #close} always ends it, also after any step threw.
 *
 * <p>To compare clients fairly every driver does the same work:
 * <ul>
 *   <li>one connection and one channel per producer and per consumer (PerfTest's shape);</li>
 *   <li>producers publish bodies of exactly {@link RunOptions#size()} bytes, count each publish with
 *       {@link Metrics#published()}, pace themselves to {@link RunOptions#rate()} and with confirms keep at most
 *       {@link RunOptions#confirm()} publishes outstanding through a {@link PublishGate} (a {@link Pacer} and a
 *       {@link ConfirmTracker}, which also does the confirm latency), and report acks, nacks and, when
 *       mandatory, returns;</li>
 *   <li>each body is stamped with {@link MessageBody#stamp} when the gate lets the publish go, before anything
 *       the client makes the producer wait for (amqp-client blocked in its socket write, Warren not writable):
 *       latency includes the client's back-pressure and leaves out the pace and the confirm window, which are the
 *       tool's and the same for every client. The time is the call as made, not the slot of the pace: a producer
 *       behind its schedule is not counted late;</li>
 *   <li>consumers report each delivery with {@link Metrics#received(long)} given the body's
 *       {@link MessageBody#publishNanos}, acknowledge as {@link RunOptions#autoAck()},
 *       {@link RunOptions#multiAckEvery()} and {@link RunOptions#qos()} say, and after
 *       {@link RunOptions#consumerMessages()} deliveries call {@link Metrics#consumerDone()} and cancel;</li>
 *   <li>a producer that published {@link RunOptions#producerMessages()} waits for its outstanding confirms,
 *       then calls {@link Metrics#producerDone()};</li>
 *   <li>an error that ends a producer or a consumer (channel or connection closed under it) goes to
 *       {@link Metrics#fail(Throwable)}: the run stops and reports it.</li>
 * </ul>
 *
 * <p>A client whose publish returns a future completed by the confirm (Warren's) may keep the window
 * with {@link ConfirmTracker} (numbering its publishes 1, 2, 3, ... on the channel) or on its own; either
 * way every confirmed publish is counted once with {@link Metrics#confirmed(int)} and its latency, from
 * the stamp to the confirm, recorded with {@link Metrics#confirmLatency(long)}. Bodies that are
 * {@code ByteBuf}s are stamped with {@link MessageBody#stamp(io.netty.buffer.ByteBuf, long)} and read
 * with {@link MessageBody#publishNanos(io.netty.buffer.ByteBuf)}.
 *
 * A driver is created by {@link Clients} with a public no-argument constructor and used for one run.
 */
public interface ClientDriver extends AutoCloseable {

    /** The name the tool prints and writes to JSON ({@code amqp-client}, {@code warren}). */
    String name();

    /**
     * The transport the client's I/O ran on, as the JSON records it: {@code nio} or {@code epoll} for a Netty-based
     * client (what it took after {@link #connect}, not what was asked: {@code --transport native} falls
     * back to NIO where no native transport loads), {@code socket} for the JDK's blocking sockets.
     */
    String transport();

    /**
     * Whether the client allocates through Netty: its direct memory is then all the process's, else only what lies
     * outside Netty's allocators (the pools of a Warren run before it stay for the JVM's life).
     */
    default boolean onNetty() {
        return true;
    }

    /**
     * Opens the producers' and consumers' connections and channels to {@link RunOptions#uri()}, enables
     * confirms and sets the prefetch. Throws {@link java.net.ConnectException} (possibly as the cause)
     * when nothing listens there, so the tool can say so.
     */
    void connect(RunOptions options, Metrics metrics) throws Exception;

    /**
     * Declares the exchange and queues and binds them, as {@link RunOptions} describes. Returns how many messages the
     * named queue ({@link RunOptions#queue()}) held already, as its declare-ok counts them; 0 for server-named queues.
     */
    long declare() throws Exception;

    /** Starts consuming on every consumer channel; returns once the broker confirmed each consume. */
    void startConsumers() throws Exception;

    /** Starts the producers (threads or loops of the driver's own) and returns at once. */
    void startProducers() throws Exception;

    /**
     * Stops publishing and consuming: producers stop after their current publish, consumers are
     * cancelled. Returns within a few seconds whatever the broker does. Counting after this call does not
     * matter any more: the run has taken its final reading before calling it.
     */
    void stop() throws Exception;

    /** Closes every connection and releases every resource; idempotent, never throws. */
    @Override
    void close();
}
