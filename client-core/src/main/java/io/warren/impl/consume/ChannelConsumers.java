package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpException;
import io.warren.AsyncDeliveryHandler;
import io.warren.ChannelClosedException;
import io.warren.ChannelLostException;
import io.warren.ConnectionClosedException;
import io.warren.ConsumeOptions;
import io.warren.ConsumerCancelledException;
import io.warren.ConsumerHandle;
import io.warren.DeliveryHandler;
import io.warren.StaleDeliveryException;
import io.warren.codec.Frame;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.method.BasicCancel;
import io.warren.codec.method.BasicConsumeOk;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.AssembledContent;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.channel.ContentAssembler;
import io.warren.impl.metrics.MetricsCollector;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consuming side of one channel: starting its consumers, routing basic.deliver to them by consumer tag and
 * assembling the deliveries' content, the broker's basic.cancel, and the channel's close. One per channel, made
 * with the channel; event loop only unless a method says otherwise. Its other jobs are classes of their own, and
 * this one holds them together:
 * <ul>
 *   <li>{@link ConsumerTable}: the consumers by tag, which basic.deliver is routed by;</li>
 *   <li>{@link SettlementPath}: acks, nacks and rejects, from a {@link io.warren.Delivery} or from
 *       {@code Channel.basicAck} and friends, from any thread to the channel's {@link AckCoalescer} and the
 *       wire;</li>
 *   <li>{@link DeliveryTags}: the application's delivery tags across recovery (the broker's plus an offset), and
 *       the refusal of stale ones (from before a connection loss, or requeued by basic.recover);</li>
 *   <li>{@link LostConsumers}: the consumers lost with the connection, until recovery moves them to the new
 *       channel ({@link #recoverFrom}) or ends them ({@link #endLost}).</li>
 * </ul>
 */
public final class ChannelConsumers implements ContentAssembler.Listener {

    private static final Logger LOG = LoggerFactory.getLogger(ChannelConsumers.class);

    /** The operation codes for {@link #settle(long, boolean, boolean, int)}. */
    public static final int ACK = AckCoalescer.ACK;

    public static final int NACK = AckCoalescer.NACK;
    public static final int REJECT = AckCoalescer.REJECT;

    // immutable
    private final ChannelState state;
    private final ConsumerHost host;
    private final int number;
    private final EventExecutor loop;
    private final MetricsCollector metrics;
    private final ConsumerTable consumers = new ConsumerTable();
    private final SettlementPath settlements;
    private final DeliveryTags tags;
    private final LostConsumers lost = new LostConsumers();
    private final ShortStrings exchangeNames = new ShortStrings();
    private final ShortStrings routingKeyNames = new ShortStrings();

    // event loop only: the refusal of a recovered consumer's basic.consume that closed this state (refusedConsume)
    private ChannelLostException refusalTaken;

    // event loop only: the delivery whose content is being assembled
    private ConsumerImpl assembling;
    private long assemblingTag;
    private boolean assemblingRedelivered;

    /** Made by the channel's constructor, on the event loop: registers the handlers and the close hook. */
    public ChannelConsumers(ChannelState state, ConsumerHost host, long tagOffset) {
        this.state = state;
        this.host = host;
        this.number = state.number();
        this.loop = state.outbound().eventLoop();
        this.metrics = state.connection().metrics();
        this.tags = new DeliveryTags(number, tagOffset);
        this.settlements = new SettlementPath(state, metrics, consumers, tags);
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
        return settlements.isClosed();
    }

    /** The client's metrics. Any thread. */
    MetricsCollector metrics() {
        return metrics;
    }

    /** Where consumers count themselves for topology recovery, or null when topology recovery is off. */
    QueueConsumerCounts topology() {
        return host.consumerCounts();
    }

    /** Whether this channel was lost with its connection and recovered on a new one. Any thread. */
    boolean isStale() {
        return tags.isStale();
    }

    /**
     * Whether basic.recover requeued the delivery of this broker tag (the broker forgot the tag). Any thread.
     */
    boolean isRequeued(long brokerTag) {
        return tags.isRequeued(brokerTag);
    }

    /**
     * A delivery of this channel, lost or requeued by basic.recover, was dropped before it reached its handler (the
     * broker redelivers it). Any thread: the consumer's context.
     */
    void staleDeliveryDropped(MessageDelivery d) {
        metrics.staleDeliveryDropped();
        LOG.debug(
                "channel {}: delivery {} is from before {}; dropped (the broker delivers it again)",
                number,
                d.deliveryTag(),
                tags.isStale() ? "the channel was lost" : "basic.recover");
    }

    /** What the application's delivery tags add to the broker's on this channel state. Any thread. */
    long tagOffset() {
        return tags.offset();
    }

    /**
     * The highest delivery tag the application can have seen on this channel up to now (its offset when nothing
     * was delivered here): a later recovered state's offset.
     */
    public long highestTagExposed() {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        return tags.highestExposed();
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
    public CompletionStage<ConsumerHandle> consume(
            String queue, ConsumeOptions options, DeliveryHandler handler, AsyncDeliveryHandler asyncHandler) {
        if (queue == null || options == null || (handler == null && asyncHandler == null)) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("queue, options and handler must not be null"));
        }
        // the consumer keeps its own copy (recovery consumes with it again): a later change by the caller changes
        // nothing already running. Checked on the copy, what is used: a caller changing its options meanwhile
        // cannot slip a combination past the check
        ConsumeOptions o = withDefaultPrefetch(new ConsumeOptions(options));
        if (handler != null && o.concurrency() > 1 && o.executor() == null) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("a DeliveryHandler with concurrency "
                    + o.concurrency() + " needs an executor: the event loop runs one delivery at a time"));
        }
        if (o.dropOverflow() && !o.noAck()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("dropOverflow needs noAck: a manual-ack"
                    + " consumer is bounded by its prefetch, and a delivery dropped would stay unacknowledged"));
        }
        ConsumeRequest request;
        try {
            request = ConsumeRequest.build(
                    state.alloc(),
                    number,
                    queue,
                    o.consumerTag(),
                    o,
                    state.connection().facade().frameMax());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<ConsumerHandle> result = new CompletableFuture<>();
        state.outbound()
                .execute(new LoopTask(
                        () -> startOrHold(queue, o, handler, asyncHandler, request, result), result, request::release));
        return result;
    }

    /**
     * Starts the consumer, or, while the channel recovers, holds its basic.consume until the channel and the
     * topology are back, then starts it on the channel's consumers of that moment. Event loop.
     */
    private void startOrHold(
            String queue,
            ConsumeOptions options,
            DeliveryHandler handler,
            AsyncDeliveryHandler asyncHandler,
            ConsumeRequest request,
            CompletableFuture<ConsumerHandle> result) {
        // on the channel's consumers of the moment: this task may have been queued before the channel was lost
        Runnable start = () -> host.currentConsumers().start(queue, options, handler, asyncHandler, request, result);
        boolean held = host.holdWhileRecovering(MethodIds.BASIC_CONSUME, queue, start, cause -> {
            request.release();
            result.completeExceptionally(cause);
        });
        if (!held) {
            start.run();
        }
    }

    /**
     * The options with {@link ConsumeOptions#DEFAULT_PREFETCH} when a manual-ack consumer sets no prefetch and the
     * channel has no basic.qos of its own: the consumer keeps them, so recovery restores the same prefetch.
     */
    private ConsumeOptions withDefaultPrefetch(ConsumeOptions options) {
        if (options.prefetch() >= 0 || options.noAck() || host.hasOwnQos()) {
            return options;
        }
        return options.prefetch(ConsumeOptions.DEFAULT_PREFETCH);
    }

    private void start(
            String queue,
            ConsumeOptions options,
            DeliveryHandler handler,
            AsyncDeliveryHandler asyncHandler,
            ConsumeRequest request,
            CompletableFuture<ConsumerHandle> result) {
        ConsumerImpl consumer;
        try {
            consumer = new ConsumerImpl(this, queue, options, handler, asyncHandler);
        } catch (RuntimeException e) {
            request.release();
            result.completeExceptionally(e);
            return;
        }
        request.call(
                state,
                (reply, f) -> {
                    started(consumer, queue, reply);
                    f.complete(consumer);
                },
                (reply, f) -> {
                    // consume-ok after basic.consume timed out: the broker has this consumer, the application was
                    // told it has none. Started here and cancelled at once: what the broker sends it meanwhile is
                    // rejected back to the queue, never handed to the handler.
                    started(consumer, queue, reply);
                    LOG.warn(
                            "channel {}: consume-ok for consumer '{}' on queue '{}' came after basic.consume timed out;"
                                    + " the consumer is cancelled, and what it received meanwhile goes back to the queue",
                            number,
                            consumer.consumerTag(),
                            queue);
                    consumer.cancelUnwanted();
                },
                result);
    }

    /** consume-ok: the consumer has its tag and takes deliveries. */
    private void started(ConsumerImpl consumer, String queue, Frame reply) {
        ByteBuf p = reply.payload();
        String tag = new BasicConsumeOk().wrap(p, p.readerIndex()).consumerTagAsString();
        consumer.activate(tag);
        add(consumer);
        metrics.consumerStarted(consumer);
        QueueConsumerCounts topology = topology();
        if (topology != null) {
            topology.consumerStarted(queue); // an auto-delete queue goes with its last consumer
        }
    }

    /** A consumer starts (consume-ok) or moves here (recovery). */
    void add(ConsumerImpl consumer) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        consumers.add(consumer);
        settlements.consumersChanged();
    }

    /**
     * The broker accepted the channel's own basic.qos ({@code Channel.basicQos}): its prefetch bounds the acks held
     * back as a consumer's own does; a global one bounds them for every consumer of the channel. Any thread.
     */
    public void channelQosAccepted(int prefetchCount, boolean global) {
        if (loop.inEventLoop()) {
            settlements.channelQosAccepted(prefetchCount, global);
        } else {
            loop.execute(() -> channelQosAccepted(prefetchCount, global));
        }
    }

    private void remove(ConsumerImpl consumer) {
        if (consumers.remove(consumer)) {
            settlements.consumersChanged();
        }
    }

    /** A consumer ended on its own (cancel-ok): forget it. */
    void ended(ConsumerImpl consumer) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        remove(consumer);
    }

    // ---- inbound: deliver, cancel, close ---------------------------------------------------------------------

    /**
     * basic.deliver: the envelope's consumer tag picks the consumer, the tag goes to the coalescer, and the
     * content that follows is assembled ({@link #onContent}). The frame is handed to the assembler.
     */
    private void onDeliver(ChannelState channel, Frame frame) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        ByteBuf p = frame.payload();
        int at = p.readerIndex();
        int tagLength = p.getUnsignedByte(at + 4);
        int afterTag = at + 5 + tagLength;
        long deliveryTag = p.getLong(afterTag);
        boolean redelivered = (p.getByte(afterTag + 8) & 1) != 0;
        tags.delivered(deliveryTag); // the broker's tags only grow on a channel
        ConsumerImpl consumer = consumers.find(p, at + 5, tagLength);
        if (consumer == null) {
            // A consumer stays here until its cancel-ok or the broker's cancel, after which the broker sends it
            // nothing: this delivery is the broker's error. Dropping it would leave its tag unknown to the
            // coalescer (a multiple ack would settle a message nobody handled); the connection's close gives every
            // unacknowledged message back to the queue.
            String tag = p.toString(at + 5, tagLength, java.nio.charset.StandardCharsets.UTF_8);
            frame.release();
            throw new AmqpProtocolException(
                    ReplyCode.UNEXPECTED_FRAME,
                    "basic.deliver " + deliveryTag + " for consumer '" + tag + "', which channel " + number
                            + " does not have",
                    FrameType.METHOD,
                    number,
                    60,
                    60,
                    -1);
        }
        settlements.delivered(deliveryTag, !consumer.noAck());
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
        assert loop.inEventLoop() : "channel consumers off the event loop";
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
        ConsumerImpl c = consumers.find(tag);
        if (c != null) {
            remove(c);
            LOG.debug("channel {}: the broker cancelled consumer '{}' on queue '{}'", number, tag, c.queue());
            c.end(new ConsumerCancelledException(
                    "consumer '" + tag + "' on queue '" + c.queue() + "' (channel "
                            + number + ") was cancelled by the broker: the queue was deleted, or its leader moved"
                            + " (x-cancel-on-ha-failover)",
                    tag,
                    c.queue(),
                    number));
        }
    }

    /**
     * The channel closed (any reason): every consumer ends with the cause; settlements are dropped. Lost with the
     * connection and to be recovered: the consumers do not end, they wait for {@link #recoverFrom}.
     */
    private void onClose(AmqpException cause) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        if (cause instanceof io.warren.ConnectionLostException || cause instanceof io.warren.ChannelLostException) {
            // stale before closed: a worker's settlement in between is then told it is stale (the broker redelivers
            // the message), not that the channel is closed
            tags.markStale();
            settlements.close(false); // the broker requeued everything unsettled with the lost channel
            lost.keep(consumers.removeAll());
            return;
        }
        // the application closing the connection: connection.close follows, so held acks still count; otherwise
        // the broker has requeued everything unsettled
        settlements.close(cause instanceof ConnectionClosedException c && !c.initiatedByBroker());
        for (ConsumerImpl c : consumers.removeAll()) {
            c.end(cause);
        }
    }

    // ---- recovery --------------------------------------------------------------------------------------------

    /**
     * Recovery: the consumers {@code old} lost with its connection start again here, with their tags and
     * options (basic.qos first when they had a prefetch), on their queue's current name. A consumer the broker
     * refuses ends with the refusal. Completes when every basic.consume is answered.
     *
     * @param unpausedOnly only the consumers that do not hold reading paused (the others stay for a later call)
     */
    public CompletionStage<Void> recoverFrom(
            ChannelConsumers old, java.util.function.UnaryOperator<String> queueNames, boolean unpausedOnly) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        return old.lost.moveTo(this, queueNames, unpausedOnly);
    }

    /**
     * A consumer being recovered onto this channel state, whose basic.consume failed because this state was lost
     * too: it waits here for the next recovery, as the consumers this state had.
     */
    void keepLost(ConsumerImpl consumer) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        lost.keep(consumer);
    }

    /**
     * Recovery: whether {@code loss}, which closed this state, is the broker's refusal of a basic.consume that recovery
     * repairs (ConnectionRecovery re-opens the channel), and the consumer asking is the one refused. Only a consumer
     * whose basic.consume went on the wire asks: one request is there at a time, and the refusal answers it. When that
     * one had timed out there (its consumer ended then), nobody asks, and every consumer pending starts again on the
     * re-opened channel.
     */
    boolean refusedConsume(ChannelLostException loss) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        if (refusalTaken == loss
                || !(loss.getCause() instanceof ChannelClosedException refusal)
                || refusal.classId() != MethodIds.CLASS_BASIC
                || refusal.methodId() != MethodIds.methodId(MethodIds.BASIC_CONSUME)) {
            return false;
        }
        refusalTaken = loss;
        return true;
    }

    /**
     * Recovery: the lost consumers that will not start again (cancelled while the connection was down, or waiting
     * only for their cancel) end now, before the topology is declared again, so that an auto-delete queue whose
     * last consumer they were is not declared again.
     */
    public void settleLost() {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        lost.settle();
    }

    /**
     * Recovery: adds the queues of the lost consumers that will start again as exclusive consumers to {@code into}
     * (as named before the loss).
     */
    public void lostExclusiveQueues(java.util.Collection<String> into) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        lost.exclusiveQueues(into);
    }

    /** Recovery: adds the queues of the lost consumers that will start again to {@code into} (as named before it). */
    public void lostQueues(java.util.Collection<String> into) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        lost.queues(into);
    }

    /** Recovery will not happen: the consumers lost with the connection end with {@code cause}. */
    public void endLost(AmqpException cause) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        lost.endAll(cause);
    }

    // ---- basic.recover ---------------------------------------------------------------------------------------

    /**
     * basic.recover was written, after the settlements made before it: the broker requeues every delivery of the
     * channel still unsettled when it reads it, and forgets their tags. From now until {@link #recoverOk} every tag
     * delivered is stale (what comes meanwhile was sent before the broker read it), and the deliveries queued for a
     * handler are dropped before it (the broker redelivers them). Event loop.
     */
    public void recoverSent() {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        tags.recoverSent(); // first: a settlement from another thread is refused from now on
        settlements.recoverSent();
        for (ConsumerImpl c : consumers.all()) {
            c.recoverSent();
        }
    }

    /** recover-ok, in time or late: what is delivered from now on is settled as usual. Event loop. */
    public void recoverOk() {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        tags.recoverOk();
    }

    // ---- settlements (SettlementPath, DeliveryTags) ------------------------------------------------------------

    /**
     * How long the oldest delivery of this channel has waited for the application's settlement, in nanoseconds;
     * 0 when none waits. RabbitMQ closes the channel when that passes its consumer timeout. Any thread.
     */
    public long oldestUnacknowledgedAgeNanos() {
        return settlements.oldestUnacknowledgedAgeNanos();
    }

    /** A basic.get-ok arrived; {@code autoAck} as asked. */
    public void gotMessage(long deliveryTag, boolean autoAck) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        tags.delivered(deliveryTag);
        settlements.delivered(deliveryTag, !autoAck);
        metrics.messageConsumed();
    }

    /**
     * {@code Channel.basicAck / basicNack / basicReject}: {@code op} is {@link AckCoalescer#ACK} etc. with its
     * flags; {@code deliveryTag} is the application's (the broker's plus {@link #tagOffset()}). Any thread.
     *
     * @throws StaleDeliveryException when the tag is from before a connection loss: at or below the offset, or
     *         any tag while this channel state is lost and waiting for recovery; or when basic.recover requeued
     *         its delivery; nothing is written
     * @throws ChannelClosedException when the channel is closed (the broker requeued its unsettled deliveries with
     *         the close); nothing is written
     * @throws IllegalArgumentException for a negative tag, 0 without {@code multiple}, or a tag above the highest
     *         delivered on the channel; nothing is written
     */
    public void settle(long deliveryTag, boolean multiple, boolean requeue, int kind) {
        tags.checkCurrent(deliveryTag, multiple);
        if (settlements.isClosed()) {
            throw settlements.closedTag(deliveryTag);
        }
        long brokerTag = tags.toBroker(deliveryTag, multiple);
        settlements.settle(
                brokerTag, kind | (multiple ? AckCoalescer.MULTIPLE : 0) | (requeue ? AckCoalescer.REQUEUE : 0));
    }

    /** The refusal of a tag (the application's) that belongs to a channel lost with its connection. */
    StaleDeliveryException staleTag(long deliveryTag) {
        return tags.staleTag(deliveryTag);
    }

    /** The refusal of a tag (the application's) whose delivery basic.recover requeued. */
    StaleDeliveryException requeuedTag(long deliveryTag) {
        return tags.requeuedTag(deliveryTag);
    }

    /**
     * The refusal of a settlement (tag the application's) on a closed channel, carrying why it closed. Any thread,
     * once {@link #isClosed()}.
     */
    ChannelClosedException closedTag(long deliveryTag) {
        return settlements.closedTag(deliveryTag);
    }

    /** A delivery settled. Any thread. */
    void settle(MessageDelivery delivery, int op) {
        settlements.settle(delivery, op);
    }

    /** Whether a broker tag of this channel is settled: its delivery object may be reused. */
    boolean isSettled(long brokerTag) {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        return settlements.isSettled(brokerTag);
    }

    /**
     * Writes the settlements made so far, from any thread. Event loop; {@code ChannelState} calls it before sending
     * a synchronous method or channel.close, so settlements made before them go first.
     */
    public void flush() {
        assert loop.inEventLoop() : "channel consumers off the event loop";
        settlements.drainAndFlush();
    }
}
