package io.warren.impl.channel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.warren.MessageTooLargeException;
import io.warren.codec.Frame;
import io.warren.codec.Frames;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.BasicDeliverEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Assembly of method + header + body frames: no copy, limits enforced on the header, nothing leaks. */
class ContentAssemblerTest {

    private static final PooledByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

    private static Frame methodFrame() {
        ByteBuf buf = ALLOC.buffer();
        new BasicDeliverEncoder()
                .consumerTag("ctag")
                .deliveryTag(7)
                .exchange("x")
                .routingKey("k")
                .encode(buf);
        return Frame.newInstance(FrameType.METHOD, 1, buf);
    }

    private static Frame headerFrame(long bodySize) {
        ByteBuf whole = Frames.contentHeader(
                ALLOC, 1, bodySize, BasicProperties.builder().type("t").build());
        ByteBuf payload = whole.retainedSlice(Frames.FRAME_HEADER_SIZE, whole.readableBytes() - Frames.FRAME_OVERHEAD);
        whole.release();
        return Frame.newInstance(FrameType.HEADER, 1, payload);
    }

    private static Frame bodyFrame(String text) {
        ByteBuf buf = ALLOC.buffer();
        buf.writeCharSequence(text, StandardCharsets.UTF_8);
        return Frame.newInstance(FrameType.BODY, 1, buf);
    }

    @Test
    void aSingleFrameBodyIsTheFramesOwnPayload() {
        ContentAssembler assembler = new ContentAssembler(1, 1024, ALLOC);
        List<AssembledContent> out = new ArrayList<>();
        assembler.begin(methodFrame(), out::add);
        assembler.onHeader(headerFrame(5));
        Frame body = bodyFrame("hello");
        ByteBuf payload = body.payload();
        assembler.onBody(body);
        assertEquals(1, out.size());
        AssembledContent c = out.get(0);
        assertTrue(c.body() == payload, "no copy, no wrapper: the frame's payload itself");
        assertEquals(5, c.bodySize());
        assertEquals(io.warren.codec.method.MethodIds.BASIC_DELIVER, c.methodKey());
        assertFalse(assembler.isActive());
        c.release();
    }

    @Test
    void aMultiFrameBodyIsACompositeOfThePayloads() {
        ContentAssembler assembler = new ContentAssembler(1, 1024, ALLOC);
        List<AssembledContent> out = new ArrayList<>();
        assembler.begin(methodFrame(), out::add);
        assembler.onHeader(headerFrame(11));
        assembler.onBody(bodyFrame("hello"));
        assertTrue(out.isEmpty());
        assembler.onBody(bodyFrame(" "));
        assembler.onBody(bodyFrame("world"));
        AssembledContent c = out.get(0);
        CompositeByteBuf body = assertInstanceOf(CompositeByteBuf.class, c.body());
        assertEquals(3, body.numComponents());
        assertEquals("hello world", body.toString(StandardCharsets.UTF_8));
        c.release();
    }

    /**
     * A body in frames of a byte each (any size is legal) is not held as one slice per byte: runs of small parts are
     * copied into one buffer, each byte once, and the bytes come out in order.
     */
    @Test
    void aBodyInTinyFramesIsHeldInRunsNotOnePartPerFrame() {
        int size = 10_000;
        ContentAssembler assembler = new ContentAssembler(1, size, ALLOC);
        List<AssembledContent> out = new ArrayList<>();
        assembler.begin(methodFrame(), out::add);
        assembler.onHeader(headerFrame(size));
        StringBuilder sent = new StringBuilder();
        for (int i = 0; i < size; i++) {
            String b = String.valueOf((char) ('a' + i % 26));
            sent.append(b);
            assembler.onBody(bodyFrame(b));
        }
        AssembledContent c = out.get(0);
        CompositeByteBuf body = assertInstanceOf(CompositeByteBuf.class, c.body());
        assertTrue(
                body.numComponents() <= size / ContentAssembler.CONSOLIDATE_PARTS + ContentAssembler.CONSOLIDATE_PARTS,
                "parts: " + body.numComponents());
        assertEquals(sent.toString(), body.toString(StandardCharsets.UTF_8));
        c.release();
    }

