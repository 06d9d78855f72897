package io.warren.impl.publish;

import io.netty.channel.ChannelConfig;
import io.netty.channel.WriteBufferWaterMark;
import io.warren.PublishOptions;

/**
 * A connection's write-buffer high-water mark, and what follows from it: the queue's mark, the flush threshold, the
 * size of a large heap body. Sets Netty's water marks when made; a connection left at the default raises them once,
 * at its first large publish ({@link #LARGE_MESSAGE_MARK}).
 *
 * <p>Threads: any. Netty's config holds both marks in one volatile field; the raise writes the mark, then the flush
 * threshold, then {@code raised}, so a thread that finds it raised finds the rest too.
 */
final class WriteBufferMark {

    /**
     * The high-water mark a connection left at the default takes from its first large publish on (a wire size of at
     * least a quarter of the default mark, about a 64 KiB body: the size from which a heap body waits for the socket,
     * {@link #largeHeapBody()}), for good, whether its body is on the heap or not. With the default,
     * every message of half the mark or more made its publisher stop: one thread's wait and one wake from the event
     * loop per message. 16 threads' 256 KiB bodies into RabbitMQ ran at 5,766 msg/s against amqp-client's 8,984 with
     * 6.2 context switches per message, and at 8,902 with this mark (1.3 switches; 7,815 with 2 MiB); 16 threads'
     * 1 MiB bodies at 2,073 and 2,269 (amqp-client 2,356); one thread's 1 MiB bodies at 2,339 and 2,524 (amqp-client
     * 2,358). 64 KiB bodies, two to the queue's mark, stopped their publisher every other message: one thread's ran at
     * 33,655 msg/s with 1.26 context switches per message, and at 43,814 with the raise (0.26; amqp-client 30,046);
     * 16 threads' at 20,319 and 27,896 (amqp-client 26,884).
     *
     * <p>What it costs: more of the application's bodies wait in the client (an application that fills a direct
     * buffer per 1 MiB message held 44.5 MiB of them at the peak against 16.5), and a connection that floods small
     * messages after a large one queues them thousands deep (a 16 B flood with this mark allocated 124 B per
     * message against 50). So the default stays for connections of small messages; the mark is raised only where a
     * heap body waiting costs no direct memory ({@code OutboundPath.stagesHeapBodies()}), and never past a quarter
     * of {@link PublishOptions#maxPendingBytes()}, so that publishers wait before publishes are refused.
     * amqp-client's bound is the socket's send buffer, which Linux grows to 4 MiB.
     */
    static final int LARGE_MESSAGE_MARK = 4 << 20;

    /** The smallest flush threshold, whatever the mark. */
    private static final int MIN_FLUSH_THRESHOLD = 4096;

    private final ChannelConfig config;
    /** The wire size from which a publish raises the mark to {@link #raisedMark}; 0: never. */
    private final long raisesFrom;
    /** {@link #LARGE_MESSAGE_MARK}, or a quarter of {@link PublishOptions#maxPendingBytes()} when that is less. */
    private final int raisedMark;
    /** See {@link #largeHeapBody()}. */
    private final int largeHeapBody;
    /** Whether the mark was raised. */
    private volatile boolean raised;
    /** Half the high-water mark: see {@link #flushThreshold()}. */
    private volatile int flushThreshold;

    /**
     * Sets {@code options}' mark on {@code config}. {@code stagesHeapBodies}: whether a heap body waiting costs no
     * direct memory on this connection, the condition for a raise.
     */
    WriteBufferMark(ChannelConfig config, PublishOptions options, boolean stagesHeapBodies) {
        this.config = config;
        int high = options.writeBufferHighWaterMark();
        config.setWriteBufferWaterMark(new WriteBufferWaterMark(high / 2, high));
        // a mark the application chose is kept as it is
        this.raisedMark = (int) Math.min(LARGE_MESSAGE_MARK, options.maxPendingBytes() / 4);
        this.raisesFrom =
                high == PublishOptions.DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK && raisedMark > high && stagesHeapBodies
                        ? high / 4
                        : 0;
        this.largeHeapBody = high / 4;
        this.flushThreshold = Math.max(MIN_FLUSH_THRESHOLD, config.getWriteBufferHighWaterMark() / 2);
    }

    /** A publish of {@code bytes} on the wire is accepted: the first large one raises the mark. Any thread. */
    void publishing(long bytes) {
        if (raisesFrom > 0 && bytes >= raisesFrom && !raised) {
            raise();
        }
    }

    /**
     * Raises the mark to {@link #raisedMark} for good, and the flush threshold to half of it. A higher mark only lets
     * publishers on sooner (a channel unwritable now turns writable when the socket has taken a whole entry and the
     * rest is below the new low mark, told as any turn is).
     */
    private void raise() {
        config.setWriteBufferWaterMark(new WriteBufferWaterMark(raisedMark / 2, raisedMark));
        // a drain's publishes go out in writes of up to half the mark, as with any mark: the broker pays per write
        flushThreshold = raisedMark / 2;
        raised = true; // last: a publisher that finds it set finds the mark raised
    }

    /** Netty's high-water mark now. */
    int high() {
        return config.getWriteBufferHighWaterMark();
    }

    /** The bytes queued for the event loop above which the connection reads unwritable: half the mark. */
    int queueMark() {
        return high() / 2;
    }

    /** Written bytes after which a drain flushes: half the mark, so unflushed bytes alone never stop publishers. */
    int flushThreshold() {
        return flushThreshold;
    }

    /**
     * The size from which a heap body waits for the socket: a quarter of the mark the connection started with. Not
     * of a raised mark: the bodies that raised it would then pass an unwritable socket.
     */
    int largeHeapBody() {
        return largeHeapBody;
    }
}
