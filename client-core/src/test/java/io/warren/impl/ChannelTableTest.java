package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.codec.Frame;
import io.warren.impl.connection.ChannelTable;
import io.warren.impl.connection.InboundChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The channels of a connection by number: sized by the numbers in use, not by the channel-max. */
class ChannelTableTest {

    private static final int RABBITMQ_DEFAULT_CHANNEL_MAX = 2047;

    @Test
    void aConnectionWithOneChannelDoesNotPayForTheChannelMax() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake(RABBITMQ_DEFAULT_CHANNEL_MAX, 131072, 0);
            broker.openChannel(c, 1);
            ChannelTable table = broker.handler.channelTable();
            assertEquals(RABBITMQ_DEFAULT_CHANNEL_MAX, table.channelMax());
            assertTrue(
                    table.capacity() <= ChannelTable.INITIAL_CAPACITY,
                    "slots for a few channels, not " + (RABBITMQ_DEFAULT_CHANNEL_MAX + 1) + ": " + table.capacity());
        }
    }

    @Test
    void growsToTheHighestNumberInUseAndKeepsEveryChannel() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake(RABBITMQ_DEFAULT_CHANNEL_MAX, 131072, 0);
            List<Channel> opened = new ArrayList<>();
            for (int n = 1; n <= 20; n++) {
                opened.add(broker.openChannel(c, n));
            }
            ChannelTable table = broker.handler.channelTable();
            InboundChannel recovered = table.allocate(1500, ChannelTableTest::numbered);
            for (Channel ch : opened) {
                assertEquals(ch.channelNumber(), table.get(ch.channelNumber()).number());
            }
            assertSame(recovered, table.get(1500));
            assertEquals(21, table.all().size());
            assertTrue(
                    table.capacity() > 1500 && table.capacity() <= RABBITMQ_DEFAULT_CHANNEL_MAX + 1,
                    "grown to the number in use, never past the channel-max: " + table.capacity());
            table.remove(recovered);
            assertNull(table.get(1500));
        }
    }

    @Test
    void numbersBeyondTheTableAreNoChannel() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake(RABBITMQ_DEFAULT_CHANNEL_MAX, 131072, 0);
            broker.openChannel(c, 1);
            ChannelTable table = broker.handler.channelTable();
            assertNull(table.get(RABBITMQ_DEFAULT_CHANNEL_MAX), "within the channel-max, never opened");
            assertNull(table.get(RABBITMQ_DEFAULT_CHANNEL_MAX + 1));
            assertNull(table.get(0));
        }
    }

    @Test
    void aSmallChannelMaxCapsTheTable() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake(2, 131072, 0);
            broker.openChannel(c, 1);
            broker.openChannel(c, 2);
            assertEquals(3, broker.handler.channelTable().capacity());
        }
    }

    /** A channel that only has its number: the table needs nothing else. */
    private static InboundChannel numbered(int n) {
        return new InboundChannel() {
            @Override
            public int number() {
                return n;
            }

            @Override
            public void onFrame(Frame frame) {
                frame.release();
            }

            @Override
            public void onConnectionClosed(AmqpException cause) {}
        };
    }
}
