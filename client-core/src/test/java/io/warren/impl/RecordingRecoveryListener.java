package io.warren.impl;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ChannelLostException;
import io.warren.Connection;
import io.warren.ConnectionLostException;
import io.warren.RecoveryListener;
import java.util.ArrayList;
import java.util.List;

/**
 * Records what recovery tells its listeners, one line per event in the order they came, and the cause each came
 * with: "recovery started", "recovery succeeded", "queue renamed old -> new", "recovery failed" (", will retry"), "topology failed: entity",
 * "channel 1 started 406", "channel 1 succeeded", "channel 1 failed 403" (the reply code, or the cause's class
 * when it has none). Recovery tells its listeners on the event loop, which is the test's thread here.
 */
final class RecordingRecoveryListener implements RecoveryListener {

    private final List<String> events = new ArrayList<>();
    private final List<Throwable> causes = new ArrayList<>();

    /** A recorder added to {@code connection}'s recovery listeners. */
    static RecordingRecoveryListener on(Connection connection) {
        RecordingRecoveryListener recorder = new RecordingRecoveryListener();
        connection.addRecoveryListener(recorder);
        return recorder;
    }

    /** The events so far. */
    List<String> events() {
        return List.copyOf(events);
    }

    /** The cause event {@code index} came with, or null. */
    Throwable cause(int index) {
        return causes.get(index);
    }

    private void record(String event, Throwable cause) {
        events.add(event);
        causes.add(cause);
    }

    private static String describe(Throwable cause) {
        return cause instanceof AmqpException a && a.replyCode() != 0
                ? String.valueOf(a.replyCode())
                : cause.getClass().getSimpleName();
    }

    @Override
    public void recoveryStarted(Connection connection, ConnectionLostException cause) {
        record("recovery started", cause);
    }

    @Override
    public void recoverySucceeded(Connection connection) {
        record("recovery succeeded", null);
    }

    @Override
    public void recoveryFailed(Connection connection, Throwable cause, boolean willRetry) {
        record("recovery failed" + (willRetry ? ", will retry" : ""), cause);
    }

    @Override
    public void queueRenamed(Connection connection, String oldName, String newName) {
        record("queue renamed " + oldName + " -> " + newName, null);
    }

    @Override
    public void topologyRecoveryFailed(Connection connection, String entity, Throwable cause) {
        record("topology failed: " + entity, cause);
    }

    @Override
    public void channelRecoveryStarted(Channel channel, ChannelLostException cause) {
        record("channel " + channel.channelNumber() + " started " + describe(cause), cause);
    }

    @Override
    public void channelRecoverySucceeded(Channel channel) {
        record("channel " + channel.channelNumber() + " succeeded", null);
    }

    @Override
    public void channelRecoveryFailed(Channel channel, Throwable cause) {
        record("channel " + channel.channelNumber() + " failed " + describe(cause), cause);
    }
}
