package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpException;
import io.warren.AsyncDeliveryHandler;
import io.warren.ChannelClosedException;
import io.warren.ConnectionClosedException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerCancelledException;
import io.warren.ConsumerHandle;
import io.warren.DeliveryHandler;
import io.warren.StaleDeliveryException;
import io.warren.codec.Frame;
import io.warren.codec.method.BasicCancel;
import io.warren.codec.method.BasicConsumeOk;
import io.warren.codec.method.MethodIds;
import io.warren.impl.AssembledContent;
import io.warren.impl.ChannelRpc;
import io.warren.impl.ChannelState;
import io.warren.impl.ContentAssembler;
import io.warren.impl.MetricsCollector;
import io.warren.impl.OutboundPath;
import io.warren.impl.recovery.ConnectionRecovery;
import io.warren.impl.recovery.TopologyRecorder;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscUnboundedArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consuming side of one channel: its consumers by tag, basic.deliver and the broker's basic.cancel (through
 * the channel's {@code MethodHandler} seam), the deliveries' content assembly, and the channel's
 * acknowledgements ({@link AckCoalescer}). One per channel, made with the channel; event loop only unless a
 * method says otherwise.
 *
 * <h2>Settlements</h2>
 * Acks, nacks and rejects, from a {@link io.warren.Delivery} or from {@code Channel.basicAck} and friends, all
 * come here so that the coalescer sees every tag of the channel:
 * <ul>
 *   <li>on the event loop they go to the coalescer at once, and its frames are written by one task at the end
 *       of the current event-loop pass: the acks of a read batch become one basic.ack. But when the channel's
 *       manual-ack consumers have a prefetch (their own, or the channel's basic.qos), no more than half the
 *       smallest one waits: once that many tags are acked they are written and flushed at once, in the middle
 *       of the read batch. A batch is up to 16
 *       socket reads (the whole prefetch window when the broker has a backlog), and every tag held back is one
 *       the broker counts against the prefetch: holding them all to the end of the batch shut the window until
 *       the batch was processed, then reopened it all at once, so the broker sent in bursts and waited in
 *       between (stop-and-go). Released by halves, the broker sends the next half while the application
 *       handles this one, and the acks still go out in runs (a flush per half window, not per delivery);</li>
 *   <li>from another thread the settlement (the delivery itself, or a small {@link Settlement.Tagged}) is
 *       offered to an MPSC queue, and the thread that takes the queue from idle hands ONE drain to the event
 *       loop through the connection's {@link OutboundPath} (so that a thread's "ack, then close" keeps its
 *       order); the drain settles everything queued and writes the frames at once.</li>
 * </ul>
 * Frames the coalescer holds are written before any synchronous method or channel.close the channel sends
 * ({@link #flush()}, called by {@code ChannelState}), so an ack made before a close is never lost to it.
 *
 * <h2>Delivery tags across recovery</h2>
 * The broker numbers a recovered channel's deliveries from 1 again, so the tags the application sees are the
 * broker's plus a {@link #tagOffset()}: 0 on a channel never lost, and on a recovered one the highest tag the
 * application saw before the loss. Tags never repeat on a {@link io.warren.Channel}: one at or below the offset
 * can only be from before the loss, and {@link #settle(long, boolean, boolean, int)} refuses it with a
 * {@link StaleDeliveryException} instead of sending a tag that names another message (or none) on the new
 * channel. The offset is subtracted before anything reaches the {@link AckCoalescer}, which deals in the
 * broker's tags only. (The official Java client does the same in its {@code RecoveryAwareChannelN}.)
 */
public final class ChannelConsumers implements ContentAssembler.Listener {

    private static final Logger LOG = LoggerFactory.getLogger(ChannelConsumers.class);

    private static final AtomicIntegerFieldUpdater<ChannelConsumers> DRAIN_SCHEDULED =
            AtomicIntegerFieldUpdater.newUpdater(ChannelConsumers.class, "drainScheduled");
    private static final AtomicLongFieldUpdater<ChannelConsumers> HIGHEST_TAG =
            AtomicLongFieldUpdater.newUpdater(ChannelConsumers.class, "highestTag");

    private static final ContentAssembler.Listener DROP = AssembledContent::release;

    /** The operation codes for {@link #settle(long, boolean, boolean, int)}. */
    public static final int ACK = AckCoalescer.ACK;
    public static final int NACK = AckCoalescer.NACK;
    public static final int REJECT = AckCoalescer.REJECT;

    // immutable
    private final ChannelState state;
    private final int number;
    private final EventExecutor loop;
    private final AckCoalescer acks;
    private final ShortStrings exchangeNames = new ShortStrings();
    private final ShortStrings routingKeyNames = new ShortStrings();
    private final Runnable flushTask = this::flushTask;
    private final Runnable drainTask = this::drainSettlements;
    /** Added to the broker's delivery tags for the application; see "Delivery tags across recovery". */
    private final long tagOffset;

    // event loop only
    private ConsumerImpl[] consumers = new ConsumerImpl[0];
    private ConsumerImpl assembling;
    private long assemblingTag;
    private boolean assemblingRedelivered;
    private boolean flushScheduled;
    /** Acked tags are written at once when this many wait: half the smallest prefetch (see "Settlements"). */
    private int acksHeldLimit = Integer.MAX_VALUE;
    /** The prefetch count of the channel's own basic.qos ({@code Channel.basicQos}), 0 for none. */
    private int channelPrefetch;
    /** Whether that basic.qos was global: a window all the channel's consumers share. */
    private boolean channelPrefetchGlobal;
    private final MetricsCollector metrics;

    // any thread (MPSC queue, volatile)
    private final MessagePassingQueue<Settlement> settlements = new MpscUnboundedArrayQueue<>(64);
    private volatile int drainScheduled;
    private volatile boolean closed;
    /**
     * The highest broker tag delivered here (deliver or get-ok): read at the loss to set the next offset, and by
     * {@link #settle(long, boolean, boolean, int)} to refuse a tag never delivered. Written on the event loop only,
     * with a release store (no fence on the delivery path): a thread that got a tag through a delivery's hand-off
     * sees at least that tag here.
     */
    private volatile long highestTag;
    /** Lost with the connection, recovery to follow: its deliveries' tags mean nothing on the new channel. */
    private volatile boolean stale;
    /**
     * When the oldest delivery still waiting for the application's settlement arrived (the loop's clock), or
     * {@link AckCoalescer#NONE}: the age metrics read. Written on the event loop when it may have changed (a
     * delivery into an empty window, a flush of settlements, the close).
     */
    private volatile long oldestUnackedSince = AckCoalescer.NONE;

    // event loop only: consumers lost with the connection, waiting for recovery to move them to a new channel
    private ConsumerImpl[] lost = new ConsumerImpl[0];

    /** Made by the channel's constructor, on the event loop: registers the handlers and the close hook. */
    public ChannelConsumers(ChannelState state) {
        this.state = state;
        this.number = state.number();
        this.loop = state.outbound().eventLoop();
        this.acks = new AckCoalescer(number, state.alloc());
        this.metrics = state.connection().metrics();
        this.tagOffset = state.facade().recovery().tagsExposed();
        state.register(MethodIds.CLASS_BASIC, MethodIds.methodId(MethodIds.BASIC_DELIVER), this::onDeliver);
        state.register(MethodIds.CLASS_BASIC, MethodIds.methodId(MethodIds.BASIC_CANCEL), this::onBrokerCancel);
        state.onClose(this::onClose);
    }

    /** Any thread. */
    public ChannelState state() {
        return state;
    }

    /** The channel number. Any thread. */
    public int number() {
        return number;
    }

    /** Whether the channel has closed. Any thread. */
    boolean isClosed() {
        return closed;
    }

    /** The client's metrics. Any thread. */
    MetricsCollector metrics() {
        return metrics;
    }

    /** The connection's topology recorder, or null when topology recovery is off. */
    TopologyRecorder topology() {
        ConnectionRecovery r = state.connection().facade().recovery();
        return r == null || !r.options().topologyRecovery() ? null : r.topology();
    }

    /** Whether this channel was lost with its connection and recovered on a new one. Any thread. */
    boolean isStale() {
        return stale;
    }

    /**
     * A delivery of this lost channel was dropped before it reached its handler (the broker redelivers it). Any
     * thread: the consumer's context.
     */
    void lostDeliveryDropped(MessageDelivery d) {
        metrics.staleDeliveryDropped();
        LOG.debug("channel {}: delivery {} is from before the channel was lost; dropped (the broker delivers it"
                + " again)", number, d.deliveryTag());
    }

    /** What the application's delivery tags add to the broker's on this channel state. Any thread. */
    long tagOffset() {
        return tagOffset;
    }

    /**
     * The highest delivery tag the application can have seen on this channel up to now (its offset when nothing
     * was delivered here): a later recovered state's offset. Event loop.
     */
    public long highestTagExposed() {
        return tagOffset + highestTag;
    }

    ShortStrings exchangeNames() {
        return exchangeNames;
    }

    ShortStrings routingKeyNames() {
        return routingKeyNames;
    }

    // ---- starting a consumer ---------------------------------------------------------------------------------

    /**
     * basic.qos (when the options have a prefetch), then basic.consume. Any thread: the frames are encoded here
     * (bad input fails the stage before anything is written), the rest runs on the event loop. Completes on
     * consume-ok, with the consumer registered before any of its deliveries can arrive.
     */
    public CompletionStage<ConsumerHandle> consume(String queue, ConsumeOptions options, DeliveryHandler handler,
                                                  AsyncDeliveryHandler asyncHandler) {
        if (queue == null || options == null || (handler == null && asyncHandler == null)) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("queue, options and handler must not be null"));
        }
        if (handler != null && options.concurrency() > 1 && options.executor() == null) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("a DeliveryHandler with concurrency "
                    + options.concurrency() + " needs an executor: the event loop runs one delivery at a time"));
        }
        // the consumer keeps its own copy (recovery consumes with it again): a later change by the caller changes
        // nothing already running
        ConsumeOptions o = withDefaultPrefetch(new ConsumeOptions(options));
        ByteBuf qos = null;
        ByteBuf consume;
        try {
            consume = ConsumeFrames.basicConsume(state.alloc(), number, queue, o.consumerTag(), o.noAck(),
                    o.exclusive(), o.arguments());
            if (o.prefetch() >= 0) {
                qos = ConsumeFrames.basicQos(state.alloc(), number, o.prefetch());
            }
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<ConsumerHandle> result = new CompletableFuture<>();
        ByteBuf qosFrame = qos;
        state.outbound().execute(new Task(() -> start(queue, o, handler, asyncHandler, qosFrame, consume, result),
                result, consume, qosFrame));
        return result;
    }

    /**
     * The options with {@link ConsumeOptions#DEFAULT_PREFETCH} when a manual-ack consumer sets no prefetch and the
     * channel has no basic.qos of its own: the consumer keeps them, so recovery restores the same prefetch.
     */
    private ConsumeOptions withDefaultPrefetch(ConsumeOptions options) {
        if (options.prefetch() >= 0 || options.noAck() || state.facade().hasOwnQos()) {
            return options;
        }
        return options.prefetch(ConsumeOptions.DEFAULT_PREFETCH);
    }

    private void start(String queue, ConsumeOptions options, DeliveryHandler handler,
                       AsyncDeliveryHandler asyncHandler, ByteBuf qos, ByteBuf consume,
                       CompletableFuture<ConsumerHandle> result) {
        ConsumerImpl consumer = new ConsumerImpl(this, queue, options, handler, asyncHandler);
        if (qos != null) {
            // the RPC queue is FIFO: consume goes out once qos-ok is in; a refused qos closes the channel,
            // which fails the consume too
            state.call(ChannelRpc.Request.of(MethodIds.BASIC_QOS, MethodIds.BASIC_QOS_OK, -1, qos,
                    (reply, f) -> f.complete(null), new CompletableFuture<Void>()));
        }
        state.call(ChannelRpc.Request.of(MethodIds.BASIC_CONSUME, MethodIds.BASIC_CONSUME_OK, -1, consume,
                (reply, f) -> {
                    ByteBuf p = reply.payload();
                    String tag = new BasicConsumeOk().wrap(p, p.readerIndex()).consumerTagAsString();
                    consumer.activate(tag);
                    add(consumer);
                    metrics.consumerStarted(consumer);
                    TopologyRecorder topology = topology();
                    if (topology != null) {
                        topology.consumerStarted(queue); // an auto-delete queue goes with its last consumer
                    }
                    f.complete(consumer);
                }, result));
    }

    private void add(ConsumerImpl consumer) {
        consumers = Arrays.copyOf(consumers, consumers.length + 1);
        consumers[consumers.length - 1] = consumer;
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
        for (ConsumerImpl c : consumers) {
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

    /**
     * The broker accepted the channel's own basic.qos ({@code Channel.basicQos}): its prefetch bounds the acks held
     * back as a consumer's own does; a global one bounds them for every consumer of the channel. Any thread.
     */
    public void channelQosAccepted(int prefetchCount, boolean global) {
        if (loop.inEventLoop()) {
            channelPrefetch = prefetchCount;
            channelPrefetchGlobal = global;
            updateAcksHeldLimit();
        } else {
            loop.execute(() -> channelQosAccepted(prefetchCount, global));
        }
    }

    private void remove(ConsumerImpl consumer) {
        for (int i = 0; i < consumers.length; i++) {
            if (consumers[i] == consumer) {
                ConsumerImpl[] fewer = new ConsumerImpl[consumers.length - 1];
                System.arraycopy(consumers, 0, fewer, 0, i);
                System.arraycopy(consumers, i + 1, fewer, i, fewer.length - i);
                consumers = fewer;
                updateAcksHeldLimit();
                return;
            }
        }
    }

    /**
     * The consumer whose tag is the {@code length} bytes at {@code index}. A channel has few consumers, so a
     * scan comparing bytes beats decoding the tag and hashing it.
     */
    private ConsumerImpl find(ByteBuf buf, int index, int length) {
        for (ConsumerImpl c : consumers) {
            if (c.hasTag(buf, index, length)) {
                return c;
            }
        }
        return null;
    }

    /** A consumer ended on its own (cancel-ok): forget it. Event loop. */
    void ended(ConsumerImpl consumer) {
        remove(consumer);
    }

    // ---- inbound: deliver, cancel, close ---------------------------------------------------------------------

    /**
     * basic.deliver: the envelope's consumer tag picks the consumer, the tag goes to the coalescer, and the
     * content that follows is assembled ({@link #onContent}). The frame is handed to the assembler.
     */
    private void onDeliver(ChannelState channel, Frame frame) {
        ByteBuf p = frame.payload();
        int at = p.readerIndex();
        int tagLength = p.getUnsignedByte(at + 4);
        int afterTag = at + 5 + tagLength;
        long deliveryTag = p.getLong(afterTag);
        boolean redelivered = (p.getByte(afterTag + 8) & 1) != 0;
        HIGHEST_TAG.lazySet(this, deliveryTag); // the broker's tags only grow on a channel
        ConsumerImpl consumer = find(p, at + 5, tagLength);
        if (consumer == null) {
            LOG.warn("channel {}: basic.deliver {} for consumer '{}', which is not (or no longer) here; dropped",
                    number, deliveryTag, p.toString(at + 5, tagLength, java.nio.charset.StandardCharsets.UTF_8));
            acks.delivered(deliveryTag, false);
            state.beginContent(frame, DROP);
            return;
        }
        delivered(deliveryTag, !consumer.noAck());
        metrics.messageConsumed();
        assembling = consumer;
        assemblingTag = deliveryTag;
        assemblingRedelivered = redelivered;
        state.beginContent(frame, this);
    }

    @Override
    public void onContent(AssembledContent content) {
        onContent(content.channel(), content.method(), content.header(), content.body());
    }

    /** The delivery's content is complete: the three buffers become a delivery in the consumer's queue. */
    @Override
    public void onContent(int channel, ByteBuf method, ByteBuf header, ByteBuf body) {
        ConsumerImpl consumer = assembling;
        assembling = null;
        consumer.deliver(consumer.newDelivery(this, method, header, body, assemblingTag, assemblingRedelivered));
    }

    @Override
    public void onAbort(Throwable cause) {
        assembling = null; // the assembler released what it held
    }

    /** The broker cancelled a consumer (queue deleted, HA failover): answer and end it. */
    private void onBrokerCancel(ChannelState channel, Frame frame) {
        String tag;
        boolean noWait;
        try {
            ByteBuf p = frame.payload();
            BasicCancel cancel = new BasicCancel().wrap(p, p.readerIndex());
            tag = cancel.consumerTagAsString();
            noWait = cancel.nowait();
        } finally {
            frame.release();
        }
        if (!noWait) {
            state.send(ConsumeFrames.basicCancelOk(state.alloc(), number, tag));
        }
        for (ConsumerImpl c : consumers) {
            if (c.consumerTag().equals(tag)) {
                remove(c);
                LOG.debug("channel {}: the broker cancelled consumer '{}' on queue '{}'", number, tag, c.queue());
                c.end(new ConsumerCancelledException("consumer '" + tag + "' on queue '" + c.queue() + "' (channel "
                        + number + ") was cancelled by the broker: the queue was deleted, or its leader moved"
                        + " (x-cancel-on-ha-failover)", tag, c.queue(), number));
                return;
            }
        }
    }

    /**
     * The channel closed (any reason): every consumer ends with the cause; settlements are dropped. Lost with the
     * connection and to be recovered: the consumers do not end, they wait for {@link #recoverFrom}.
     */
    private void onClose(AmqpException cause) {
        closed = true;
        oldestUnackedSince = AckCoalescer.NONE; // the broker requeued what was unacknowledged
        if (cause instanceof io.warren.ConnectionLostException || cause instanceof io.warren.ChannelLostException) {
            stale = true;
            ByteBuf unsent = acks.takeFrames();
            if (unsent != null) {
                unsent.release(); // the broker requeued everything unsettled with the lost channel
            }
            acks.clear();
            lost = consumers;
            consumers = new ConsumerImpl[0];
            return;
        }
        ByteBuf frames = acks.takeFrames();
        if (frames != null) {
            if (cause instanceof ConnectionClosedException c && !c.initiatedByBroker()) {
                // the application is closing the connection: connection.close follows, so these still count
                state.outbound().write(frames);
            } else {
                frames.release(); // the broker has requeued everything unsettled
            }
        }
        acks.clear();
        ConsumerImpl[] all = consumers;
        consumers = new ConsumerImpl[0];
        for (ConsumerImpl c : all) {
            c.end(cause);
        }
    }

    // ---- recovery --------------------------------------------------------------------------------------------

    /**
     * Recovery: the consumers {@code old} lost with its connection start again here, with their tags and
     * options (basic.qos first when they had a prefetch), on their queue's current name. A consumer the broker
     * refuses ends with the refusal. Completes when every basic.consume is answered. Event loop.
     *
     * @param unpausedOnly only the consumers that do not hold reading paused (the others stay for a later call)
     */
    public CompletionStage<Void> recoverFrom(ChannelConsumers old, java.util.function.UnaryOperator<String> queueNames,
                                             boolean unpausedOnly) {
        ConsumerImpl[] moving = old.lost;
        old.lost = new ConsumerImpl[0];
        if (unpausedOnly) {
            ConsumerImpl[] paused = Arrays.stream(moving).filter(ConsumerImpl::holdsReadingPaused)
                    .toArray(ConsumerImpl[]::new);
            moving = Arrays.stream(moving).filter(c -> !c.holdsReadingPaused()).toArray(ConsumerImpl[]::new);
            old.lost = paused;
        }
        CompletableFuture<?>[] all = new CompletableFuture<?>[moving.length];
        for (int i = 0; i < moving.length; i++) {
            ConsumerImpl c = moving[i];
            String queue = queueNames.apply(c.queue());
            ConsumeOptions o = c.options();
            CompletableFuture<ConsumerHandle> done = new CompletableFuture<>();
            all[i] = done.handle((h, e) -> {
                if (e != null) {
                    LOG.warn("channel {}: consumer '{}' on queue '{}' could not be recovered: {}", number,
                            c.consumerTag(), queue, e.toString());
                    c.end(e instanceof AmqpException a ? a : new AmqpException("consumer '" + c.consumerTag()
                            + "' could not be recovered: " + e, e));
                }
                return null;
            });
            ByteBuf consume;
            ByteBuf qos = null;
            try {
                consume = ConsumeFrames.basicConsume(state.alloc(), number, queue, c.consumerTag(), o.noAck(),
                        o.exclusive(), o.arguments());
                if (o.prefetch() >= 0) {
                    qos = ConsumeFrames.basicQos(state.alloc(), number, o.prefetch());
                }
            } catch (RuntimeException e) {
                done.completeExceptionally(e);
                continue;
            }
            if (qos != null) {
                state.call(ChannelRpc.Request.of(MethodIds.BASIC_QOS, MethodIds.BASIC_QOS_OK, -1, qos,
                        (reply, f) -> f.complete(null), new CompletableFuture<Void>()));
            }
            state.call(ChannelRpc.Request.of(MethodIds.BASIC_CONSUME, MethodIds.BASIC_CONSUME_OK, -1, consume,
                    (reply, f) -> {
                        // registered before any of its deliveries can arrive: the broker sends consume-ok first
                        c.rebind(this, queue);
                        add(c);
                        f.complete(c);
                    }, done));
        }
        return CompletableFuture.allOf(all).thenApply(v -> null);
    }

    /** Recovery will not happen: the consumers lost with the connection end with {@code cause}. Event loop. */
    public void endLost(AmqpException cause) {
        ConsumerImpl[] all = lost;
        lost = new ConsumerImpl[0];
        for (ConsumerImpl c : all) {
            c.end(cause);
        }
    }

    // ---- settlements -----------------------------------------------------------------------------------------

    /** A tag for the coalescer, with its delivery time (read once per read batch). */
    private void delivered(long deliveryTag, boolean needsAck) {
        if (!needsAck) {
            acks.delivered(deliveryTag, false, 0);
            return;
        }
        long now = state.connection().readBatchNanos();
        acks.delivered(deliveryTag, true, now);
        if (oldestUnackedSince == AckCoalescer.NONE) {
            oldestUnackedSince = now;
        }
    }

    /**
     * How long the oldest delivery of this channel has waited for the application's settlement, in nanoseconds;
     * 0 when none waits. RabbitMQ closes the channel when that passes its consumer timeout. Any thread.
     */
    public long oldestUnacknowledgedAgeNanos() {
        long since = oldestUnackedSince;
        return since == AckCoalescer.NONE ? 0 : Math.max(0, loop.ticker().nanoTime() - since);
    }

    /** A basic.get-ok arrived; {@code autoAck} as asked. Event loop. */
    public void gotMessage(long deliveryTag, boolean autoAck) {
        HIGHEST_TAG.lazySet(this, deliveryTag);
        delivered(deliveryTag, !autoAck);
        metrics.messageConsumed();
    }

    /**
     * {@code Channel.basicAck / basicNack / basicReject}: {@code op} is {@link AckCoalescer#ACK} etc. with its
     * flags; {@code deliveryTag} is the application's (the broker's plus {@link #tagOffset()}). Any thread.
     *
     * @throws StaleDeliveryException when the tag is from before a connection loss: at or below the offset, or
     *         any tag while this channel state is lost and waiting for recovery; nothing is written
     * @throws ChannelClosedException when the channel is closed (the broker requeued its unsettled deliveries with
     *         the close); nothing is written
     * @throws IllegalArgumentException for a negative tag, 0 without {@code multiple}, or a tag above the highest
     *         delivered on the channel; nothing is written
     */
    public void settle(long deliveryTag, boolean multiple, boolean requeue, int kind) {
        if (deliveryTag < 0 || (deliveryTag == 0 && !multiple)) {
            // the broker would close the channel (406 unknown delivery tag) and fail everything on it
            throw new IllegalArgumentException("delivery tag " + deliveryTag + " names no delivery on channel " + number
                    + (deliveryTag == 0 ? ": 0 means every outstanding delivery, and only with multiple=true" : ""));
        }
        // 0 is passed as it is: with multiple it means every outstanding delivery, which on a recovered channel
        // are only the new channel's; without, the broker judges it as before
        if (deliveryTag != 0 && (stale || deliveryTag <= tagOffset)) {
            throw staleTag(deliveryTag);
        }
        if (closed) {
            throw closedTag(deliveryTag);
        }
        if (deliveryTag > tagOffset + highestTag) {
            // never delivered here: the broker would close the channel (406 unknown delivery tag), multiple or not
            throw new IllegalArgumentException("delivery tag " + deliveryTag + " was never delivered on channel "
                    + number + " (the highest delivered is " + (tagOffset + highestTag) + "): nothing is sent"
                    + (multiple ? "; 0 with multiple=true settles every outstanding delivery" : ""));
        }
        long brokerTag = deliveryTag == 0 ? 0 : deliveryTag - tagOffset;
        int op = kind | (multiple ? AckCoalescer.MULTIPLE : 0) | (requeue ? AckCoalescer.REQUEUE : 0);
        if (loop.inEventLoop()) {
            settleNow(brokerTag, op);
        } else {
            offer(new Settlement.Tagged(brokerTag, op));
        }
    }

    /** The refusal of a tag (the application's) that belongs to a channel lost with its connection. */
    StaleDeliveryException staleTag(long deliveryTag) {
        // on the recovered channel it would settle another message, or make the broker close the channel (406);
        // the broker requeued the message with the lost channel
        return new StaleDeliveryException("delivery tag " + deliveryTag + " on channel " + number + " is from "
                + "before its connection was lost" + (stale ? "" : " and recovered (this channel's tags are above "
                + tagOffset + " now)") + ": it is stale and nothing is sent; the broker redelivers the message "
                + "(flagged redelivered)", deliveryTag, number);
    }

    /**
     * The refusal of a settlement (tag the application's) on a closed channel, carrying why it closed: nothing can
     * be sent, and the broker requeued every unsettled delivery of the channel with its close. Any thread, once
     * {@link #isClosed()}.
     */
    ChannelClosedException closedTag(long deliveryTag) {
        ChannelClosedException closed = state.closedError(); // reads the cause written before our closed flag
        return new ChannelClosedException("delivery tag " + deliveryTag + " cannot be settled: "
                + closed.getMessage() + "; nothing is sent (the broker requeued the channel's unsettled deliveries "
                + "with its close)", closed.getCause(), closed.replyCode(), closed.replyText(), closed.classId(),
                closed.methodId(), number, closed.initiatedByBroker());
    }

    /** A delivery settled. Any thread. */
    void settle(MessageDelivery delivery, int op) {
        if (loop.inEventLoop()) {
            settleNow(delivery.settleTag(), op);
            delivery.markSettled();
        } else {
            delivery.settleOp = op;
            offer(delivery);
        }
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
        if (!acks.settle(tag, op)) {
            LOG.warn("channel {}: delivery tag {} is already settled; the second settlement is dropped (the broker"
                    + " would close the channel with 406 PRECONDITION_FAILED)", number, tag);
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

    private void countSettlement(int op) {
        if ((op & AckCoalescer.KIND_MASK) == AckCoalescer.ACK) {
            metrics.messageAcknowledged();
        } else {
            metrics.messageRejected();
        }
    }

    private void drainSettlements() {
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
            int op = s.settleOp;
            if (!acks.settle(s.settleTag(), op)) {
                LOG.warn("channel {}: delivery tag {} is already settled; the second settlement is dropped (the "
                        + "broker would close the channel with 406 PRECONDITION_FAILED)", number, s.settleTag());
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

    /**
     * Writes what the coalescer holds. Event loop; {@code ChannelState} calls it before sending a synchronous
     * method or channel.close, so settlements made before them go first.
     */
    public void flush() {
        if (acks.hasWork()) {
            ByteBuf frames = acks.takeFrames();
            oldestUnackedSince = acks.oldestPendingSince(); // cheap now: the window starts at a waiting tag
            if (frames != null) {
                state.send(frames);
            }
        }
    }

    /** For tests. Event loop. */
    AckCoalescer acks() {
        return acks;
    }

    /**
     * A task handed to the event loop that owns frames and a future: if the loop is gone and it never runs,
     * the frames are released and the future failed.
     */
    static final class Task implements OutboundPath.DiscardableTask {
        private final Runnable onLoop;
        private final CompletableFuture<?> future;
        private final ByteBuf[] frames;

        /** {@code frames} may hold nulls. */
        Task(Runnable onLoop, CompletableFuture<?> future, ByteBuf... frames) {
            this.onLoop = onLoop;
            this.future = future;
            this.frames = frames;
        }

        @Override
        public void run() {
            onLoop.run();
        }

        @Override
        public void discard(Throwable cause) {
            for (ByteBuf frame : frames) {
                if (frame != null) {
                    frame.release();
                }
            }
            future.completeExceptionally(new ConnectionClosedException("the connection's event loop is shut down "
                    + "(was the client or its event loop group closed?)", cause));
        }
    }
}
