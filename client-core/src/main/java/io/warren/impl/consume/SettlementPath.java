package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.warren.ChannelClosedException;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.channel.TxGate;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.metrics.MetricsCollector;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscUnboundedArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How one channel's settlements (acks, nacks and rejects, in the broker's tags) reach the wire: the channel's
 * {@link AckCoalescer}, which must see every tag of the channel, and when its frames are written. Split from
 * {@link ChannelConsumers} because it is the one part of consuming that any thread enters:
 * <ul>
 *   <li>on the event loop a settlement goes to the coalescer at once, and its frames are written by one task at
 *       the end of the current event-loop pass: the acks of a read batch become one basic.ack. But when the
 *       channel's manual-ack consumers have a prefetch (their own, or the channel's basic.qos), no more than half
 *       the smallest one waits: once that many tags are acked they are written and flushed at once, in the middle
 *       of the read batch. A batch is up to 16 socket reads (the whole prefetch window when the broker has a
 *       backlog), and every tag held back is one the broker counts against the prefetch: holding them all to the
 *       end of the batch shut the window until the batch was processed, then reopened it all at once, so the
 *       broker sent in bursts and waited in between (stop-and-go). Released by halves, the broker sends the next
 *       half while the application handles this one, and the acks still go out in runs (a flush per half window,
 *       not per delivery);</li>
 *   <li>from another thread the settlement (the delivery itself, or a small {@link Settlement.Tagged}) is
 *       offered to an MPSC queue, and the thread that takes the queue from idle hands ONE drain to the event
 *       loop through the connection's {@link OutboundPath} (so that a thread's "ack, then close" keeps its
 *       order); the drain settles everything queued and writes the frames at once.</li>
 * </ul>
 * Settlements queued and frames the coalescer holds are written before any synchronous method or channel.close the
 * channel sends ({@link #drainAndFlush()}, through {@code ChannelState}), so an ack made before a close is never lost
 * to it, whichever thread's drain it was queued behind.
 *
 * <p>Once basic.recover is written the broker has forgotten the tags it requeues ({@link DeliveryTags#isRequeued}):
 * a settlement of one that reaches the event loop afterwards is dropped here, whatever the way it came (another
 * thread's that raced with basic.recover, a requeueing reject of a delivery that never reached its handler), since
 * the broker would close the channel (406 unknown delivery tag).
 */
final class SettlementPath {

    private static final Logger LOG = LoggerFactory.getLogger(SettlementPath.class);

    private static final AtomicIntegerFieldUpdater<SettlementPath> DRAIN_SCHEDULED =
            AtomicIntegerFieldUpdater.newUpdater(SettlementPath.class, "drainScheduled");

    // immutable
    private final ChannelState state;
    private final int number;
    private final EventExecutor loop;
    private final AckCoalescer acks;
    private final MetricsCollector metrics;
    /** The channel's consumers (its {@link ChannelConsumers}' table), for the held-acks limit. */
    private final ConsumerTable consumers;
    /** The channel state's tags: which of them basic.recover requeued. */
    private final DeliveryTags tags;

    private final Runnable flushTask = this::flushTask;
    private final Runnable drainTask = this::drainAndFlush;

    // event loop only
    private boolean flushScheduled;
    /** Acked tags are written at once when this many wait: half the smallest prefetch (see the class comment). */
    private int acksHeldLimit = Integer.MAX_VALUE;
    /** The prefetch count of the channel's own basic.qos ({@code Channel.basicQos}), 0 for none. */
    private int channelPrefetch;
    /** Whether that basic.qos was global: a window all the channel's consumers share. */
    private boolean channelPrefetchGlobal;

    // any thread (MPSC queue, volatile)
    private final MessagePassingQueue<Settlement> settlements = new MpscUnboundedArrayQueue<>(64);
    private volatile int drainScheduled;
    private volatile boolean closed;
    /**
     * When the oldest delivery still waiting for the application's settlement arrived (the loop's clock), or
     * {@link AckCoalescer#NONE}: the age metrics read. Written on the event loop when it may have changed (a
     * delivery into an empty window, a flush of settlements, the close).
     */
    private volatile long oldestUnackedSince = AckCoalescer.NONE;

    SettlementPath(ChannelState state, MetricsCollector metrics, ConsumerTable consumers, DeliveryTags tags) {
        this.state = state;
        this.number = state.number();
        this.loop = state.outbound().eventLoop();
        this.acks = new AckCoalescer(number, state.alloc());
        this.metrics = metrics;
        this.consumers = consumers;
        this.tags = tags;
    }

    /** Whether the channel has closed: settlements are refused, or dropped when already on their way. Any thread. */
    boolean isClosed() {
        return closed;
    }

    // ---- deliveries (event loop) -------------------------------------------------------------------------

    /**
     * A tag for the coalescer, with its delivery time (read once per read batch). One that comes while basic.recover
     * waits for its recover-ok was requeued with the rest: it waits for no settlement.
     */
    void delivered(long deliveryTag, boolean needsAck) {
        assert loop.inEventLoop() : "settlement path off the event loop";
        if (!needsAck || tags.isRequeued(deliveryTag)) {
            acks.delivered(deliveryTag, false, 0);
            return;
        }
        long now = state.connection().readBatchNanos();
        acks.delivered(deliveryTag, true, now);
        if (oldestUnackedSince == AckCoalescer.NONE) {
            oldestUnackedSince = now;
        }
    }

    /** Whether the broker tag is settled (or needs no settlement): a delivery object may be reused. */
    boolean isSettled(long deliveryTag) {
        assert loop.inEventLoop() : "settlement path off the event loop";
        return acks.isSettled(deliveryTag);
    }

    /**
     * How long the oldest delivery of this channel has waited for the application's settlement, in nanoseconds;
     * 0 when none waits. Any thread.
     */
    long oldestUnacknowledgedAgeNanos() {
        long since = oldestUnackedSince;
        return since == AckCoalescer.NONE ? 0 : Math.max(0, loop.ticker().nanoTime() - since);
    }

    // ---- the held-acks limit (event loop) ----------------------------------------------------------------

    /** A consumer came to or left the channel's {@link ConsumerTable}. */
    void consumersChanged() {
        assert loop.inEventLoop() : "settlement path off the event loop";
        updateAcksHeldLimit();
    }

    /** The broker accepted the channel's own basic.qos. */
    void channelQosAccepted(int prefetchCount, boolean global) {
        assert loop.inEventLoop() : "settlement path off the event loop";
        channelPrefetch = prefetchCount;
        channelPrefetchGlobal = global;
        updateAcksHeldLimit();
    }

    /**
     * Half the smallest prefetch of the manual-ack consumers: with a prefetch of 500, acks wait for at most 250
     * tags, so the broker may send the next 250 while the application handles these. Without a prefetch the
     * broker does not wait for acks, and they wait for the end of the pass.
     */
    private void updateAcksHeldLimit() {
        int limit = Integer.MAX_VALUE;
        boolean manualAcks = false;
        for (ConsumerImpl c : consumers.all()) {
            if (c.noAck()) {
                continue;
            }
            manualAcks = true;
            // a consumer without a prefetch of its own gets the channel's (basic.qos before basic.consume)
            int prefetch = c.options().prefetch() > 0 ? c.options().prefetch() : channelPrefetch;
            if (prefetch > 0) {
                limit = Math.min(limit, Math.max(1, prefetch / 2));
            }
        }
        if (manualAcks && channelPrefetchGlobal && channelPrefetch > 0) {
            // one window for the whole channel (RabbitMQ's global qos): it bounds every consumer's own
            limit = Math.min(limit, Math.max(1, channelPrefetch / 2));
        }
        acksHeldLimit = limit;
    }

    // ---- settling (any thread) ---------------------------------------------------------------------------

    /** A settlement by broker tag ({@code op}: {@link AckCoalescer#ACK} ... with its flags). Any thread. */
    void settle(long brokerTag, int op) {
        if (state.isTransactional()) {
            settleInTx(brokerTag, null, op);
        } else if (loop.inEventLoop()) {
            settleNow(brokerTag, op);
        } else {
            offer(new Settlement.Tagged(brokerTag, op));
        }
    }

    /** A delivery settled. Any thread. */
    void settle(MessageDelivery delivery, int op) {
        if (state.isTransactional()) {
            settleInTx(0, delivery, op);
        } else if (loop.inEventLoop()) {
            settleNow(delivery.settleTag(), op);
            delivery.markSettled();
        } else {
            delivery.settleOp = op;
            offer(delivery);
        }
    }

    /**
     * A transactional channel's settlement keeps its order with its thread's publishes and tx methods, so that a
     * commit covers the settlements made before it and no later one: off the loop it travels the outbound path's
     * queue with them (not the settlement queue, which the flush before a tx method drains whole), and on the loop
     * it waits behind a tx method not yet sent or a commit not yet answered ({@link TxGate}). Any thread.
     */
    private void settleInTx(long brokerTag, MessageDelivery delivery, int op) {
        if (loop.inEventLoop()) {
            settleOrHold(brokerTag, delivery, op);
        } else {
            state.outbound().execute(new TxSettlement(brokerTag, delivery, op));
        }
    }

    private void settleOrHold(long brokerTag, MessageDelivery delivery, int op) {
        long tag = brokerTag;
        if (delivery != null) {
            tag = delivery.settleTag();
            delivery.markSettled(); // its tag is read: it may be reused from here on
        }
        if (tag == 0 && (op & AckCoalescer.MULTIPLE) != 0 && acks.lastDelivered() > 0) {
            // "every delivery so far" means so far at the call: one that arrives while this waits is not covered
            tag = acks.lastDelivered();
        }
        TxGate gate = state.txGate();
        if (gate == null || !gate.holdSettlement(new HeldSettlement(tag, op))) {
            settleNow(tag, op);
        }
    }

    /** A settlement the channel's publisher holds in its place (its tag resolved): settled in its turn. */
    private final class HeldSettlement implements TxGate.Settlement {
        private final long tag;
        private final int op;

        HeldSettlement(long tag, int op) {
            this.tag = tag;
            this.op = op;
        }

        @Override
        public void run() {
            settleNow(tag, op);
        }

        @Override
        public void discard(Throwable cause) {
            // dropped with the channel's close: the broker requeues its unsettled deliveries
        }
    }

    /** A transactional channel's settlement on its way to the event loop, in order with its thread's publishes. */
    private final class TxSettlement implements OutboundPath.DiscardableTask {
        private final long brokerTag;
        private final MessageDelivery delivery;
        private final int op;

        TxSettlement(long brokerTag, MessageDelivery delivery, int op) {
            this.brokerTag = brokerTag;
            this.delivery = delivery;
            this.op = op;
        }

        @Override
        public void run() {
            settleOrHold(brokerTag, delivery, op);
        }

        @Override
        public void discard(Throwable cause) {
            // the event loop is gone, and the connection with it: the broker requeues what was not settled
        }
    }

    /**
     * The refusal of a settlement (tag the application's) on a closed channel, carrying why it closed: nothing can
     * be sent, and the broker requeued every unsettled delivery of the channel with its close. Any thread, once
     * {@link #isClosed()}.
     */
    ChannelClosedException closedTag(long deliveryTag) {
        ChannelClosedException closed = state.closedError(); // reads the cause written before our closed flag
        return new ChannelClosedException(
                "delivery tag " + deliveryTag + " cannot be settled: "
                        + closed.getMessage()
                        + "; nothing is sent (the broker requeued the channel's unsettled deliveries "
                        + "with its close)",
                closed.getCause(),
                closed.replyCode(),
                closed.replyText(),
                closed.classId(),
                closed.methodId(),
                number,
                closed.initiatedByBroker());
    }

    private void offer(Settlement s) {
        settlements.offer(s);
        // Only the thread that takes the queue from idle hands a drain over: one task however many settle.
        if (drainScheduled == 0 && DRAIN_SCHEDULED.compareAndSet(this, 0, 1)) {
            state.outbound().execute(drainTask);
        }
    }

    private void settleNow(long tag, int op) {
        if (closed) {
            return; // the broker requeued it with the channel's close
        }
        if (tags.isRequeued(tag)) {
            droppedRequeued(tag);
            return;
        }
        if (!acks.settle(tag, op)) {
            droppedSettled(tag);
        } else {
            countSettlement(op);
        }
        if (acks.unwrittenAcks() >= acksHeldLimit) {
            // the broker counts these against the prefetch: write them now, not at the end of a long read batch
            flush();
            state.outbound().flushNow();
        } else if (!flushScheduled && acks.hasWork()) {
            flushScheduled = true;
            loop.execute(flushTask);
        }
    }

    /**
     * The coalescer dropped a settlement of a broker tag already settled: a fault of the application's, but for tag 0
     * with multiple (every outstanding delivery) when none is outstanding, which simply has nothing to send.
     */
    private void droppedSettled(long tag) {
        if (tag == 0) {
            LOG.debug(
                    "channel {}: no delivery is outstanding, so settling every outstanding one sends nothing", number);
            return;
        }
        LOG.warn(
                "channel {}: delivery tag {} is already settled; the second settlement is dropped (the broker would"
                        + " close the channel with 406 PRECONDITION_FAILED)",
                number,
                tag);
    }

    private void droppedRequeued(long tag) {
        LOG.debug(
                "channel {}: delivery tag {} (the broker's) was requeued by basic.recover; its settlement is dropped"
                        + " (the broker forgot the tag and redelivers the message)",
                number,
                tag);
    }

    private void countSettlement(int op) {
        if ((op & AckCoalescer.KIND_MASK) == AckCoalescer.ACK) {
            metrics.messageAcknowledged();
        } else {
            metrics.messageRejected();
        }
    }

    /**
     * Settles what other threads queued, then writes what the coalescer holds: the drain task, and the flush before a
     * synchronous method or channel.close (a thread's settlement may wait behind another thread's drain that has not
     * reached the event loop yet, and the method that thread calls next would pass it).
     */
    void drainAndFlush() {
        assert loop.inEventLoop() : "settlement path off the event loop";
        // Cleared before polling: an offer that finds it 0 hands a new drain over, so nothing is stranded.
        drainScheduled = 0;
        Settlement s;
        while ((s = settlements.relaxedPoll()) != null) {
            if (s instanceof MessageDelivery d) {
                d.markSettled(); // read its tag below, before anything may reuse it: this loop is the event loop
            }
            if (closed) {
                continue;
            }
            if (tags.isRequeued(s.settleTag())) {
                droppedRequeued(s.settleTag());
                continue;
            }
            int op = s.settleOp;
            if (!acks.settle(s.settleTag(), op)) {
                droppedSettled(s.settleTag());
            } else {
                countSettlement(op);
            }
        }
        flush();
    }

    private void flushTask() {
        flushScheduled = false;
        flush();
    }

    /** Writes what the coalescer holds. */
    void flush() {
        assert loop.inEventLoop() : "settlement path off the event loop";
        if (acks.hasWork()) {
            ByteBuf frames = acks.takeFrames();
            oldestUnackedSince = acks.oldestPendingSince(); // cheap now: the window starts at a waiting tag
            if (frames != null) {
                state.send(frames);
            }
        }
    }

    // ---- basic.recover (event loop) ----------------------------------------------------------------------

    /**
     * basic.recover was written, right after {@link #flush()} (ChannelRpc writes the acks held before a synchronous
     * method first): the broker requeues everything still unsettled and forgets the tags, so nothing waits for the
     * application any more ({@link DeliveryTags#recoverSent} makes the tags stale).
     */
    void recoverSent() {
        assert loop.inEventLoop() : "settlement path off the event loop";
        acks.forgetWaiting();
        oldestUnackedSince = AckCoalescer.NONE;
    }

    // ---- the close (event loop) --------------------------------------------------------------------------

    /**
     * The channel closed: later settlements are dropped, and what the coalescer holds is written when
     * {@code writeHeld} (connection.close follows, so these still count), else released (the broker requeued
     * everything unsettled).
     */
    void close(boolean writeHeld) {
        assert loop.inEventLoop() : "settlement path off the event loop";
        closed = true;
        oldestUnackedSince = AckCoalescer.NONE; // the broker requeued what was unacknowledged
        ByteBuf frames = acks.takeFrames();
        if (frames != null) {
            if (writeHeld) {
                state.outbound().write(frames);
            } else {
                frames.release();
            }
        }
        acks.clear();
    }
}
