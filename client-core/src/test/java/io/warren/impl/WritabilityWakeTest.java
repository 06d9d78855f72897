package io.warren.impl;

import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.expectPublish;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.PublishOptions;
import io.warren.impl.publish.WakeTurns;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Threads waiting in {@link Channel#whenWritable()} on one connection: when it turns writable, only as many are woken
 * as the room under the high-water mark holds (their channel's last publish each), the others at the next change
 * or, when none comes, by the check a short while later. Waking them all would send most back to wait at once.
 */
class WritabilityWakeTest {

    private static final int MARK = 65536;
    private static final int LARGE = 70_000;
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    private static ConnectionOptions options() {
        return new ConnectionOptions().publishOptions(new PublishOptions().writeBufferHighWaterMark(MARK));
    }

    /** A direct body: written to Netty at once, never held by its channel for the socket. */
    private static ByteBuf direct(int length) {
        return Unpooled.directBuffer(length).writeZero(length);
    }

    /** Channels 1 to {@code n} of a connection just handshaken. */
    private static Channel[] openChannels(FakeBroker broker, int n) {
        ConnectionImpl c = broker.handshake(2047, 0, 0);
        Channel[] channels = new Channel[n];
        for (int i = 0; i < n; i++) {
            channels[i] = broker.openChannel(c, i + 1);
        }
        return channels;
    }

    /** One publish of a direct body of {@code size} bytes on each channel. */
    private static void publishOnEach(Channel[] channels, int size) {
        for (Channel ch : channels) {
            ch.publish("", "q", false, PublishTest.PROPS, direct(size));
        }
    }

    private static List<CompletionStage<Void>> waitOnEach(FakeBroker broker, Channel[] channels) {
        List<CompletionStage<Void>> waiting = new ArrayList<>();
        for (Channel ch : channels) {
            assertFalse(ch.isWritable());
            waiting.add(ch.whenWritable());
        }
        broker.client.runPendingTasks(); // the waiters reach the loop
        waiting.forEach(PublishFixture::assertPending);
        return waiting;
    }

    private static List<Integer> woken(List<CompletionStage<Void>> waiting) {
        List<Integer> done = new ArrayList<>();
        for (int i = 0; i < waiting.size(); i++) {
            if (waiting.get(i).toCompletableFuture().isDone()) {
                waiting.get(i).toCompletableFuture().join(); // completed normally, not failed
                done.add(i);
            }
        }
        return done;
    }

    /**
     * A large publish on each channel while the socket takes nothing, a thread waiting on each, then the socket
     * drained (the broker reads the three): the waits, which the drain's round has begun to wake.
     */
    private static List<CompletionStage<Void>> largeOnEachThenWaiting(
            FakeBroker broker, Channel[] channels, PublishFixture.StalledSocket socket) {
        publishOnEach(channels, LARGE);
        broker.client.runPendingTasks();
        List<CompletionStage<Void>> waiting = waitOnEach(broker, channels);
        socket.drain();
        for (int i = 1; i <= channels.length; i++) {
            expectPublish(broker, i).body();
        }
        return waiting;
    }

    @Test
    void largePublishersWaitingAreWokenOneAtATimeInTurnsAndTheRestByTheCheckWhenNoneFollows() {
        try (FakeBroker broker = new FakeBroker(options())) {
            broker.client.freezeTime();
            Channel[] channels = openChannels(broker, 3);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            List<CompletionStage<Void>> waiting = largeOnEachThenWaiting(broker, channels, socket);

            // Each time the connection turns writable one 70 KB publisher is woken (the first always is; the next
            // would not fit under the 64 KiB mark). It publishes again and waits again. Three channels: a turn that
            // moved by the rounds' fixed stride of 3 would wake the same one every time.
            List<Integer> order = new ArrayList<>();
            for (int cycle = 0; cycle < 6; cycle++) {
                List<Integer> now = woken(waiting);
                assertEquals(1, now.size(), () -> "one woken at a time: " + now + " after " + order);
                int one = now.get(0);
                order.add(one);
                socket.stall();
                channels[one].publish("", "q", false, PublishTest.PROPS, direct(LARGE));
                broker.client.runPendingTasks();
                assertFalse(channels[one].isWritable());
                waiting.set(one, channels[one].whenWritable());
                broker.client.runPendingTasks();
                assertPending(waiting.get(one));
                socket.drain();
                expectPublish(broker, one + 1).body();
                broker.client.runPendingTasks();
            }
            for (int i = 0; i < 3; i++) {
                int channel = i;
                assertEquals(
                        2, order.stream().filter(o -> o == channel).count(), () -> "every channel in turn: " + order);
            }

            // nobody publishes now: the two still waiting are woken by the check, not by a change that will not come
            assertEquals(1, woken(waiting).size());
            for (int i = 0; i < 3 && woken(waiting).size() < 3; i++) {
                broker.client.advanceTimeBy(WakeTurns.CHECK_NANOS, TimeUnit.NANOSECONDS);
                broker.client.runScheduledPendingTasks();
            }
            assertEquals(List.of(0, 1, 2), woken(waiting), "the check woke the rest");
            for (Channel ch : channels) {
                assertTrue(ch.isWritable());
            }
        }
    }

    /**
     * The broker stops reading for a while after a woken publisher published: the checks in that time find the
     * connection unwritable, so they must not make the round that ends it wake everyone (most would find the room
     * taken and wait again); it wakes the next in turn.
     */
    @Test
    void aStallOfTheSocketAfterAWokenPublisherPublishedWakesOnlyTheNextInTurnWhenItEnds() {
        try (FakeBroker broker = new FakeBroker(options())) {
            broker.client.freezeTime();
            Channel[] channels = openChannels(broker, 3);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            List<CompletionStage<Void>> waiting = largeOnEachThenWaiting(broker, channels, socket);
            List<Integer> first = woken(waiting);
            assertEquals(1, first.size(), () -> "one woken: " + first);
            int one = first.get(0);

            socket.stall();
            channels[one].publish("", "q", false, PublishTest.PROPS, direct(LARGE));
            broker.client.runPendingTasks();
            assertFalse(channels[one].isWritable());
            for (int i = 0; i < 5; i++) {
                broker.client.advanceTimeBy(WakeTurns.CHECK_NANOS, TimeUnit.NANOSECONDS);
                broker.client.runScheduledPendingTasks();
            }
            assertEquals(List.of(one), woken(waiting), "nobody woken while the socket takes nothing");

            socket.drain();
            expectPublish(broker, one + 1).body();
            broker.client.runPendingTasks();
            List<Integer> after = woken(waiting);
            assertEquals(2, after.size(), () -> "the next in turn, not everyone: " + after);
            assertTrue(after.contains(one));
        }
    }

    /**
     * While the connection is unwritable the check has nothing to do, and it ends: a check that looked again every
     * few milliseconds went on for as long as the connection stayed unwritable, which a closed one does for good,
     * on an event loop that other connections share and holding the connection's state from the collector.
     */
    @Test
    void noCheckStaysScheduledWhileTheConnectionIsUnwritableNorAfterItsChannelsClose() {
        try (FakeBroker broker = new FakeBroker(options())) {
            broker.client.freezeTime();
            Channel[] channels = openChannels(broker, 3);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            List<CompletionStage<Void>> waiting = largeOnEachThenWaiting(broker, channels, socket);
            int one = woken(waiting).get(0);
            socket.stall();
            channels[one].publish("", "q", false, PublishTest.PROPS, direct(LARGE));
            broker.client.runPendingTasks();
            for (int i = 0; i < 3; i++) { // a round came since the first check: it looks once more
                broker.client.advanceTimeBy(WakeTurns.CHECK_NANOS, TimeUnit.NANOSECONDS);
                broker.client.runScheduledPendingTasks();
            }
            long pending = broker.client.runScheduledPendingTasks();
            // what else the connection schedules comes far later (-1: nothing)
            assertTrue(pending < 0 || pending > SECOND, () -> "the check ended; next task in " + pending + " ns");

            for (int i = 1; i <= 3; i++) {
                broker.sendChannelClose(i, 320, "gone", 0, 0);
            }
            broker.client.runPendingTasks();
            for (CompletionStage<Void> w : waiting) {
                assertTrue(w.toCompletableFuture().isDone(), "every wait ended with its channel");
            }
            broker.client.advanceTimeBy(10 * WakeTurns.CHECK_NANOS, TimeUnit.NANOSECONDS);
            long next = broker.client.runScheduledPendingTasks();
            assertTrue(next < 0 || next > SECOND, () -> "no check after the close; next task in " + next + " ns");
        }
    }

    /** Metering must not hold back publishers whose messages fit: the old behaviour, kept for small publishes. */
    @Test
    void smallPublishersWaitingAreAllWokenAtOnce() {
        try (FakeBroker broker = new FakeBroker(options())) {
            Channel[] channels = openChannels(broker, 4);
            Channel[] small = {channels[0], channels[1], channels[2]};
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            publishOnEach(small, 1000);
            publishOnEach(new Channel[] {channels[3]}, LARGE);
            broker.client.runPendingTasks();
            List<CompletionStage<Void>> waiting = waitOnEach(broker, small);

            socket.drain();
            for (int i = 1; i <= 4; i++) {
                expectPublish(broker, i).body();
            }
            assertEquals(List.of(0, 1, 2), woken(waiting), "three 1 KB publishers fit under the mark");
        }
    }
}
