package io.warren.perf;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.Frames;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicAck;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicCancel;
import io.warren.codec.method.BasicCancelOkEncoder;
import io.warren.codec.method.BasicConsume;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicGetEmptyEncoder;
import io.warren.codec.method.BasicNack;
import io.warren.codec.method.BasicQos;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.BasicRecoverOkEncoder;
import io.warren.codec.method.BasicReject;
import io.warren.codec.method.ChannelCloseEncoder;
import io.warren.codec.method.ChannelCloseOkEncoder;
import io.warren.codec.method.ChannelFlow;
import io.warren.codec.method.ChannelFlowOkEncoder;
import io.warren.codec.method.ChannelOpenOkEncoder;
import io.warren.codec.method.ConfirmSelect;
import io.warren.codec.method.ConfirmSelectOkEncoder;
import io.warren.codec.method.ConnectionCloseEncoder;
import io.warren.codec.method.ConnectionCloseOkEncoder;
import io.warren.codec.method.ConnectionOpenOkEncoder;
import io.warren.codec.method.ConnectionStartEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.ConnectionTuneOk;
import io.warren.codec.method.ExchangeBind;
import io.warren.codec.method.ExchangeBindOkEncoder;
import io.warren.codec.method.ExchangeDeclare;
import io.warren.codec.method.ExchangeDeclareOkEncoder;
import io.warren.codec.method.ExchangeDelete;
import io.warren.codec.method.ExchangeDeleteOkEncoder;
import io.warren.codec.method.ExchangeUnbind;
import io.warren.codec.method.ExchangeUnbindOkEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodTable;
import io.warren.codec.method.QueueBind;
import io.warren.codec.method.QueueBindOkEncoder;
import io.warren.codec.method.QueueDeclare;
import io.warren.codec.method.QueueDeclareOkEncoder;
import io.warren.codec.method.QueueDelete;
import io.warren.codec.method.QueueDeleteOkEncoder;
import io.warren.codec.method.QueuePurge;
import io.warren.codec.method.QueuePurgeOkEncoder;
import io.warren.codec.method.QueueUnbindOkEncoder;
import io.warren.codec.method.TxCommitOkEncoder;
import io.warren.codec.method.TxRollbackOkEncoder;
import io.warren.codec.method.TxSelectOkEncoder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One client connection to the {@link LoopbackPeer}: answers the handshake and the channel-level
 * methods, counts and confirms publishes, and in SOURCE mode streams deliveries to consumers. Every
 * method runs on the connection's event loop. Every {@link Frame} read is released here, in
 * {@code finally}; each consumer's pre-encoded content buffer is released when the consumer is
 * cancelled, its channel closed or the connection closed.
 */
final class PeerConnection extends ChannelInboundHandlerAdapter {

    /** Bytes written between two flushes: about what one gathering write moves. */
    static final int FLUSH_BYTES = 64 * 1024;
    /** A pre-encoded batch of deliveries holds about this many bytes ... */
    private static final int BATCH_BYTES = 32 * 1024;
    /**
     * ... and at most this many deliveries ({@code -Dwarren.peer.maxBatch=1} interleaves the consumers
     * delivery by delivery, as a single queue shared by many consumers would).
     */
    private static final int MAX_BATCH = Math.max(1, Integer.getInteger("warren.peer.maxBatch", 256));
    /** Deliveries one pump pass writes before it lets the event loop read (acks, cancels) again. */
    private static final int PUMP_BUDGET = 4096;

    private static final int CHANNEL_MAX = 2047;
    private static final int FRAME_MAX = 131072;
    private static final int HEARTBEAT_SECONDS = 60;
    private static final AtomicLong NAMES = new AtomicLong();

    private final LoopbackPeer peer;

    // event loop only
    private ChannelHandlerContext ctx;
    private FrameDecoder frames;
    private final PeerChannel[] channels = new PeerChannel[CHANNEL_MAX + 1];
    private final List<PeerChannel> toConfirm = new ArrayList<>();
    private final List<Source> sources = new ArrayList<>();
    private int frameMax = Frames.FRAME_MIN_SIZE;
    private ScheduledFuture<?> heartbeats;
    private boolean pumpScheduled;
    private boolean closing;
    private long publishesInBatch;

