package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.ChannelId;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DirectNioSocketChannelTest {

    @Test
    void eachChannelHasItsOwnIdFromACounterNotNettysMachineId() {
        DirectNioSocketChannel first = new DirectNioSocketChannel();
        DirectNioSocketChannel second = new DirectNioSocketChannel();
        try {
            // not Netty's DefaultChannelId, whose first use lists the network interfaces for a MAC address
            ChannelId a = assertInstanceOf(DirectNioSocketChannel.SequenceId.class, first.id());
            ChannelId b = assertInstanceOf(DirectNioSocketChannel.SequenceId.class, second.id());
            assertNotEquals(a, b);
            assertNotEquals(a.asShortText(), b.asShortText());
            assertNotEquals(a.asLongText(), b.asLongText());
            assertTrue(a.compareTo(b) < 0, "ids order by creation");
            assertEquals(0, a.compareTo(first.id()));
            assertEquals(a, first.id());
            assertEquals(a.hashCode(), first.id().hashCode());
            assertTrue(a.asShortText().matches("[0-9a-f]{8,}"), a.asShortText());
            assertTrue(a.asLongText().matches("[0-9a-f]{8}-[0-9a-f]{8,}"), a.asLongText());
            assertTrue(a.asLongText().endsWith(a.asShortText()));
            assertEquals(a.asLongText().substring(0, 8), b.asLongText().substring(0, 8), "one prefix per JVM");
            assertTrue(first.toString().contains(a.asShortText()), "Netty's channel toString names the id");
        } finally {
            first.unsafe().closeForcibly();
            second.unsafe().closeForcibly();
        }
    }

    @Test
    void idsStayUniqueAndTheirHashesSpread() {
        Set<ChannelId> ids = new HashSet<>();
        Set<Integer> hashes = new HashSet<>();
        Set<Integer> lowBits = new HashSet<>();
        for (int i = 0; i < 4096; i++) {
            ChannelId id = DirectNioSocketChannel.SequenceId.next();
            assertTrue(ids.add(id));
            hashes.add(id.hashCode());
            lowBits.add(id.hashCode() & 0xFF);
        }
        assertEquals(4096, hashes.size());
        // consecutive counters must not land in a few buckets of a channel group's hash map
        assertEquals(256, lowBits.size());
        assertFalse(ids.contains(DirectNioSocketChannel.SequenceId.next()));
    }
}
