package io.warren.impl.metrics;

import io.warren.ClientMetrics;
import io.warren.ConsumerHandle;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The counting {@link MetricsCollector} of a client created with metrics enabled: one {@link LongAdder} per
 * figure (the client's event loops add to it without contention), read through {@link ClientMetrics}.
 */
public final class CountingMetrics implements MetricsCollector, ClientMetrics {

    private static final Logger LOG = LoggerFactory.getLogger(CountingMetrics.class);

    /** What a client without metrics reports: all zeros. */
    public static final ClientMetrics DISABLED = new Disabled();

    private final LongAdder connections = new LongAdder();
    private final LongAdder channels = new LongAdder();
    private final LongAdder published = new LongAdder();
    private final LongAdder failedToPublish = new LongAdder();
    private final LongAdder confirmed = new LongAdder();
    private final LongAdder nacked = new LongAdder();
    private final LongAdder unconfirmed = new LongAdder();
    private final LongAdder returned = new LongAdder();
    private final LongAdder outstandingConfirms = new LongAdder();
    private final LongAdder consumed = new LongAdder();
    private final LongAdder beyondPrefetch = new LongAdder();
    private final LongAdder acknowledged = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final LongAdder bytesWritten = new LongAdder();
    private final LongAdder recoveries = new LongAdder();
    private final LongAdder staleDeliveriesDropped = new LongAdder();
    private final LongAdder overflowDeliveriesDropped = new LongAdder();
    private final Set<ConsumerHandle> consumers = ConcurrentHashMap.newKeySet();
    private final List<Consumer<ConsumerHandle>> consumerListeners = new CopyOnWriteArrayList<>();
    // any thread (volatile): null until someone records them, so that no clock is read for nothing
    private volatile LongConsumer confirmLatency;
    private volatile LongConsumer handlerTime;

    // ---- MetricsCollector --------------------------------------------------------------------------------

    @Override
    public boolean counts() {
        return true;
    }

    @Override
    public void connectionOpened() {
        connections.increment();
    }

    @Override
    public void connectionClosed() {
        connections.decrement();
    }

    @Override
    public void channelOpened() {
        channels.increment();
    }

    @Override
    public void channelClosed() {
        channels.decrement();
    }

    @Override
    public void messagePublished() {
        published.increment();
    }

    @Override
    public void publishFailed() {
        failedToPublish.increment();
    }

    @Override
    public void awaitingConfirm() {
        outstandingConfirms.increment();
    }

    @Override
    public void publishesConfirmed(int count) {
        confirmed.add(count);
        outstandingConfirms.add(-count);
    }

    @Override
    public void publishesNacked(int count) {
        nacked.add(count);
        outstandingConfirms.add(-count);
    }

    @Override
    public void publishesUnconfirmed(int count) {
        unconfirmed.add(count);
        outstandingConfirms.add(-count);
    }

    @Override
    public void publishNotWritten(boolean awaitedConfirm) {
        published.decrement();
        if (awaitedConfirm) {
            outstandingConfirms.decrement();
        }
    }

    @Override
    public void messageReturned() {
        returned.increment();
    }

    @Override
    public void messageConsumed() {
        consumed.increment();
    }

    @Override
    public void deliveredBeyondPrefetch() {
        beyondPrefetch.increment();
    }

    @Override
    public void messageAcknowledged() {
        acknowledged.increment();
    }

    @Override
    public void messageRejected() {
        rejected.increment();
    }

    @Override
    public void readBytes(long bytes) {
        bytesRead.add(bytes);
    }

    @Override
    public void wroteBytes(long bytes) {
        bytesWritten.add(bytes);
    }

    @Override
    public void consumerStarted(ConsumerHandle consumer) {
        if (!consumers.add(consumer)) {
            return;
        }
        consumer.endFuture().whenComplete((cause, error) -> consumers.remove(consumer));
        for (Consumer<ConsumerHandle> l : consumerListeners) {
            tell(l, consumer);
        }
    }

    @Override
    public void recovered() {
        recoveries.increment();
    }

    @Override
    public boolean timesConfirms() {
        return confirmLatency != null;
    }

    @Override
    public void confirmLatency(long nanos) {
        LongConsumer r = confirmLatency;
        if (r != null) {
            record(r, nanos);
        }
    }

    @Override
    public boolean timesHandlers() {
        return handlerTime != null;
    }

    @Override
    public void handlerTime(long nanos) {
        LongConsumer r = handlerTime;
        if (r != null) {
            record(r, nanos);
        }
    }

    private static void record(LongConsumer recorder, long nanos) {
        try {
            recorder.accept(nanos);
        } catch (RuntimeException e) {
            LOG.warn("metrics recorder failed", e);
        }
    }

    @Override
    public void staleDeliveryDropped() {
        staleDeliveriesDropped.increment();
    }

    @Override
    public void overflowDeliveryDropped() {
        overflowDeliveriesDropped.increment();
    }

    // ---- ClientMetrics -----------------------------------------------------------------------------------

    @Override
    public boolean enabled() {
        return true;
    }

    @Override
    public long connections() {
        return connections.sum();
    }

    @Override
    public long channels() {
        return channels.sum();
    }

    @Override
    public long published() {
        return published.sum();
    }

    @Override
    public long failedToPublish() {
        return failedToPublish.sum();
    }

    @Override
    public long confirmed() {
        return confirmed.sum();
    }

    @Override
    public long nacked() {
        return nacked.sum();
    }

    @Override
    public long unconfirmed() {
        return unconfirmed.sum();
    }

    @Override
    public long returned() {
        return returned.sum();
    }

    @Override
    public long outstandingConfirms() {
        return outstandingConfirms.sum();
    }

    @Override
    public long consumed() {
        return consumed.sum();
    }

    @Override
    public long deliveriesBeyondPrefetch() {
        return beyondPrefetch.sum();
    }

    @Override
    public long acknowledged() {
        return acknowledged.sum();
    }

    @Override
    public long rejected() {
        return rejected.sum();
    }

    @Override
    public long bytesRead() {
        return bytesRead.sum();
    }

    @Override
    public long bytesWritten() {
        return bytesWritten.sum();
    }

    @Override
    public long recoveries() {
        return recoveries.sum();
    }

    @Override
    public long staleDeliveriesDropped() {
        return staleDeliveriesDropped.sum();
    }

    @Override
    public long overflowDeliveriesDropped() {
        return overflowDeliveriesDropped.sum();
    }

    @Override
    public long oldestUnacknowledgedMillis() {
        long nanos = 0;
        for (ConsumerHandle c : consumers) {
            if (c instanceof UnacknowledgedAge consumer) {
                nanos = Math.max(nanos, consumer.oldestUnacknowledgedAgeNanos());
            }
        }
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    @Override
    public Collection<ConsumerHandle> consumers() {
        return List.copyOf(consumers);
    }

    @Override
    public void onConsumer(Consumer<ConsumerHandle> listener) {
        consumerListeners.add(listener);
        for (ConsumerHandle c : consumers) {
            tell(listener, c);
        }
    }

    @Override
    public synchronized void onConfirmLatency(LongConsumer nanos) {
        Objects.requireNonNull(nanos, "nanos");
        LongConsumer before = confirmLatency;
        confirmLatency = before == null ? nanos : before.andThen(nanos);
    }

    @Override
    public synchronized void onHandlerTime(LongConsumer nanos) {
        Objects.requireNonNull(nanos, "nanos");
        LongConsumer before = handlerTime;
        handlerTime = before == null ? nanos : before.andThen(nanos);
    }

    private static void tell(Consumer<ConsumerHandle> listener, ConsumerHandle consumer) {
        try {
            listener.accept(consumer);
        } catch (RuntimeException e) {
            LOG.warn("consumer metrics listener failed", e);
        }
    }

    @Override
    public String toString() {
        return "ClientMetrics{connections=" + connections() + ", channels=" + channels() + ", published="
                + published() + ", confirmed=" + confirmed() + ", nacked=" + nacked() + ", returned=" + returned()
                + ", outstandingConfirms=" + outstandingConfirms() + ", consumed=" + consumed()
                + ", deliveriesBeyondPrefetch=" + deliveriesBeyondPrefetch() + ", acknowledged="
                + acknowledged() + ", rejected=" + rejected() + ", bytesRead=" + bytesRead() + ", bytesWritten="
                + bytesWritten() + ", recoveries=" + recoveries() + "}";
    }

    /** All zeros: metrics were not enabled. */
    private static final class Disabled implements ClientMetrics {
        @Override
        public boolean enabled() {
            return false;
        }

        @Override
        public long connections() {
            return 0;
        }

        @Override
        public long channels() {
            return 0;
        }

        @Override
        public long published() {
            return 0;
        }

        @Override
        public long failedToPublish() {
            return 0;
        }

        @Override
        public long confirmed() {
            return 0;
        }

        @Override
        public long nacked() {
            return 0;
        }

        @Override
        public long unconfirmed() {
            return 0;
        }

        @Override
        public long returned() {
            return 0;
        }

        @Override
        public long outstandingConfirms() {
            return 0;
        }

        @Override
        public long consumed() {
            return 0;
        }

        @Override
        public long deliveriesBeyondPrefetch() {
            return 0;
        }

        @Override
        public long acknowledged() {
            return 0;
        }

        @Override
        public long rejected() {
            return 0;
        }

        @Override
        public long bytesRead() {
            return 0;
        }

        @Override
        public long bytesWritten() {
            return 0;
        }

        @Override
        public long recoveries() {
            return 0;
        }

        @Override
        public long staleDeliveriesDropped() {
            return 0;
        }

        @Override
        public long overflowDeliveriesDropped() {
            return 0;
        }

        @Override
        public long oldestUnacknowledgedMillis() {
            return 0;
        }

        @Override
        public Collection<ConsumerHandle> consumers() {
            return List.of();
        }

        @Override
        public void onConsumer(Consumer<ConsumerHandle> listener) {
            // nothing is counted, so no consumer is ever reported
        }

        @Override
        public void onConfirmLatency(LongConsumer nanos) {
            // nothing is measured
        }

        @Override
        public void onHandlerTime(LongConsumer nanos) {
            // nothing is measured
        }
    }
}
