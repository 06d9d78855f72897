package io.warren.impl.recovery;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpException;
import io.warren.BackPressureException;
import io.warren.ConnectionClosedException;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOutcome;
import io.warren.RecoveryOptions;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.metrics.MetricsCollector;
import io.warren.impl.publish.Publisher;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The publishes a channel holds while it recovers ({@link RecoveryOptions.PublishDuringRecovery#WAIT}): those made
 * meanwhile, and those the lost channel had accepted but not written, {@linkplain #carry carried} over (they never
 * reached the broker, so writing them after recovery cannot duplicate anything; their bodies move from task to task,
 * never copied). Each takes its place in the channel's one order of held publishes and methods ({@link
 * ChannelRecovery}) and is written in it once the channel, its modes, the topology and its consumers are back.
 *
 * <p>A publish is checked, and its names copied, on its caller's thread as the publisher does, and counted there
 * against {@code PublishOptions.maxPendingBytes}: a bad or refused one fails at the call. It then takes its place on
 * the event loop, through the channel's outbound path, as a synchronous method the same thread called before it
 * did: it goes behind that method, as on an open channel. One made on the loop takes it at once.
 *
 * <p>Each waits at most {@link RecoveryOptions#publishWaitTimeout()} from when it takes its place, then fails (not
 * written, retryable); a publish taken over from the lost channel counts from then. Deadlines are read on recovery's
 * event-loop clock as places are taken, so they rise in queue order and one timer, armed for the oldest, fails the
 * expired head and re-arms for the next. A timer cancelled by the loop itself means it shut down: nothing will send
 * them, and they all fail.
 */
final class HeldPublishes {

    private static final Logger LOG = LoggerFactory.getLogger(HeldPublishes.class);

    /**
     * Bytes a held publish counts against the bound beyond its body (its names and header, its task): the publisher's
     * exact count is known only once it is framed, on the recovered channel.
     */
    private static final long OVERHEAD = 256;

    /** A publish as made: {@code future} is null for {@code publishNoOutcome}. */
    private record Publish(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            CompletableFuture<PublishOutcome> future,
            long bytes) {}

    /** A publish in its place in the channel's order. */
    private record Held(Publish publish, long place, long deadlineNanos) {}

    private final RecoverableChannel channel;
    /** The next place in the channel's order, or -1 when it holds nothing any more. Event loop. */
    private final LongSupplier places;

    // any thread
    /** Why the channel was lost last, for the messages of the publishes that fail. */
    private volatile AmqpException lossCause;

    // guarded by this
    /** The bytes of the publishes held, and of those on their way to the event loop to take their place. */
    private long bytes;

    // event loop only
    private final ArrayDeque<Held> queue = new ArrayDeque<>();
    /** Recovery's event loop: its clock dates the held publishes, its timer expires them. */
    private EventExecutor loop;
    /** Armed for the oldest held publish's deadline while any is held. */
    private final DeadlineTimer timer =
            new DeadlineTimer(this::expire, why -> failAll(shutDown(why), "will not be recovered"));

    HeldPublishes(RecoverableChannel channel, LongSupplier places) {
        this.channel = channel;
        this.places = places;
    }

    /** The channel was lost with {@code cause}; recovery runs on {@code loop}. Event loop. */
    void lost(AmqpException cause, EventExecutor loop) {
        this.lossCause = cause;
        this.loop = loop;
    }