    // views and encoders, reused (event loop only)
    private final ContentHeader contentHeader = new ContentHeader();
    private final ConnectionTuneOk tuneOk = new ConnectionTuneOk();
    private final ChannelFlow channelFlow = new ChannelFlow();
    private final ConfirmSelect confirmSelect = new ConfirmSelect();
    private final ExchangeDeclare exchangeDeclare = new ExchangeDeclare();
    private final ExchangeDelete exchangeDelete = new ExchangeDelete();
    private final ExchangeBind exchangeBind = new ExchangeBind();
    private final ExchangeUnbind exchangeUnbind = new ExchangeUnbind();
    private final QueueDeclare queueDeclare = new QueueDeclare();
    private final QueueBind queueBind = new QueueBind();
    private final QueuePurge queuePurge = new QueuePurge();
    private final QueueDelete queueDelete = new QueueDelete();
    private final BasicQos basicQos = new BasicQos();
    private final BasicConsume basicConsume = new BasicConsume();
    private final BasicCancel basicCancel = new BasicCancel();
    private final BasicAck basicAck = new BasicAck();
    private final BasicNack basicNack = new BasicNack();
    private final BasicReject basicReject = new BasicReject();
    private final BasicAckEncoder ackEncoder = new BasicAckEncoder();

    PeerConnection(LoopbackPeer peer) {
        this.peer = peer;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        peer.counters.connections.increment();
        ctx.fireChannelActive();
    }