    /** Parts of frame-max size are never copied, however many. */
    @Test
    void largePartsAreNeverConsolidated() {
        int parts = ContentAssembler.CONSOLIDATE_PARTS * 2;
        String part = "x".repeat(ContentAssembler.SMALL_PART);
        ContentAssembler assembler = new ContentAssembler(1, (long) parts * part.length(), ALLOC);
        List<AssembledContent> out = new ArrayList<>();
        assembler.begin(methodFrame(), out::add);
        assembler.onHeader(headerFrame((long) parts * part.length()));
        for (int i = 0; i < parts; i++) {
            assembler.onBody(bodyFrame(part));
        }
        AssembledContent c = out.get(0);
        assertEquals(parts, assertInstanceOf(CompositeByteBuf.class, c.body()).numComponents());
        c.release();
    }

    @Test
    void anEmptyBodyCompletesOnTheHeader() {
        ContentAssembler assembler = new ContentAssembler(1, 1024, ALLOC);
        List<AssembledContent> out = new ArrayList<>();
        assembler.begin(methodFrame(), out::add);
        assembler.onHeader(headerFrame(0));
        assertEquals(0, out.get(0).body().readableBytes());
        out.get(0).release();
    }

    @Test
    void anAnnouncedSizeOverTheLimitIsRefusedBeforeAnyBodyFrame() {
        ContentAssembler assembler = new ContentAssembler(3, 10, ALLOC);
        List<Throwable> aborted = new ArrayList<>();
        assembler.begin(methodFrame(), new ContentAssembler.Listener() {
            @Override
            public void onContent(AssembledContent content) {
                throw new AssertionError("must not complete");
            }

            @Override
            public void onAbort(Throwable cause) {
                aborted.add(cause);
            }
        });
        MessageTooLargeException e =
                assertThrows(MessageTooLargeException.class, () -> assembler.onHeader(headerFrame(Long.MAX_VALUE)));
        assertEquals(3, e.channelNumber());
        assertEquals(311, e.replyCode());
        assertTrue(e.getMessage().contains("over the limit of 10"), e.getMessage());
        assertEquals(1, aborted.size());
        assertFalse(assembler.isActive());
    }

    @Test
    void framesOutOfOrderAreProtocolErrorsAndReleased() {
        ContentAssembler assembler = new ContentAssembler(1, 1024, ALLOC);
        assertEquals(
                505,
                assertThrows(AmqpProtocolException.class, () -> assembler.onBody(bodyFrame("x")))
                        .replyCode());
        assertEquals(
                505,
                assertThrows(AmqpProtocolException.class, () -> assembler.onHeader(headerFrame(1)))
                        .replyCode());
        assembler.begin(methodFrame(), c -> {
            throw new AssertionError();
        });
        assembler.onHeader(headerFrame(2));
        assertEquals(
                505,
                assertThrows(AmqpProtocolException.class, () -> assembler.onBody(bodyFrame("xyz")))
                        .replyCode());
        assertFalse(assembler.isActive());
    }

    @Test
    void abortReleasesAPartialMessage() {
        ContentAssembler assembler = new ContentAssembler(1, 1024, ALLOC);
        List<Throwable> aborted = new ArrayList<>();
        assembler.begin(methodFrame(), new ContentAssembler.Listener() {
            @Override
            public void onContent(AssembledContent content) {
                throw new AssertionError();
            }

            @Override
            public void onAbort(Throwable cause) {
                aborted.add(cause);
            }
        });
        assembler.onHeader(headerFrame(10));
        assembler.onBody(bodyFrame("12345"));
        assembler.abort(new IllegalStateException("closing"));
        assertNotNull(aborted.get(0));
        assertFalse(assembler.isActive());
        assertNotNull(Unpooled.EMPTY_BUFFER);
    }
}
