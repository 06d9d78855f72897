package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import io.netty.channel.EventLoop;
import io.warren.ConnectionOptions;
import io.warren.RecoveryOptions;
import io.warren.codec.method.ChannelOpenOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.impl.metrics.MetricsCollector;
import io.warren.impl.recovery.ConnectionRecovery;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A connection with automatic recovery against a row of {@link FakeBroker}s: the first one is connected to at
 * once, and each reconnection attempt gets the next one (a new {@code EmbeddedChannel} whose handler takes the
 * same {@link ConnectionImpl} over), so a test cuts the socket, lets the backoff run out and scripts what the
 * broker answers to the restore frame by frame. Recovery runs on the first broker's event loop, as it runs on
 * the connection's first loop in production.
 */
final class RecoveringBrokers implements AutoCloseable {

    /** One millisecond of backoff, no jitter: a test advances the clock by {@link #BACKOFF_MILLIS}. */
    static final long BACKOFF_MILLIS = 1;

    final ConnectionOptions options;
    final FakeBroker first;
    final ConnectionImpl connection;
    final ConnectionRecovery recovery;
    private final List<FakeBroker> brokers = new ArrayList<>();

    RecoveringBrokers() {
        this(new RecoveryOptions());
    }

    RecoveringBrokers(RecoveryOptions recovery) {
        this(new ConnectionOptions().recovery(recovery));
    }

    /** With {@code options}' publish settings and recovery options; the backoff is replaced by the test's. */
    RecoveringBrokers(ConnectionOptions options) {
        this(options, MetricsCollector.NOOP);
    }

    /** As {@link #RecoveringBrokers(ConnectionOptions)}, every connection counting into {@code metrics}. */
    RecoveringBrokers(ConnectionOptions options, MetricsCollector metrics) {
        this.options = new ConnectionOptions(options)
                .recovery(new RecoveryOptions(options.recovery())
                        .backoff(Duration.ofMillis(BACKOFF_MILLIS), Duration.ofMillis(BACKOFF_MILLIS), 1.0, 0.0));
        this.first = new FakeBroker(options, null, metrics);
        // Recovery's timers run on this loop: only the test moves its clock. On the wall clock the 1 ms backoff
        // could run out inside cut()'s own runPendingTasks, and the attempt be made before the test looks for it
        // (RecoveryTest failed so once in a full build).
        first.client.freezeTime();
        brokers.add(first);
        this.connection = first.handshake();
        ConnectionImpl recovering = connection;
        this.recovery = new ConnectionRecovery(
                connection,
                this.options, // with the test's backoff
                (o, loop) -> {
                    FakeBroker next = new FakeBroker(o, recovering, metrics);
                    brokers.add(next);
                    return next.connected;
                },
                (EventLoop) first.client.eventLoop());
        connection.enableRecovery(this.recovery);
    }

    /** The broker of the current connection. */
    FakeBroker current() {
        return brokers.get(brokers.size() - 1);
    }

    /** Runs recovery's tasks (they run on the first broker's loop). */
    void runRecoveryTasks() {
        first.client.runPendingTasks();
    }

    /**
     * Runs every loop's tasks. In production one event loop serves the connection across recoveries; here each
     * broker has its own, and what was made on the first (recovery, a consumer's queue drains) stays on it.
     */
    void runAllTasks() {
        for (FakeBroker b : brokers) {
            b.client.runPendingTasks();
        }
    }

    /**
     * Cuts the current connection's socket, lets the backoff run out, and answers the new connection's handshake;
     * returns the new broker, whose next frames are the restore's.
     */
    FakeBroker cutAndReconnect() {
        cut();
        return cutAndReconnectAfterLoss();
    }

    /**
     * The current connection's socket fails (a reset). Not {@code EmbeddedChannel.close()}: that cancels the
     * loop's scheduled tasks, recovery's backoff timer among them, which a real event loop would keep.
     */
    void cut() {
        FakeBroker b = current();
        b.client.pipeline().fireExceptionCaught(new IOException("Connection reset by peer (test)"));
        b.client.runPendingTasks();
        assertFalse(b.client.isOpen(), "the connection is cut");
    }

    /** {@link #cutAndReconnect()} once the test has cut the socket itself. */
    FakeBroker cutAndReconnectAfterLoss() {
        return cutAndReconnectAfterLoss(0);
    }

    /** {@link #cutAndReconnectAfterLoss()}, the new connection tuned to {@code heartbeat} seconds. */
    FakeBroker cutAndReconnectAfterLoss(int heartbeat) {
        FakeBroker lost = current();
        FakeBroker next = lost;
        // Step the clock until the attempt is made, not once: the backoff timer may have been armed a task hand-off
        // after the cut.
        for (int step = 0; step < 1000 && next == lost; step++) {
            first.client.advanceTimeBy(BACKOFF_MILLIS, TimeUnit.MILLISECONDS);
            runRecoveryTasks();
            next = current();
        }
        assertNotSame(lost, next, "recovery made a reconnection attempt");
        next.handshake(2047, 131072, heartbeat);
        runRecoveryTasks(); // the attempt's result is handed back to recovery's loop: the restore starts
        return next;
    }

    /** Answers the re-open of channel {@code number} on {@code broker}. */
    static void reopen(FakeBroker broker, int number) {
        broker.expectAndRelease(number, MethodIds.CHANNEL_OPEN);
        broker.send(number, new ChannelOpenOkEncoder());
    }

    /** The number of brokers connected to so far. */
    int connections() {
        return brokers.size();
    }

    @Override
    public void close() {
        // By index: closing a broker is a connection loss, and a reconnection attempt that comes due while this runs
        // adds a broker; it is closed too
        for (int i = 0; i < brokers.size(); i++) {
            brokers.get(i).close();
        }
    }
}
