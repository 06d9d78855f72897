package io.warren.impl.connection;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.warren.codec.Frames;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Heartbeats once the interval is tuned. Event loop only.
 *
 * <ul>
 *   <li>Sending: a timer ticks every half interval, the first tick half an interval after tune; a heartbeat
 *       goes out on a tick when nothing was written since the previous tick, so a busy connection sends
 *       none and an idle one sends one at most an interval after its last write.</li>
 *   <li>Receiving: any frame counts as a sign of life. As in Netty's {@code IdleStateHandler}, a frame only
 *       sets a flag ({@link #onRead()}) and the clock is read once per read batch ({@link #onReadComplete()}),
 *       so the check costs nothing per frame. The check is scheduled for the moment the silence reaches
 *       two intervals (the spec's "two heartbeat intervals or longer") and, when something arrived meanwhile,
 *       re-scheduled for the remainder: the connection fails at two intervals of silence, not later.
 *       RabbitMQ sends a heartbeat after half an interval of its own silence, so a healthy idle broker is
 *       heard about four times in that window.</li>
 *   <li>A heartbeat whose write fails is only logged: if the socket is really broken, the read side or
 *       the transport reports it, and a transient failure must not close a healthy connection.</li>
 * </ul>
 */
final class Heartbeats {

    private static final Logger LOG = LoggerFactory.getLogger(Heartbeats.class);

    private final OutboundPath outbound;
    private final EventExecutor loop;
    private final ByteBufAllocator alloc;
    private final LongConsumer onSilence;

    // event loop only
    private long intervalNanos;
    /** When the last read batch that held a frame ended (or reading resumed, or tune). */
    private long lastReadNanos;
    /** A frame arrived in the current read batch. */
    private boolean reading;

    private boolean paused;
    private ScheduledFuture<?> sendTimer;
    private ScheduledFuture<?> receiveCheck;
    // named classes, not method references: each method reference is a class a fresh JVM generates at its first use
    private final Runnable sendTask = new SendIfIdle();
    private final Runnable checkTask = new CheckReceived();

    /** @param onSilence told the milliseconds of silence when the broker missed two intervals */
    Heartbeats(OutboundPath outbound, ByteBufAllocator alloc, LongConsumer onSilence) {
        this.outbound = outbound;
        this.loop = outbound.eventLoop();
        this.alloc = alloc;
        this.onSilence = onSilence;
    }

    /** Starts with the negotiated interval; 0 disables heartbeats. */
    void start(int seconds) {
        assert loop.inEventLoop() : "heartbeats off the event loop";
        stop();
        if (seconds <= 0) {
            return;
        }
        intervalNanos = TimeUnit.SECONDS.toNanos(seconds);
        lastReadNanos = loop.ticker().nanoTime();
        reading = false;
        outbound.takeWrittenMark(); // what the handshake wrote does not postpone the first heartbeat
        long half = intervalNanos / 2;
        sendTimer = loop.scheduleAtFixedRate(sendTask, half, half, TimeUnit.NANOSECONDS);
        receiveCheck = loop.schedule(checkTask, 2 * intervalNanos, TimeUnit.NANOSECONDS);
    }

    /**
     * Reading from the socket was paused (back-pressure) or resumed. While paused, silence is ours, not
     * the broker's: the receive check is suspended, and the clock restarts on resume.
     */
    void readingPaused(boolean paused) {
        assert loop.inEventLoop() : "heartbeats off the event loop";
        this.paused = paused;
        if (!paused) {
            lastReadNanos = loop.ticker().nanoTime();
        }
    }

    /** A frame arrived. */
    void onRead() {
        assert loop.inEventLoop() : "heartbeats off the event loop";
        reading = true;
    }

    /** The read batch is over (channelReadComplete): if it held a frame, the broker was heard now. */
    void onReadComplete() {
        assert loop.inEventLoop() : "heartbeats off the event loop";
        if (reading) {
            reading = false;
            lastReadNanos = loop.ticker().nanoTime();
        }
    }

    void stop() {
        assert loop.inEventLoop() : "heartbeats off the event loop";
        if (sendTimer != null) {
            sendTimer.cancel(false);
            sendTimer = null;
        }
        if (receiveCheck != null) {
            receiveCheck.cancel(false);
            receiveCheck = null;
        }
    }

    private void checkReceived() {
        long now = loop.ticker().nanoTime();
        if (reading || paused) {
            // mid-batch, or our own back-pressure: not the broker's silence
            lastReadNanos = now;
        }
        long silent = now - lastReadNanos;
        long limit = 2 * intervalNanos;
        if (silent >= limit) {
            stop();
            onSilence.accept(TimeUnit.NANOSECONDS.toMillis(silent));
            return;
        }
        receiveCheck = loop.schedule(checkTask, limit - silent, TimeUnit.NANOSECONDS);
    }

    private void sendIfIdle() {
        if (!outbound.takeWrittenMark()) {
            outbound.write(Frames.heartbeat(alloc), cause -> {
                if (cause != null) {
                    LOG.debug("heartbeat write failed (the connection is not closed for this)", cause);
                }
            });
            outbound.takeWrittenMark(); // our own heartbeat is not activity
        }
    }

    private final class SendIfIdle implements Runnable {
        @Override
        public void run() {
            sendIfIdle();
        }
    }

    private final class CheckReceived implements Runnable {
        @Override
        public void run() {
            checkReceived();
        }
    }
}