    /**
     * Holds a publish made while the channel holds (see {@link ChannelRecovery#hold}): returns its stage, failed at
     * once when it is refused. Takes the body: released when the publish is refused or fails, else the publisher's
     * once it is sent. Any thread.
     *
     * <p>Its arguments are checked and its names copied as the publisher does before it accepts a publish: a bad one
     * fails now with {@link IllegalArgumentException}, not when it is sent (where a {@code publishNoOutcome} could
     * only log it), and a {@code StringBuilder} the caller reuses afterwards does not change the route.
     *
     * @param outcome false for {@code publishNoOutcome}: then a refusal is thrown instead
     * @param refusal why the channel refuses publishes now (it is recovering, and {@code FAIL_FAST} or
     *     transactional), or null
     */
    CompletionStage<PublishOutcome> hold(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            boolean outcome,
            String refusal) {
        if (body.refCnt() == 0) {
            // not released again (that would throw), as the publisher refuses it
            return refuse(
                    new IllegalArgumentException(
                            "channel " + channel.channelNumber() + ": body was already released (refCnt 0)"),
                    null,
                    outcome);
        }
        BasicProperties props = properties == null ? BasicProperties.EMPTY : properties;
        try {
            ShortString.checkedLength("exchange", exchange);
            ShortString.checkedLength("routing-key", routingKey);
            exchange = ShortString.immutable(exchange);
            routingKey = ShortString.immutable(routingKey);
            checkHeaderFits(props, mandatory);
        } catch (RuntimeException e) {
            return refuse(e, body, outcome);
        }
        if (refusal != null) {
            return refuse(notWritten(lossCause, refusal), body, outcome);
        }
        long size = body.readableBytes() + OVERHEAD;
        RuntimeException full = reserve(size);
        if (full != null) {
            return refuse(full, body, outcome);
        }
        CompletableFuture<PublishOutcome> future = new CompletableFuture<>();
        TakePlace take =
                new TakePlace(new Publish(exchange, routingKey, mandatory, props, body, outcome ? future : null, size));
        OutboundPath outbound = channel.state().outbound();
        if (outbound.inEventLoop() && outbound.defersLoopWrites()) {
            // on the loop behind what it queued before (a publish made inside the loss): its place after theirs
            outbound.deferBehindCaller(take);
        } else {
            outbound.execute(take);
        }
        return future;
    }

    /** Counts {@code size} bytes against the bound; returns the refusal when the hold is full, else null. */
    private synchronized RuntimeException reserve(long size) {
        long max = channel.maxPendingBytes();
        if (bytes > 0 && bytes + size > max) {
            return new BackPressureException(
                    "channel " + channel.channelNumber() + " is being recovered and already holds " + bytes
                            + " bytes of publishes (PublishOptions.maxPendingBytes " + max
                            + "); wait for Channel.whenWritable()",
                    channel.channelNumber());
        }
        bytes += size;
        return null;
    }

    private synchronized void unreserve(long size) {
        bytes -= size;
    }

    /**
     * A publish made while the channel holds, on the event loop now: it takes its place, or, when the channel holds
     * nothing any more (it was sent meanwhile, or the channel ended), goes to the publisher at once. Discarded by a
     * loop that shut down.
     */
    private final class TakePlace implements OutboundPath.DiscardableTask {
        private final Publish publish;

        TakePlace(Publish publish) {
            this.publish = publish;
        }

        @Override
        public void run() {
            long place = places.getAsLong();
            if (place < 0) {
                unreserve(publish.bytes);
                send(publish);
            } else {
                add(publish, place);
            }
        }

        @Override
        public void discard(Throwable cause) {
            unreserve(publish.bytes);
            fail(publish, shutDown(cause), "will not be recovered");
        }
    }

    /**
     * The content header must fit one frame, as the publisher checks it. The frame-max is the last connection's; the
     * publisher checks the recovered one's again.
     */
    private void checkHeaderFits(BasicProperties props, boolean mandatory) {
        ConnectionHandler connection = channel.state().connection();
        Publisher.checkHeaderFits(
                channel.channelNumber(),
                props,
                mandatory && connection.options().publishOptions().correlateReturns(),
                connection.facade().frameMax());
    }

    /**
     * A publish made during recovery and refused: counted as the publisher counts its refusals, {@code body}
     * released (null: not the caller's to release), thrown for {@code publishNoOutcome}.
     */
    private CompletionStage<PublishOutcome> refuse(RuntimeException why, ByteBuf body, boolean outcome) {
        metrics().publishFailed();
        if (body != null) {
            body.release();
        }
        if (!outcome) {
            throw why;
        }
        return CompletableFuture.failedFuture(why);
    }

    /**
     * Takes over a publish the lost channel had accepted but not written (the channel recovers, under {@code
     * WAIT}, and is not transactional: the caller checked): it takes the next place and owns {@code body}. Event
     * loop.
     *
     * @param future its outcome, {@code null} for {@code publishNoOutcome}
     * @param size what it counted against the connection's bound; it counts the same against the hold's, unchecked
     *     (it was within the bound when accepted, and the hold refuses publishes made meanwhile while these fill it)
     */
    void carry(
            CharSequence exchange,
            CharSequence routingKey,
            boolean mandatory,
            BasicProperties properties,
            ByteBuf body,
            CompletableFuture<PublishOutcome> future,
            long size) {
        long place = places.getAsLong();
        assert place >= 0 : "a publish carried over while the channel holds nothing";
        synchronized (this) {
            bytes += size;
        }
        add(new Publish(exchange, routingKey, mandatory, properties, body, future, size), place);
    }

