package io.warren.impl.channel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.netty.util.AsciiString;
import io.warren.codec.content.ShortString;
import org.junit.jupiter.api.Test;

class RepeatedNameTest {

    @Test
    void aNameSeenTwiceInARowIsEncodedOnceAndThenReused() {
        RepeatedName names = new RepeatedName();
        String exchange = new String("orders.é"); // not ASCII: the UTF-8 bytes must be right
        assertSame(exchange, names.of(exchange), "seen once: left as it is");
        ShortString encoded = assertInstanceOf(ShortString.class, names.of(new String("orders.é")));
        assertEquals("orders.é", encoded.toString());
        assertEquals(ShortString.of("orders.é").byteLength(), encoded.byteLength());
        assertSame(encoded, names.of("orders.é"), "reused, not encoded again");
    }

    @Test
    void namesThatChangeEveryTimeAreNeverEncoded() {
        RepeatedName names = new RepeatedName();
        for (int i = 0; i < 10; i++) {
            String key = "key." + (i % 2);
            assertSame(key, names.of(key));
        }
    }

    @Test
    void otherCharSequencesAndTooLongNamesPassThrough() {
        RepeatedName names = new RepeatedName();
        AsciiString ascii = AsciiString.of("x");
        assertSame(ascii, names.of(ascii));
        assertSame(null, names.of(null));
        String tooLong = "x".repeat(300);
        names.of(tooLong);
        assertSame(tooLong, names.of(tooLong), "left for the publisher's check to refuse");
    }
}
