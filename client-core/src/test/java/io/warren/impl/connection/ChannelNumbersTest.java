package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ChannelNumbersTest {

    @Test
    void allocatesUpToChannelMaxThenRefuses() {
        ChannelNumbers numbers = new ChannelNumbers(3);
        assertEquals(1, numbers.allocate());
        assertEquals(2, numbers.allocate());
        assertEquals(3, numbers.allocate());
        assertEquals(-1, numbers.allocate());
    }

    @Test
    void aFreedNumberIsTheLastToBeReused() {
        ChannelNumbers numbers = new ChannelNumbers(4);
        assertEquals(1, numbers.allocate());
        assertEquals(2, numbers.allocate());
        numbers.free(1);
        assertEquals(3, numbers.allocate());
        assertEquals(4, numbers.allocate());
        assertEquals(1, numbers.allocate()); // wrapped round
        assertEquals(-1, numbers.allocate());
    }

    @Test
    void everyNumberOnceAcrossTheWholeRange() {
        ChannelNumbers numbers = new ChannelNumbers(65535);
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 65535; i++) {
            int n = numbers.allocate();
            assertEquals(true, n >= 1 && n <= 65535 && seen.add(n), "number " + n);
        }
        assertEquals(-1, numbers.allocate());
    }

    @Test
    void freeingAFreeNumberIsABug() {
        ChannelNumbers numbers = new ChannelNumbers(2);
        assertThrows(IllegalStateException.class, () -> numbers.free(1));
        assertThrows(IllegalArgumentException.class, () -> new ChannelNumbers(0));
    }
}
