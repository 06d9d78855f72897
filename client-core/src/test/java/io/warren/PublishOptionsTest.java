package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The callers' writes and the flushes are tuned per connection through the options, not by system properties. */
class PublishOptionsTest {

    @Test
    void callersWritesHaveTheirDefaultsAndAreCopied() {
        PublishOptions o = new PublishOptions();
        assertEquals(Duration.ofNanos(50_000), o.callerWriteGap());
        assertEquals(16, o.callerWritesPerBurst());
        PublishOptions tuned =
                new PublishOptions().callerWriteGap(Duration.ZERO).callerWritesPerBurst(0);
        PublishOptions copy = new PublishOptions(tuned);
        assertEquals(Duration.ZERO, copy.callerWriteGap());
        assertEquals(0, copy.callerWritesPerBurst());
    }

    @Test
    void callersWritesOutOfRangeAreRefused() {
        PublishOptions o = new PublishOptions();
        assertThrows(IllegalArgumentException.class, () -> o.callerWriteGap(Duration.ofNanos(-1)));
        assertThrows(IllegalArgumentException.class, () -> o.callerWriteGap(Duration.ofSeconds(2)));
        assertThrows(NullPointerException.class, () -> o.callerWriteGap(null));
        assertThrows(IllegalArgumentException.class, () -> o.callerWritesPerBurst(-1));
        assertThrows(IllegalArgumentException.class, () -> o.callerWritesPerBurst(1025));
    }

    @Test
    void messagesPerFlushDefaultToCoalescedAndAreCopied() {
        assertEquals(Integer.MAX_VALUE, new PublishOptions().maxMessagesPerFlush());
        assertEquals(1, new PublishOptions(new PublishOptions().maxMessagesPerFlush(1)).maxMessagesPerFlush());
    }

    @Test
    void messagesPerFlushBelowOneAreRefused() {
        PublishOptions o = new PublishOptions();
        assertThrows(IllegalArgumentException.class, () -> o.maxMessagesPerFlush(0));
        assertThrows(IllegalArgumentException.class, () -> o.maxMessagesPerFlush(-1));
        assertEquals(Integer.MAX_VALUE, o.maxMessagesPerFlush(), "a refused value changes nothing");
    }
}
