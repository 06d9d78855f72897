package io.warren.impl;

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
 *   <li>A timer ticks every half interval, the first tick half an interval after tune.</li>
 *   <li>Sending: a heartbeat goes out on a tick when nothing was written since the previous tick, so a
 *       busy connection sends none.</li>
 *   <li>Receiving: any frame counts as a sign of life (the connection handler calls {@link #onRead()}).
 *       When nothing arrived for two intervals the broker is gone: the connection fails. Ticks read the
 *       clock, reads only set a flag, so the check costs nothing per frame.</li>
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
    private long lastReadNanos;
    private boolean readSinceTick;
    private boolean paused;
    private ScheduledFuture<?> timer;

    /** @param onSilence told the milliseconds of silence when the broker missed two intervals */
    Heartbeats(OutboundPath outbound, ByteBufAllocator alloc, LongConsumer onSilence) {
        this.outbound = outbound;
        this.loop = outbound.eventLoop();
        this.alloc = alloc;
        this.onSilence = onSilence;
    }

    /** Starts with the negotiated interval; 0 disables heartbeats. */
    void start(int seconds) {
        stop();
        if (seconds <= 0) {
            return;
        }
        intervalNanos = TimeUnit.SECONDS.toNanos(seconds);
        lastReadNanos = loop.ticker().nanoTime();
        readSinceTick = false;
        outbound.takeWrittenMark(); // what the handshake wrote does not postpone the first heartbeat
        long half = intervalNanos / 2;
        timer = loop.scheduleAtFixedRate(this::tick, half, half, TimeUnit.NANOSECONDS);
    }

    /**
     * Reading from the socket was paused (back-pressure) or resumed. While paused, silence is ours, not
     * the broker's: the receive check is suspended, and the clock restarts on resume.
     */
    void readingPaused(boolean paused) {
        this.paused = paused;
        if (!paused) {
            lastReadNanos = loop.ticker().nanoTime();
        }
    }

    /** A frame arrived. */
    void onRead() {
        readSinceTick = true;
    }

    void stop() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    private void tick() {
        long now = loop.ticker().nanoTime();
        if (readSinceTick || paused) {
            readSinceTick = false;
            lastReadNanos = now;
        } else if (now - lastReadNanos >= 2 * intervalNanos) {
            stop();
            onSilence.accept(TimeUnit.NANOSECONDS.toMillis(now - lastReadNanos));
            return;
        }
        if (!outbound.takeWrittenMark()) {
            outbound.write(Frames.heartbeat(alloc), cause -> {
                if (cause != null) {
                    LOG.debug("heartbeat write failed (the connection is not closed for this)", cause);
                }
            });
            outbound.takeWrittenMark(); // our own heartbeat is not activity
        }
    }
}
