package io.warren.impl.publish;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.WritabilityListener;
import java.util.ArrayList;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who waits for one channel's publishes to turn writable: the futures of {@link Publisher#whenWritable} and the
 * {@link WritabilityListener}s. Listeners hear each change; waiters are woken in the turns {@link PublishFlow} gives
 * its publishers ({@link PublishFlow#mayWake}), judged by the channel's last publish that reached the loop.
 *
 * <p>Threads: listeners are added and removed on any thread; the rest runs on the event loop.
 */
final class WritabilityWaiters {

    private static final Logger LOG = LoggerFactory.getLogger(Publisher.class); // its log settings cover what it tells

    private final Channel channel;
    private final PublishFlow flow;

    // any thread
    private final CopyOnWriteArrayList<WritabilityListener> listeners = new CopyOnWriteArrayList<>();

    // event loop only
    private ArrayList<CompletableFuture<Void>> waiters;
    /** What listeners were last told; a channel starts writable. */
    private boolean lastWritable = true;
    /**
     * What a woken waiter is expected to publish: the counted size (wire size and task overhead) of this channel's
     * last publish that reached the loop. Publishes written by callers' threads do not update it; 0 (none yet) wakes
     * always.
     */
    private long lastTaskBytes;

    WritabilityWaiters(Channel channel, PublishFlow flow) {
        this.channel = channel;
        this.flow = flow;
    }

    void addListener(WritabilityListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    void removeListener(WritabilityListener listener) {
        listeners.remove(listener);
    }

    /** Nobody to tell: the writability need not be worked out. Event loop. */
    boolean isEmpty() {
        return waiters == null && listeners.isEmpty();
    }

    /** A publish of {@code bytes} (counted size) reached the loop. Event loop. */
    void lastTaskBytes(long bytes) {
        lastTaskBytes = bytes;
    }

    /** Waits for the next {@link #changed(boolean) writable}. Event loop. */
    void add(CompletableFuture<Void> waiter) {
        if (waiters == null) {
            waiters = new ArrayList<>(2);
        }
        waiters.add(waiter);
    }

    /**
     * The channel's writability now: listeners hear a change, and waiters are completed when it is writable, unless
     * the flow's round of telling has woken enough publishers' threads already. Event loop.
     */
    void changed(boolean writable) {
        if (writable != lastWritable) {
            lastWritable = writable;
            for (WritabilityListener l : listeners) {
                try {
                    l.writabilityChanged(channel, writable);
                } catch (RuntimeException e) {
                    LOG.warn("channel {}: writability listener failed", channel.channelNumber(), e);
                }
            }
        }
        if (writable && waiters != null && flow.mayWake(lastTaskBytes * waiters.size())) {
            ArrayList<CompletableFuture<Void>> w = waiters;
            waiters = null;
            for (CompletableFuture<Void> f : w) {
                f.complete(null);
            }
        }
    }

    /** The channel is closed: every waiter fails, each with an error of its own. Event loop. */
    void failAll(Supplier<? extends AmqpException> error) {
        if (waiters != null) {
            ArrayList<CompletableFuture<Void>> w = waiters;
            waiters = null;
            for (CompletableFuture<Void> f : w) {
                f.completeExceptionally(error.get());
            }
        }
    }
}
