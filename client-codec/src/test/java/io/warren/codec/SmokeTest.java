package io.warren.codec;

import static org.junit.jupiter.api.Assertions.*;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.content.PublishFraming;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicDeliver;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicPublishEncoder;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SmokeTest {
    @Test
    void deliverRoundTrip() {
        PooledByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
        ByteBuf body = alloc.buffer().writeBytes(new byte[100]);
        BasicProperties props = BasicProperties.builder().contentType("text/plain").headers(Map.of("a", 1)).persistent(true).build();
        ByteBuf frames = PublishFraming.frame(alloc, 1, 4096, new BasicDeliverEncoder().consumerTag("ctag").deliveryTag(42)
                .exchange(ShortString.of("ex")).routingKey("rk").redelivered(true), props, body);
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        ch.writeInbound(frames);
        Frame m = ch.readInbound();
        BasicDeliver d = new BasicDeliver().wrap(m.payload(), m.payload().readerIndex());
        assertEquals("ctag", d.consumerTagAsString());
        assertEquals(42, d.deliveryTag());
        assertTrue(d.redelivered());
        assertEquals("ex", d.exchange().toString());
        assertEquals("rk", d.routingKeyAsString());
        System.out.println(d);
        Frame h = ch.readInbound();
        ContentHeader ch2 = new ContentHeader().wrap(h.payload(), h.payload().readerIndex());
        assertEquals(100, ch2.bodySize());
        assertEquals(props, ch2.toProperties());
        System.out.println(ch2);
        Frame b = ch.readInbound();
        assertEquals(100, b.payload().readableBytes());
        m.release(); h.release(); b.release();
        assertFalse(ch.finish());
    }
}
