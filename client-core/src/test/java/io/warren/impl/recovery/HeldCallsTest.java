package io.warren.impl.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpException;
import io.warren.ConnectionClosedException;
import io.warren.RpcTimeoutException;
import io.warren.codec.method.MethodIds;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The synchronous methods held while a channel recovers, on an embedded event loop whose clock only the test moves:
 * what each held call's send and fail did is written to {@link #log}.
 */
class HeldCallsTest {

    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(5);

    private final EmbeddedChannel loopOwner = new EmbeddedChannel();
    private final EventExecutor loop = loopOwner.eventLoop();
    private final HeldCalls calls = new HeldCalls(() -> 7);
    private final List<String> log = new ArrayList<>();
    private final List<AmqpException> failures = new ArrayList<>();
    private long places;

    HeldCallsTest() {
        loopOwner.freezeTime();
    }

    @AfterEach
    void close() {
        loopOwner.finishAndReleaseAll();
    }

    private void hold(String name, String queue, Runnable send) {
        calls.hold(loop, places++, TIMEOUT, MethodIds.QUEUE_DECLARE, queue, send, cause -> {
            log.add("failed " + name);
            failures.add(cause);
        });
    }

    private void hold(String name) {
        hold(name, null, () -> log.add("sent " + name));
    }

    /** What ChannelRecovery does with the calls once the channel is back (and no publish is held). */
    private void sendAll(UnaryOperator<String> queueNames) {
        while (calls.nextPlace() != Long.MAX_VALUE) {
            calls.sendNext(queueNames, (send, left) -> send.run());
        }
    }

    private void advanceMillis(long millis) {
        loopOwner.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        loopOwner.runScheduledPendingTasks();
    }

    /** Before, the first call's throw left sendAll and the calls behind it were never sent nor failed. */
    @Test
    void aSendThatThrowsDoesNotStrandTheCallsBehindIt() {
        hold("a", null, () -> {
            throw new IllegalStateException("a fails as it is sent");
        });
        hold("b");
        hold("c");
        sendAll(UnaryOperator.identity());
        assertEquals(List.of("sent b", "sent c"), log);
        assertEquals(0, calls.size());
    }

    @Test
    void aCallHeldWhileTheHeldOnesGoOutGoesBehindThem() {
        hold("a", null, () -> {
            log.add("sent a");
            hold("x"); // from a completion a's send ran
        });
        hold("b");
        sendAll(UnaryOperator.identity());
        assertEquals(List.of("sent a", "sent b", "sent x"), log);
    }

    @Test
    void eachCallWaitsTheTimeoutFromItsOwnCall() {
        hold("a");
        advanceMillis(3_000);
        hold("b");
        advanceMillis(1_999);
        assertEquals(List.of(), log);
        advanceMillis(1);
        assertEquals(List.of("failed a"), log);
        RpcTimeoutException e = assertInstanceOf(RpcTimeoutException.class, failures.get(0));
        assertEquals(7, e.channelNumber());
        assertTrue(e.getMessage().contains("was not sent"), e.getMessage());
        advanceMillis(3_000);
        assertEquals(List.of("failed a", "failed b"), log);
    }

    @Test
    void aCallNamingAQueueRecoveryRenamedFailsUnsentAndTheOthersGo() {
        hold("bind", "amq.gen-1", () -> log.add("sent bind"));
        hold("purge", "other", () -> log.add("sent purge"));
        sendAll(q -> q.equals("amq.gen-1") ? "amq.gen-2" : q);
        assertEquals(List.of("failed bind", "sent purge"), log);
        assertTrue(failures.get(0).getMessage().contains("'amq.gen-1' again as 'amq.gen-2'"));
    }

    @Test
    void failAllFailsEveryHeldCallWithTheCauseAndStopsTheTimer() {
        hold("a");
        hold("b");
        AmqpException cause = new AmqpException("gave up");
        calls.failAll(cause);
        assertEquals(List.of("failed a", "failed b"), log);
        assertEquals(List.of(cause, cause), failures);
        advanceMillis(10_000);
        assertEquals(2, log.size(), "no timeout after the failure");
    }

    /**
     * The loop shuts down (closing the embedded channel cancels its scheduled tasks, as a shutting-down loop does):
     * nothing will send the held calls or time them out. Before, they were never completed.
     */
    @Test
    void aLoopThatShutsDownFailsTheHeldCalls() {
        hold("a");
        hold("b");
        loopOwner.close();
        assertEquals(List.of("failed a", "failed b"), log);
        ConnectionClosedException e = assertInstanceOf(ConnectionClosedException.class, failures.get(0));
        assertTrue(e.getMessage().contains("on channel 7 was not sent"), e.getMessage());
        assertEquals(0, calls.size());
    }

    /** The timer the hold cancels itself once everything went is not the loop's shutdown: nothing fails then. */
    @Test
    void aLoopThatShutsDownAfterTheCallsWentFailsNothing() {
        hold("a");
        sendAll(UnaryOperator.identity());
        loopOwner.close();
        assertEquals(List.of("sent a"), log);
    }
}
