package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.warren.codec.base.Utf8;
import org.junit.jupiter.api.Test;

/** The frames Warren writes on its own: a close's reply text, whatever text it was given, always encodes. */
class RequestsTest {

    @Test
    void aReplyTextIsWrittenWithAnUnpairedSurrogateAsAQuestionMarkAndCutAt255Bytes() {
        assertEquals("bad ? text", Requests.truncate("bad \uD800 text"));
        assertEquals("ok \uD83D\uDE00", Requests.truncate("ok \uD83D\uDE00"));
        String longBad = "\u00e9".repeat(200) + "\uDC00";
        String cut = Requests.truncate(longBad);
        assertTrue(Utf8.encodedLength("cut", cut) <= 255, cut);
        assertEquals("\u00e9".repeat(127), cut); // two bytes each: 254, the next would pass 255
        // an internal close (an error's message quoting anything) is written, not thrown
        ByteBuf frame = Requests.channelClose(UnpooledByteBufAllocator.DEFAULT, 1, 406, "queue 'q\uD800' refused");
        try {
            assertTrue(frame.readableBytes() > 0);
        } finally {
            frame.release();
        }
    }
}