    private void add(Publish p, long place) {
        long wait = channel.recoveryOptions().publishWaitTimeout().toNanos();
        queue.add(new Held(p, place, loop.ticker().nanoTime() + wait));
        if (!timer.isArmed()) {
            timer.arm(loop, wait);
        }
    }

    /** The place of the next held publish, {@link Long#MAX_VALUE} when none is held. Event loop. */
    long nextPlace() {
        Held h = queue.peek();
        return h == null ? Long.MAX_VALUE : h.place;
    }

    /** Sends the next held publish through the channel's publisher (a recovered one). Event loop. */
    void sendNext() {
        Held h = queue.poll();
        unreserve(h.publish.bytes);
        if (queue.isEmpty()) {
            timer.cancel();
        }
        send(h.publish);
    }

    /** Through the publisher, which numbers it for confirms when it writes it: confirm order is wire order. */
    private void send(Publish p) {
        if (p.future == null) {
            try {
                channel.publisher().publishNoOutcome(p.exchange, p.routingKey, p.mandatory, p.properties, p.body);
            } catch (RuntimeException e) {
                LOG.debug(
                        "channel {}: a publish held during recovery was refused: {}",
                        channel.channelNumber(),
                        e.toString());
            }
            return;
        }
        channel.publisher()
                .publish(p.exchange, p.routingKey, p.mandatory, p.properties, p.body)
                .whenComplete((outcome, e) -> {
                    if (e == null) {
                        p.future.complete(outcome);
                    } else {
                        p.future.completeExceptionally(e);
                    }
                });
    }

    /** The channel will not be recovered: every held publish fails with {@code cause}, not written. Event loop. */
    void failAll(AmqpException cause, String why) {
        timer.cancel();
        List<Held> failed = new ArrayList<>(queue);
        queue.clear();
        for (Held h : failed) {
            unreserve(h.publish.bytes);
            fail(h.publish, cause, why);
        }
    }

    int size() {
        return queue.size();
    }

    /** The timer: fails the held publishes whose own wait is over, re-arms for the next. Event loop. */
    private void expire() {
        timer.fired();
        long now = loop.ticker().nanoTime();
        List<Held> expired = new ArrayList<>();
        Held h;
        while ((h = queue.peek()) != null && h.deadlineNanos - now <= 0) {
            expired.add(queue.poll());
        }
        if (h != null) {
            timer.arm(loop, h.deadlineNanos - now);
        }
        if (!expired.isEmpty()) {
            LOG.debug(
                    "channel {}: {} publishes held during recovery failed: the channel was not back within the "
                            + "publish wait timeout of each",
                    channel.channelNumber(),
                    expired.size());
        }
        for (Held e : expired) {
            unreserve(e.publish.bytes);
            fail(e.publish, lossCause, "was not back within RecoveryOptions.publishWaitTimeout of the publish");
        }
    }

    private ConnectionClosedException shutDown(Throwable why) {
        return new ConnectionClosedException(
                "the connection's event loop shut down while the channel was being recovered (was the client or its"
                        + " event loop group closed?)",
                why == null ? lossCause : why);
    }

    /** A held publish that will not be written; counted once here, whether made or carried over. */
    private void fail(Publish p, AmqpException cause, String why) {
        // counted before its future fails, as the publisher does: whoever the failure wakes sees it counted
        metrics().publishFailed();
        p.body.release();
        if (p.future != null) {
            p.future.completeExceptionally(notWritten(cause, why));
        }
    }

    private PublishNotConfirmedException notWritten(AmqpException cause, String why) {
        return new PublishNotConfirmedException(
                "channel " + channel.channelNumber() + " " + why + "; the message was not published"
                        + (cause == null ? "" : ": " + cause.getMessage()),
                cause,
                channel.channelNumber(),
                false);
    }

    /** The connection's counters (one collector across its recoveries). */
    private MetricsCollector metrics() {
        return channel.state().connection().metrics();
    }
}