    /** The protocol header arrived: the frame decoder is in place, the handshake starts. */
    void start(FrameDecoder decoder) {
        this.frames = decoder;
        Map<String, Object> capabilities = new LinkedHashMap<>();
        for (String c : new String[] {
            "publisher_confirms",
            "exchange_exchange_bindings",
            "basic.nack",
            "consumer_cancel_notify",
            "connection.blocked",
            "consumer_priorities",
            "authentication_failure_close",
            "per_consumer_qos",
            "direct_reply_to"
        }) {
            capabilities.put(c, true);
        }
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("product", "warren loopback peer");
        properties.put("version", "0");
        properties.put("platform", "Java / Netty");
        properties.put("information", "a benchmark instrument, not a broker: nothing is routed or stored");
        properties.put("capabilities", capabilities);
        send(
                0,
                new ConnectionStartEncoder()
                        .versionMajor(0)
                        .versionMinor(9)
                        .serverProperties(properties)
                        .mechanisms("PLAIN AMQPLAIN")
                        .locales("en_US"));
        ctx.flush();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof Frame frame)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            if (closing) {
                return;
            }
            switch (frame.type()) {
                case METHOD -> method(frame.channel(), frame.payload());
                case HEADER -> header(frame.channel(), frame.payload());
                case BODY -> body(frame.channel(), frame.payload());
                case HEARTBEAT -> {} // ours go out on a timer; the client's only prove it lives
                default -> {}
            }
        } finally {
            frame.release();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        // one multiple ack per confirming channel per read: the batching a broker does
        long confirmed = 0;
        for (PeerChannel ch : toConfirm) {
            ch.confirmQueued = false;
            if (channels[ch.number] == ch && ch.publishSeq > ch.confirmedSeq) {
                send(ch.number, ackEncoder.deliveryTag(ch.publishSeq).multiple(true));
                confirmed += ch.publishSeq - ch.confirmedSeq;
                ch.confirmedSeq = ch.publishSeq;
            }
        }
        toConfirm.clear();
        if (publishesInBatch > 0) {
            peer.counters.publishes.add(publishesInBatch);
            publishesInBatch = 0;
        }
        if (confirmed > 0) {
            peer.counters.confirms.add(confirmed);
        }
        ctx.flush();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            schedulePump(); // not inline: this may fire inside the pump's own flush
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        peer.counters.connections.decrement();
        if (heartbeats != null) {
            heartbeats.cancel(false);
        }
        for (Source s : sources) {
            s.release();
        }
        sources.clear();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!(cause instanceof IOException)) {
            System.err.println("loopback peer: closing a connection: " + cause);
        }
        ctx.close();
    }

    // ---------------------------------------------------------------------------------------------
    // methods

    private void method(int channel, ByteBuf p) {
        int at = p.readerIndex();
        int key = p.getInt(at); // class id << 16 | method id
        if (channel == 0) {
            connectionMethod(key, p, at);
            return;
        }
        PeerChannel ch = channels[channel];
        if (key == MethodIds.CHANNEL_OPEN) {
            channels[channel] = new PeerChannel(channel);
            send(channel, new ChannelOpenOkEncoder());
            return;
        }
        if (ch == null) {
            return; // a channel we closed: the client's frames in flight are dropped until its close-ok
        }
        if (ch.closing) {
            if (key == MethodIds.CHANNEL_CLOSE_OK) {
                closeChannel(ch);
            }
            return;
        }
        switch (key) {
            case MethodIds.BASIC_PUBLISH -> ch.contentExpected = true;
            case MethodIds.BASIC_ACK -> acked(ch, basicAck.wrap(p, at).deliveryTag(), basicAck.multiple());
            case MethodIds.BASIC_NACK -> acked(ch, basicNack.wrap(p, at).deliveryTag(), basicNack.multiple());
            case MethodIds.BASIC_REJECT -> acked(ch, basicReject.wrap(p, at).deliveryTag(), false);
            case MethodIds.CHANNEL_CLOSE -> {
                closeChannel(ch);
                send(channel, new ChannelCloseOkEncoder());
            }
            case MethodIds.CHANNEL_FLOW ->
                send(
                        channel,
                        new ChannelFlowOkEncoder()
                                .active(channelFlow.wrap(p, at).active()));
            case MethodIds.CONFIRM_SELECT -> {
                ch.confirm = true;
                reply(channel, confirmSelect.wrap(p, at).nowait(), new ConfirmSelectOkEncoder());
            }
            case MethodIds.EXCHANGE_DECLARE ->
                reply(channel, exchangeDeclare.wrap(p, at).nowait(), new ExchangeDeclareOkEncoder());
            case MethodIds.EXCHANGE_DELETE ->
                reply(channel, exchangeDelete.wrap(p, at).nowait(), new ExchangeDeleteOkEncoder());
            case MethodIds.EXCHANGE_BIND ->
                reply(channel, exchangeBind.wrap(p, at).nowait(), new ExchangeBindOkEncoder());
            case MethodIds.EXCHANGE_UNBIND ->
                reply(channel, exchangeUnbind.wrap(p, at).nowait(), new ExchangeUnbindOkEncoder());
            case MethodIds.QUEUE_DECLARE -> {
                queueDeclare.wrap(p, at);
                CharSequence name =
                        queueDeclare.queue().isEmpty() ? "amq.gen-" + NAMES.incrementAndGet() : queueDeclare.queue();
                reply(channel, queueDeclare.nowait(), new QueueDeclareOkEncoder().queue(name));
            }
            case MethodIds.QUEUE_BIND -> reply(channel, queueBind.wrap(p, at).nowait(), new QueueBindOkEncoder());
            case MethodIds.QUEUE_UNBIND -> send(channel, new QueueUnbindOkEncoder());
            case MethodIds.QUEUE_PURGE -> reply(channel, queuePurge.wrap(p, at).nowait(), new QueuePurgeOkEncoder());
            case MethodIds.QUEUE_DELETE ->
                reply(channel, queueDelete.wrap(p, at).nowait(), new QueueDeleteOkEncoder());
            case MethodIds.BASIC_QOS -> {
                ch.prefetch = basicQos.wrap(p, at).prefetchCount();
                send(channel, new BasicQosOkEncoder());
                schedulePump();
            }
            case MethodIds.BASIC_CONSUME -> consume(ch, p, at);
            case MethodIds.BASIC_CANCEL -> {
                basicCancel.wrap(p, at);
                String tag = basicCancel.consumerTagAsString();
                sources.removeIf(s -> s.channel == ch && s.tag.equals(tag) && s.release());
                reply(channel, basicCancel.nowait(), new BasicCancelOkEncoder().consumerTag(tag));
            }
            case MethodIds.BASIC_GET -> send(channel, new BasicGetEmptyEncoder());
            case MethodIds.BASIC_RECOVER -> send(channel, new BasicRecoverOkEncoder());
            case MethodIds.TX_SELECT -> send(channel, new TxSelectOkEncoder());
            case MethodIds.TX_COMMIT -> send(channel, new TxCommitOkEncoder());
            case MethodIds.TX_ROLLBACK -> send(channel, new TxRollbackOkEncoder());
            default -> {
                ch.closing = true;
                send(
                        channel,
                        new ChannelCloseEncoder()
                                .replyCode(ReplyCode.NOT_IMPLEMENTED)
                                .replyText("NOT_IMPLEMENTED - the loopback peer does not implement "
                                        + MethodTable.describe(key >>> 16, key & 0xFFFF))
                                .classId(key >>> 16)
                                .methodId(key & 0xFFFF));
            }
        }
    }

    /** Half the negotiated interval apart, as RabbitMQ sends them. Event loop. */
    private void sendHeartbeat() {
        ctx.writeAndFlush(Frames.heartbeat(ctx.alloc()), ctx.voidPromise());
        peer.counters.heartbeats.increment();
    }

    private void connectionMethod(int key, ByteBuf p, int at) {
        switch (key) {
            case MethodIds.CONNECTION_START_OK ->
                send(
                        0,
                        new ConnectionTuneEncoder()
                                .channelMax(CHANNEL_MAX)
                                .frameMax(FRAME_MAX)
                                .heartbeat(HEARTBEAT_SECONDS));
            case MethodIds.CONNECTION_TUNE_OK -> {
                tuneOk.wrap(p, at);
                frameMax = (int) Math.min(Integer.MAX_VALUE, tuneOk.frameMax());
                frames.setFrameMax(frameMax);
                int heartbeat = tuneOk.heartbeat();
                if (heartbeat > 0) {
                    long every = Math.max(1, TimeUnit.SECONDS.toMillis(heartbeat) / 2);
                    heartbeats = ctx.executor()
                            .scheduleAtFixedRate(this::sendHeartbeat, every, every, TimeUnit.MILLISECONDS);
                }
            }
            case MethodIds.CONNECTION_OPEN -> send(0, new ConnectionOpenOkEncoder());
            case MethodIds.CONNECTION_CLOSE -> {
                closing = true;
                ctx.writeAndFlush(Frames.method(ctx.alloc(), 0, new ConnectionCloseOkEncoder()))
                        .addListener(ChannelFutureListener.CLOSE);
            }
            case MethodIds.CONNECTION_CLOSE_OK -> ctx.close();
            default -> {
                closing = true;
                ctx.writeAndFlush(Frames.method(
                        ctx.alloc(),
                        0,
                        new ConnectionCloseEncoder()
                                .replyCode(ReplyCode.NOT_IMPLEMENTED)
                                .replyText("NOT_IMPLEMENTED - the loopback peer does not implement "
                                        + MethodTable.describe(key >>> 16, key & 0xFFFF))
                                .classId(key >>> 16)
                                .methodId(key & 0xFFFF)));
            }
        }
    }

    private void consume(PeerChannel ch, ByteBuf p, int at) {
        basicConsume.wrap(p, at);
        String tag = basicConsume.consumerTag().isEmpty()
                ? "amq.ctag-" + NAMES.incrementAndGet()
                : basicConsume.consumerTagAsString();
        boolean noAck = basicConsume.noAck();
        reply(ch.number, basicConsume.nowait(), new BasicConsumeOkEncoder().consumerTag(tag));
        if (peer.mode() != LoopbackPeer.Mode.SINK) {
            // FLOOD: the prefetch accepted with basic.qos-ok is ignored, as if every delivery were noAck
            boolean unbounded = noAck || peer.mode() == LoopbackPeer.Mode.FLOOD;
            sources.add(new Source(ch, tag, unbounded, peer.deliveriesPerConsumer(), ctx, peer.bodySize(), frameMax));
            schedulePump();
        }
    }

    private void closeChannel(PeerChannel ch) {
        channels[ch.number] = null;
        sources.removeIf(s -> s.channel == ch && s.release());
    }

    private void acked(PeerChannel ch, long tag, boolean multiple) {
        boolean wasFull = ch.prefetch > 0 && ch.outstanding >= ch.prefetch;
        if (multiple) {
            if (tag > ch.ackedThrough) {
                ch.outstanding -= tag - ch.ackedThrough;
                ch.ackedThrough = tag;
            }
        } else {
            ch.outstanding--;
        }
        // a client mixing single and multiple acks can make this undercount: the window then opens early
        ch.outstanding = Math.max(0, ch.outstanding);
        if (wasFull && ch.outstanding < ch.prefetch) {
            schedulePump();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // content (publishes)

    private void header(int channel, ByteBuf p) {
        PeerChannel ch = channels[channel];
        if (ch == null || ch.closing || !ch.contentExpected) {
            return;
        }
        ch.contentExpected = false;
        ch.bodyRemaining = contentHeader.wrap(p, p.readerIndex()).bodySize();
        ch.firstBodyFrame = true;
        if (ch.bodyRemaining == 0) {
            published(ch);
        }
    }

    private void body(int channel, ByteBuf p) {
        PeerChannel ch = channels[channel];
        if (ch == null || ch.closing || ch.bodyRemaining <= 0) {
            return;
        }
        if (ch.firstBodyFrame) {
            ch.firstBodyFrame = false;
            if (peer.recordingReceipt && p.readableBytes() >= MessageBody.MIN_SIZE) {
                long stamp = MessageBody.publishNanos(p);
                if (stamp != MessageBody.NO_STAMP) {
                    peer.receiptLatency.recordValue(Math.max(0, System.nanoTime() - stamp));
                }
            }
        }
        ch.bodyRemaining -= p.readableBytes();
        if (ch.bodyRemaining <= 0) {
            published(ch);
        }
    }

    private void published(PeerChannel ch) {
        publishesInBatch++;
        if (ch.confirm) {
            ch.publishSeq++;
            if (!ch.confirmQueued) {
                ch.confirmQueued = true;
                toConfirm.add(ch);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // deliveries (SOURCE)

    private void schedulePump() {
        if (!pumpScheduled && !sources.isEmpty()) {
            pumpScheduled = true;
            ctx.executor().execute(this::pump);
        }
    }

    private void pump() {
        pumpScheduled = false;
        if (closing || !ctx.channel().isActive()) {
            return;
        }
        int written = 0;
        int unflushed = 0;
        boolean progress = true;
        // round robin, a batch per consumer per round: one consumer's window does not starve the others
        while (progress && written < PUMP_BUDGET && ctx.channel().isWritable()) {
            progress = false;
            for (int i = 0; i < sources.size() && ctx.channel().isWritable(); i++) {
                Source s = sources.get(i);
                int n = s.ready();
                if (n > 0) {
                    unflushed += s.write(ctx, n);
                    written += n;
                    progress = true;
                    if (unflushed >= FLUSH_BYTES) {
                        ctx.flush();
                        unflushed = 0;
                    }
                }
            }
        }
        if (written > 0) {
            ctx.flush();
            peer.counters.deliveries.add(written);
        }
        if (written >= PUMP_BUDGET && ctx.channel().isWritable() && !pumpScheduled) {
            // More to write, but first the socket reads (acks, publishes of other connections): a task
            // submitted with execute() would run in the same task pass, and Netty 4.2 lets tasks run up to a
            // second before it goes back to I/O; a scheduled one waits for the next pass.
            pumpScheduled = true;
            ctx.executor().schedule(this::pump, 1, TimeUnit.MICROSECONDS);
        }
    }

    // ---------------------------------------------------------------------------------------------

    private void reply(int channel, boolean nowait, MethodEncoder ok) {
        if (!nowait) {
            send(channel, ok);
        }
    }

    /** Writes one method frame; flushed at the end of the read (or by the caller). */
    private void send(int channel, MethodEncoder method) {
        ctx.write(Frames.method(ctx.alloc(), channel, method), ctx.voidPromise());
    }

    /** A client channel's state. Event loop only. */
    private static final class PeerChannel {
        final int number;
        boolean closing;
        // publishing
        boolean confirm;
        boolean confirmQueued;
        long publishSeq;
        long confirmedSeq;
        boolean contentExpected;
        long bodyRemaining;
        boolean firstBodyFrame;
        // consuming
        int prefetch;
        long nextDeliveryTag = 1;
        long outstanding;
        long ackedThrough;

        PeerChannel(int number) {
            this.number = number;
        }
    }

    /**
     * One consumer in SOURCE mode and its pre-encoded deliveries. A batch buffer holds {@code batch}
     * deliveries back to back (basic.deliver, content header, body frames, all of the same size); a write
     * patches the delivery tags of its first {@code n} deliveries in place and writes them as one retained
     * slice: per delivery the peer costs an 8-byte store, per batch one write. A buffer is patched only when
     * no slice of it is in flight (reference count 1); the buffers go round in the order they were written
     * (the socket finishes writes in that order), and a new one is copied from the first when the oldest is
     * still in flight, so a source holds as many as the socket keeps queued, and allocates nothing after
     * that. The source owns its buffers: {@link #release()} lets them go.
     */
    private static final class Source {
        final PeerChannel channel;
        final String tag;
        final boolean noAck;
        final long limit;
        /** Bytes of one delivery, and where its delivery tag starts. */
        final int deliverySize;

        final int deliveryTagOffset;
        /** Deliveries per batch buffer. */
        final int batch;
        /** Batch buffers, oldest written first. */
        final ArrayDeque<ByteBuf> buffers = new ArrayDeque<>();

        long sent;

        Source(
                PeerChannel channel,
                String tag,
                boolean noAck,
                long limit,
                ChannelHandlerContext ctx,
                int bodySize,
                int frameMax) {
            this.channel = channel;
            this.tag = tag;
            this.noAck = noAck;
            this.limit = limit;
            ByteBuf one = ctx.alloc().heapBuffer();
            ByteBuf first = null;
            try {
                Frames.writeMethod(
                        one,
                        channel.number,
                        new BasicDeliverEncoder().consumerTag(tag).exchange("").routingKey("perf"));
                Frames.writeContentHeader(one, channel.number, bodySize, BasicProperties.EMPTY);
                int maxBody = frameMax == 0 ? Math.max(1, bodySize) : frameMax - Frames.FRAME_OVERHEAD;
                for (int left = bodySize; left > 0; ) {
                    int n = Math.min(maxBody, left);
                    Frames.writeHeader(one, FrameType.BODY, channel.number, n);
                    one.writeZero(n);
                    one.writeByte(Frames.FRAME_END);
                    left -= n;
                }
                deliverySize = one.readableBytes();
                batch = Math.max(1, Math.min(MAX_BATCH, BATCH_BYTES / deliverySize));
                first = ctx.alloc().directBuffer(deliverySize * batch);
                for (int i = 0; i < batch; i++) {
                    first.writeBytes(one, one.readerIndex(), deliverySize);
                }
                buffers.add(first);
            } catch (RuntimeException e) {
                if (first != null) {
                    first.release();
                }
                throw e;
            } finally {
                one.release();
            }
            // frame header (7), class and method ids (4), the consumer tag (1 + n): then the delivery tag
            deliveryTagOffset = Frames.FRAME_HEADER_SIZE + 4 + 1 + tag.getBytes(StandardCharsets.UTF_8).length;
        }

        /** How many deliveries may be written now (at most a batch): the count limit, then the prefetch window. */
        int ready() {
            long n = limit == 0 ? batch : Math.min(batch, limit - sent);
            if (!noAck && channel.prefetch > 0) {
                n = Math.min(n, channel.prefetch - channel.outstanding);
            }
            return (int) Math.max(0, n);
        }

        /** Writes the next {@code n} deliveries (at most {@link #batch}); returns the bytes written. */
        int write(ChannelHandlerContext ctx, int n) {
            ByteBuf b = buffers.peekFirst();
            if (b.refCnt() == 1) {
                buffers.pollFirst();
            } else {
                b = ctx.alloc().directBuffer(deliverySize * batch).writeBytes(b, 0, deliverySize * batch);
            }
            buffers.addLast(b);
            for (int i = 0, at = deliveryTagOffset; i < n; i++, at += deliverySize) {
                b.setLong(at, channel.nextDeliveryTag++);
            }
            int bytes = n * deliverySize;
            ctx.write(b.retainedSlice(0, bytes), ctx.voidPromise());
            sent += n;
            if (!noAck) {
                channel.outstanding += n;
            }
            return bytes;
        }

        /** Releases the batch buffers (slices in flight keep theirs until written); true, for a {@code removeIf}. */
        boolean release() {
            ByteBuf b;
            while ((b = buffers.poll()) != null) {
                b.release();
            }
            return true;
        }
    }
}
