package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicDeliver;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.ConnectionStartEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.QueueDeclareEncoder;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * {@link FrameDecoder} through an {@link EmbeddedChannel}: the same stream whole, byte by byte and split
 * at every boundary; limits; and one named test per malformed input, each checking the reply code and
 * message, that the decoder stays failed, that nothing leaks and that the channel ends empty.
 */
class FrameDecoderTest {

    private static final UnpooledByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

    /** What a frame says, detached from its buffer. */
    record Decoded(FrameType type, int channel, byte[] payload) {
        /** What {@code frame} says (it is not released here). */
        static Decoded of(Frame frame) {
            return new Decoded(frame.type(), frame.channel(), ByteBufUtil.getBytes(frame.payload()));
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Decoded d
                    && d.type == type
                    && d.channel == channel
                    && java.util.Arrays.equals(d.payload, payload);
        }

        @Override
        public int hashCode() {
            return Objects.hash(type, channel, java.util.Arrays.hashCode(payload));
        }
    }

    // ------------------------------------------------------------------------------ well-formed streams

    /** connection.start, tune, a delivery whose body spans three frames, and heartbeats. */
    private static byte[] sampleStream() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        write(
                out,
                Frames.method(
                        ALLOC,
                        0,
                        new ConnectionStartEncoder()
                                .serverProperties(Map.of(
                                        "product", "RabbitMQ", "capabilities", Map.of("publisher_confirms", true)))));
        write(out, Frames.heartbeat(ALLOC));
        write(
                out,
                Frames.method(
                        ALLOC,
                        0,
                        new ConnectionTuneEncoder()
                                .channelMax(2047)
                                .frameMax(4096)
                                .heartbeat(60)));
        write(out, Frames.method(ALLOC, 3, deliver()));
        byte[] body = new byte[300];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) i;
        }
        write(
                out,
                Frames.contentHeader(
                        ALLOC,
                        3,
                        body.length,
                        BasicProperties.builder()
                                .contentType("application/octet-stream")
                                .deliveryMode(2)
                                .build()));
        for (int i = 0; i < 3; i++) {
            write(out, Frames.body(ALLOC, 3, Unpooled.wrappedBuffer(body, i * 100, 100)));
        }
        write(out, Frames.heartbeat(ALLOC));
        return out.toByteArray();
    }

    private static BasicDeliverEncoder deliver() {
        return new BasicDeliverEncoder()
                .consumerTag("amq.ctag-1")
                .deliveryTag(1)
                .exchange("amq.direct")
                .routingKey("rk");
    }

    private static void write(ByteArrayOutputStream out, ByteBuf buf) {
        out.writeBytes(ByteBufUtil.getBytes(buf));
        buf.release();
    }

    private static List<Decoded> readAll(EmbeddedChannel channel) {
        List<Decoded> frames = new ArrayList<>();
        Frame frame;
        while ((frame = channel.readInbound()) != null) {
            frames.add(Decoded.of(frame));
            frame.release();
        }
        return frames;
    }

    private static List<Decoded> decodeWhole(byte[] stream) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(Unpooled.wrappedBuffer(stream));
        List<Decoded> frames = readAll(channel);
        assertFalse(channel.finish());
        return frames;
    }

    @Test
    void decodesAWholeStream() {
        List<Decoded> frames = decodeWhole(sampleStream());
        assertEquals(9, frames.size());
        assertEquals(FrameType.METHOD, frames.get(0).type());
        assertEquals(FrameType.HEARTBEAT, frames.get(1).type());
        assertEquals(0, frames.get(1).payload().length);
        assertEquals(FrameType.METHOD, frames.get(3).type());
        assertEquals(3, frames.get(3).channel());
        assertEquals(FrameType.HEADER, frames.get(4).type());
        assertEquals(FrameType.BODY, frames.get(5).type());
        assertEquals(100, frames.get(7).payload().length);
    }

    @Test
    void byteByByteYieldsTheSameFrames() {
        byte[] stream = sampleStream();
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        List<Decoded> frames = new ArrayList<>();
        for (byte b : stream) {
            channel.writeInbound(Unpooled.wrappedBuffer(new byte[] {b}));
            frames.addAll(readAll(channel));
        }
        assertEquals(decodeWhole(stream), frames);
        assertFalse(channel.finish());
    }

    @Test
    void splitAtEveryBoundaryYieldsTheSameFrames() {
        byte[] stream = sampleStream();
        List<Decoded> expected = decodeWhole(stream);
        for (int split = 1; split < stream.length; split++) {
            EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
            channel.writeInbound(Unpooled.wrappedBuffer(stream, 0, split));
            List<Decoded> frames = new ArrayList<>(readAll(channel));
            channel.writeInbound(Unpooled.wrappedBuffer(stream, split, stream.length - split));
            frames.addAll(readAll(channel));
            assertEquals(expected, frames, "split at " + split);
            assertFalse(channel.finish());
        }
    }

    @Test
    void payloadIsASliceOfTheInputNotACopy() {
        byte[] stream = sampleStream();
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(Unpooled.wrappedBuffer(stream));
        Frame frame = channel.readInbound();
        assertSame(stream, frame.payload().array(), "the payload shares the input's memory");
        assertEquals(
                Frames.FRAME_HEADER_SIZE,
                frame.payload().arrayOffset() + frame.payload().readerIndex());
        frame.release();
        readAll(channel);
        assertFalse(channel.finish());
    }

    @Test
    void viewsReadDecodedFrames() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(Unpooled.wrappedBuffer(sampleStream()));
        for (int i = 0; i < 3; i++) {
            ((Frame) channel.readInbound()).release();
        }
        Frame method = channel.readInbound();
        BasicDeliver deliver =
                new BasicDeliver().wrap(method.payload(), method.payload().readerIndex());
        assertEquals("amq.ctag-1", deliver.consumerTagAsString());
        assertEquals("amq.direct", deliver.exchange().toString());
        Frame header = channel.readInbound();
        ContentHeader view =
                new ContentHeader().wrap(header.payload(), header.payload().readerIndex());
        assertEquals(300, view.bodySize());
        assertEquals(2, view.deliveryMode());
        method.release();
        header.release();
        readAll(channel);
        assertFalse(channel.finish());
    }

    @Test
    void detachPayloadHandsTheBytesOverAndRecyclesTheFrame() {
        ByteBuf payload = Unpooled.buffer(4).writeInt(7);
        Frame frame = Frame.newInstance(FrameType.BODY, 1, payload);
        ByteBuf detached = frame.detachPayload();
        assertSame(payload, detached);
        assertEquals(1, detached.refCnt());
        assertEquals(0, frame.refCnt());
        detached.release();
    }

    @Test
    void frameReferenceCountGuardsThePayload() {
        ByteBuf payload = Unpooled.buffer(4).writeInt(7);
        Frame frame = Frame.newInstance(FrameType.BODY, 1, payload);
        frame.retain();
        assertFalse(frame.release());
        assertEquals(1, payload.refCnt());
        assertTrue(frame.release());
        assertEquals(0, payload.refCnt());
        assertThrows(io.netty.util.IllegalReferenceCountException.class, frame::release);
    }

    // ---------------------------------------------------------------------------------------- limits

    private static ByteBuf bodyFrame(int channel, int payloadSize) {
        return Frames.body(ALLOC, channel, Unpooled.wrappedBuffer(new byte[payloadSize]));
    }

    @Test
    void bodyFrameOfExactlyFrameMaxIsAccepted() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        // frame-max counts header and end byte: 4096 - 8 payload bytes fill the frame exactly
        channel.writeInbound(bodyFrame(1, Frames.FRAME_MIN_SIZE - Frames.FRAME_OVERHEAD));
        assertEquals(1, readAll(channel).size());
        assertFalse(channel.finish());
    }

    @Test
    void oversizedFrame() {
        // one byte over frame-max; refused from its 7-byte header alone, before the payload arrives
        ByteBuf frame = bodyFrame(1, Frames.FRAME_MIN_SIZE - Frames.FRAME_OVERHEAD + 1);
        AmqpProtocolException e = assertMalformed(
                frame.readRetainedSlice(Frames.FRAME_HEADER_SIZE),
                ReplyCode.FRAME_ERROR,
                "body frame of 4097 bytes exceeds frame-max 4096");
        frame.release();
        assertEquals(FrameType.BODY, e.frameType());
        assertEquals(1, e.channel());
    }

    @Test
    void setFrameMaxRaisesAndRemovesTheLimit() {
        FrameDecoder decoder = new FrameDecoder();
        EmbeddedChannel channel = new EmbeddedChannel(decoder);
        decoder.setFrameMax(131072);
        channel.writeInbound(bodyFrame(1, 131072 - 8));
        assertEquals(1, readAll(channel).size());
        decoder.setFrameMax(0);
        channel.writeInbound(bodyFrame(1, 1 << 20));
        assertEquals(1, readAll(channel).size());
        assertFalse(channel.finish());
        assertThrows(IllegalArgumentException.class, () -> decoder.setFrameMax(4095));
    }

    @Test
    void setFrameMaxRefusesOneByteMoreThanNegotiated() {
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(131072);
        EmbeddedChannel channel = new EmbeddedChannel(decoder);
        ByteBuf frame = bodyFrame(1, 131072 - 7);
        AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> channel.writeInbound(frame));
        assertEquals(ReplyCode.FRAME_ERROR, e.replyCode());
        assertFalse(channel.finish());
    }

    /** A content header frame of at least {@code minSize} bytes (its headers table makes it large). */
    private static ByteBuf largeContentHeader(int minSize) {
        Map<String, Object> headers = new LinkedHashMap<>();
        for (int i = 0; headers.size() * 40 < minSize; i++) {
            headers.put("x-death-" + i, "queue-" + i + "-rejected-expired-and-retried");
        }
        ByteBuf header = Frames.contentHeader(
                ALLOC, 1, 0, BasicProperties.builder().headers(headers).build());
        assertTrue(header.readableBytes() >= minSize);
        return header;
    }

    /** A decoder after tune: frame-max negotiated. */
    private static EmbeddedChannel tuned(int frameMax) {
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(frameMax);
        return new EmbeddedChannel(decoder);
    }

    /**
     * Feeds a heartbeat and then {@code frame} byte by byte; returns the index of {@code frame}'s byte that made
     * the decoder throw (asserting the heartbeat came out and the decoder stays failed), and the exception.
     */
    private static Refusal refusedByteByByte(EmbeddedChannel channel, ByteBuf frame) {
        channel.writeInbound(Frames.heartbeat(ALLOC));
        assertEquals(1, readAll(channel).size());
        try {
            for (int i = 0; i < frame.readableBytes(); i++) {
                ByteBuf one = Unpooled.wrappedBuffer(new byte[] {frame.getByte(frame.readerIndex() + i)});
                try {
                    channel.writeInbound(one);
                } catch (AmqpProtocolException e) {
                    assertTrue(readAll(channel).isEmpty(), "nothing of the refused frame is passed on");
                    channel.writeInbound(Frames.heartbeat(ALLOC));
                    assertNull(channel.readInbound(), "sticky: nothing is decoded after the refusal");
                    assertTrue(((FrameDecoder) channel.pipeline().first()).isFailed());
                    assertFalse(channel.finish());
                    return new Refusal(i, e);
                }
                assertTrue(readAll(channel).isEmpty(), "byte " + i + " completed a frame that should be refused");
            }
            throw new AssertionError("a frame of " + frame.readableBytes() + " bytes was accepted");
        } finally {
            frame.release();
        }
    }

    record Refusal(int atByte, AmqpProtocolException error) {}

    @Test
    void aContentHeaderOverTheNegotiatedFrameMaxIs501FromItsHeader() {
        ByteBuf header = largeContentHeader(Frames.FRAME_MIN_SIZE * 3);
        int size = header.readableBytes();
        Refusal r = refusedByteByByte(tuned(size - 1), header);
        assertEquals(Frames.FRAME_HEADER_SIZE - 1, r.atByte(), "refused once its 7-byte header is in, not later");
        assertEquals(ReplyCode.FRAME_ERROR, r.error().replyCode());
        assertEquals(FrameType.HEADER, r.error().frameType());
        assertEquals(1, r.error().channel());
        assertTrue(
                r.error().getMessage().contains("header frame of " + size + " bytes exceeds frame-max " + (size - 1)),
                r.error().getMessage());
    }

    @Test
    void aMethodFrameOverTheNegotiatedFrameMaxIs501FromItsHeader() {
        ByteBuf method =
                methodFrame(0, new ConnectionStartEncoder().serverProperties(largeTable(Frames.FRAME_MIN_SIZE * 2)));
        int size = method.readableBytes();
        Refusal r = refusedByteByByte(tuned(Frames.FRAME_MIN_SIZE), method);
        assertEquals(Frames.FRAME_HEADER_SIZE - 1, r.atByte());
        assertEquals(ReplyCode.FRAME_ERROR, r.error().replyCode());
        assertEquals(FrameType.METHOD, r.error().frameType());
        assertTrue(
                r.error().getMessage().contains("method frame of " + size + " bytes exceeds frame-max 4096"),
                r.error().getMessage());
    }

    @Test
    void aContentHeaderOfExactlyTheNegotiatedFrameMaxIsAcceptedByteByByte() {
        ByteBuf header = largeContentHeader(Frames.FRAME_MIN_SIZE + 100);
        byte[] bytes = ByteBufUtil.getBytes(header);
        header.release();
        EmbeddedChannel channel = tuned(bytes.length);
        List<Decoded> frames = new ArrayList<>();
        for (byte b : bytes) {
            channel.writeInbound(Unpooled.wrappedBuffer(new byte[] {b}));
            frames.addAll(readAll(channel));
        }
        assertEquals(1, frames.size());
        assertEquals(FrameType.HEADER, frames.get(0).type());
        assertEquals(bytes.length - Frames.FRAME_OVERHEAD, frames.get(0).payload().length);
        assertFalse(channel.finish());
    }

    @Test
    void beforeTuneALargeConnectionStartIsAcceptedByteByByte() {
        // a broker with many server properties: over frame-min-size, read because it comes before frame-max is known
        ByteBuf start =
                methodFrame(0, new ConnectionStartEncoder().serverProperties(largeTable(Frames.FRAME_MIN_SIZE + 500)));
        byte[] bytes = ByteBufUtil.getBytes(start);
        start.release();
        assertTrue(bytes.length > Frames.FRAME_MIN_SIZE);
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        List<Decoded> frames = new ArrayList<>();
        for (byte b : bytes) {
            channel.writeInbound(Unpooled.wrappedBuffer(new byte[] {b}));
            frames.addAll(readAll(channel));
        }
        assertEquals(1, frames.size());
        assertEquals(FrameType.METHOD, frames.get(0).type());
        assertFalse(channel.finish());
    }

    private static Map<String, Object> largeTable(int minSize) {
        Map<String, Object> table = new LinkedHashMap<>();
        for (int i = 0; table.size() * 30 < minSize; i++) {
            table.put("property-" + i, "value-of-property-" + i);
        }
        return table;
    }

    @Test
    void oversizedMethodFrame() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Frames.FRAME_MIN_SIZE * 2, true));
        ByteBuf header = Unpooled.buffer(7);
        Frames.writeHeader(header, FrameType.METHOD, 0, Frames.FRAME_MIN_SIZE * 2);
        AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> channel.writeInbound(header));
        assertEquals(ReplyCode.FRAME_ERROR, e.replyCode());
        assertTrue(e.getMessage().contains("maxMethodFrameSize 8192"), e.getMessage());
        assertFalse(channel.finish());
    }

    @Test
    void sizeBeyondTwoGigabytesIsRefusedFromTheHeader() {
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(0);
        EmbeddedChannel channel = new EmbeddedChannel(decoder);
        ByteBuf header = Unpooled.buffer(7).writeByte(3).writeShort(1).writeInt(0xFFFFFFF0);
        AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> channel.writeInbound(header));
        assertEquals(ReplyCode.FRAME_ERROR, e.replyCode());
        assertFalse(channel.finish());
    }

    // --------------------------------------------------- the handler's life: reads, removal, close

    @Test
    void aReadWithoutAWholeFrameAsksForAnotherWhenAutoReadIsOff() {
        int[] reads = {0};
        EmbeddedChannel channel = new EmbeddedChannel(
                new ChannelOutboundHandlerAdapter() {
                    @Override
                    public void read(ChannelHandlerContext ctx) {
                        reads[0]++;
                        ctx.read();
                    }
                },
                new FrameDecoder());
        channel.config().setAutoRead(false);
        byte[] stream = sampleStream();
        int before = reads[0];
        channel.writeInbound(Unpooled.wrappedBuffer(stream, 0, 5));
        assertEquals(before + 1, reads[0], "no frame came out: the decoder asks for more");
        channel.writeInbound(Unpooled.wrappedBuffer(stream, 5, stream.length - 5));
        assertEquals(before + 1, reads[0], "frames came out: reading more is the application's call");
        assertEquals(decodeWhole(stream), readAll(channel));
        assertFalse(channel.finish());
    }

    @Test
    void removedByTheNextHandlerThenTheRestOfTheReadGoesOnAsBytes() {
        byte[] stream = sampleStream();
        List<Object> seen = new ArrayList<>();
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(), new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                seen.add(msg);
                if (msg instanceof Frame) {
                    ctx.pipeline().remove(FrameDecoder.class);
                }
            }
        });
        channel.writeInbound(Unpooled.wrappedBuffer(stream));
        assertEquals(2, seen.size(), seen.toString());
        Frame first = (Frame) seen.get(0);
        ByteBuf rest = (ByteBuf) seen.get(1);
        int firstLength = first.payload().readableBytes() + Frames.FRAME_OVERHEAD;
        assertArrayEquals(java.util.Arrays.copyOfRange(stream, firstLength, stream.length), ByteBufUtil.getBytes(rest));
        first.release();
        rest.release();
        assertFalse(channel.finish());
    }

    @Test
    void removedWithAPartialFrameThenItsBytesGoOn() {
        byte[] stream = sampleStream();
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(Unpooled.wrappedBuffer(stream, 0, 10));
        assertNull(channel.readInbound());
        channel.pipeline().remove(FrameDecoder.class);
        ByteBuf partial = channel.readInbound();
        assertArrayEquals(java.util.Arrays.copyOfRange(stream, 0, 10), ByteBufUtil.getBytes(partial));
        partial.release();
        assertFalse(channel.finish());
    }

    /**
     * A decoder followed by a handler that records each frame in {@code seen}, releases it, and at the first one
     * fires {@code reentry}'s buffer into the pipeline from inside that read (the decoder releases it).
     */
    private static EmbeddedChannel reenteringOnce(List<Decoded> seen, Supplier<ByteBuf> reentry) {
        boolean[] reentered = {false};
        return new EmbeddedChannel(new FrameDecoder(), new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                Frame frame = (Frame) msg;
                seen.add(Decoded.of(frame));
                frame.release();
                if (!reentered[0]) {
                    reentered[0] = true;
                    ctx.pipeline().fireChannelRead(reentry.get());
                }
            }
        });
    }

    @Test
    void aReadThatReEntersWhileAFrameIsPassedOnWaitsForTheRestOfTheRead() {
        byte[] stream = sampleStream();
        int split = stream.length / 2 + 3; // inside a frame
        List<Decoded> seen = new ArrayList<>();
        // the second half arrives while the first frame of the first half is being handled
        EmbeddedChannel channel =
                reenteringOnce(seen, () -> Unpooled.wrappedBuffer(stream, split, stream.length - split));
        channel.writeInbound(Unpooled.wrappedBuffer(stream, 0, split));
        assertEquals(decodeWhole(stream), seen);
        assertFalse(channel.finish());
    }

    @Test
    void malformedBytesInAReEnteringReadFailTheDecoderAndTheirCopyIsReleased() {
        List<Decoded> seen = new ArrayList<>();
        // a heartbeat whose end byte is 0x00, then the start of another frame
        EmbeddedChannel channel =
                reenteringOnce(seen, () -> Unpooled.wrappedBuffer(new byte[] {8, 0, 0, 0, 0, 0, 0, 0, 8, 0}));
        // an allocator of its own, so that the decoder's copy of the re-entering read can be counted
        io.netty.buffer.UnpooledByteBufAllocator alloc = new io.netty.buffer.UnpooledByteBufAllocator(false);
        channel.config().setAllocator(alloc);
        ByteBuf twoHeartbeats = Unpooled.wrappedBuffer(Frames.heartbeat(ALLOC), Frames.heartbeat(ALLOC));
        AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> channel.writeInbound(twoHeartbeats));
        assertEquals(ReplyCode.FRAME_ERROR, e.replyCode(), e.getMessage());
        assertTrue(e.getMessage().contains("frame-end byte is 0x00, expected 0xCE"), e.getMessage());
        assertEquals(2, seen.size(), "the whole first read is passed on before the re-entering one is decoded");
        assertTrue(((FrameDecoder) channel.pipeline().first()).isFailed());
        assertEquals(0, alloc.metric().usedHeapMemory(), "the copy of the re-entering read is released");
        assertFalse(channel.finish());
    }

    @Test
    void aReadThatReEnteredBeforeTheReadBeingDecodedTurnsOutMalformedIsReleasedUndecoded() {
        List<Decoded> seen = new ArrayList<>();
        // a good heartbeat: it waits for the rest of the read, whose next frame is malformed
        EmbeddedChannel channel = reenteringOnce(seen, () -> Frames.heartbeat(ALLOC));
        // an allocator of its own, so that the decoder's copy of the re-entering read can be counted
        io.netty.buffer.UnpooledByteBufAllocator alloc = new io.netty.buffer.UnpooledByteBufAllocator(false);
        channel.config().setAllocator(alloc);
        ByteBuf goodThenBad = Unpooled.wrappedBuffer(
                Frames.heartbeat(ALLOC), Unpooled.wrappedBuffer(new byte[] {8, 0, 0, 0, 0, 0, 0, 0}));
        AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> channel.writeInbound(goodThenBad));
        assertEquals(ReplyCode.FRAME_ERROR, e.replyCode(), e.getMessage());
        assertTrue(e.getMessage().contains("frame-end byte is 0x00, expected 0xCE"), e.getMessage());
        assertEquals(1, seen.size(), "only the frame before the bad one is passed on; the re-entered read is not");
        assertTrue(((FrameDecoder) channel.pipeline().first()).isFailed());
        assertEquals(0, alloc.metric().usedHeapMemory(), "the copy of the re-entered read is released");
        assertFalse(channel.finish());
    }

    @Test
    void aPartialFrameAtCloseIsReleased() {
        byte[] stream = sampleStream();
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        // an allocator of its own, so that what the decoder still holds can be counted
        io.netty.buffer.UnpooledByteBufAllocator alloc = new io.netty.buffer.UnpooledByteBufAllocator(false);
        channel.config().setAllocator(alloc);
        channel.writeInbound(Unpooled.wrappedBuffer(stream, 0, 20));
        assertTrue(alloc.metric().usedHeapMemory() > 0, "the partial frame is kept in a cumulation");
        assertFalse(channel.finish());
        assertEquals(0, alloc.metric().usedHeapMemory(), "the cumulation is released at close");
    }

    @Test
    void aFrameLargerThanTheFirstCumulationGrowsAcrossManyReads() {
        byte[] body = new byte[(3 << 20) + 5];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i * 31);
        }
        ByteBuf frame = Frames.body(ALLOC, 1, Unpooled.wrappedBuffer(body));
        byte[] stream = ByteBufUtil.getBytes(frame);
        frame.release();
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(0);
        EmbeddedChannel channel = new EmbeddedChannel(decoder);
        for (int at = 0; at < stream.length; at += 65536) {
            channel.writeInbound(Unpooled.wrappedBuffer(stream, at, Math.min(65536, stream.length - at)));
        }
        Frame decoded = channel.readInbound();
        assertArrayEquals(body, ByteBufUtil.getBytes(decoded.payload()));
        decoded.release();
        assertFalse(channel.finish());
    }

    @Test
    void framesAfterASplitOneComeStraightFromTheRead() {
        byte[] stream = sampleStream();
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(Unpooled.wrappedBuffer(stream, 0, 3));
        ByteBuf rest = Unpooled.wrappedBuffer(stream, 3, stream.length - 3);
        channel.writeInbound(rest);
        Frame first = channel.readInbound();
        Frame second = channel.readInbound();
        assertFalse(first.payload().hasArray() && first.payload().array() == stream, "the split frame was copied");
        assertSame(stream, second.payload().array(), "the next one is a slice of the read");
        first.release();
        second.release();
        readAll(channel);
        assertFalse(channel.finish());
    }

    // ------------------------------------------------------------------------------------- malformed

    /**
     * Feeds {@code input} (after a good frame), expects the decoder to fail with {@code replyCode} and a
     * message containing {@code detail}, then checks the good frame came out, the failure is sticky and
     * the channel ends empty.
     */
    private static AmqpProtocolException assertMalformed(ByteBuf input, int replyCode, String detail) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        ByteBuf good = Frames.heartbeat(ALLOC);
        ByteBuf both = Unpooled.wrappedBuffer(good, input);
        AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> channel.writeInbound(both));
        assertEquals(replyCode, e.replyCode(), e.getMessage());
        assertTrue(e.getMessage().contains(detail), e.getMessage());
        List<Decoded> before = readAll(channel);
        assertEquals(1, before.size(), "the frame before the bad one is still passed on");
        // sticky: a good frame after the failure is discarded
        channel.writeInbound(Frames.heartbeat(ALLOC));
        assertNull(channel.readInbound());
        assertTrue(((FrameDecoder) channel.pipeline().first()).isFailed());
        assertFalse(channel.finish());
        return e;
    }

    private static ByteBuf methodFrame(int channel, MethodEncoder encoder) {
        return Frames.method(ALLOC, channel, encoder);
    }

    @Test
    void badEndByte() {
        ByteBuf frame = methodFrame(1, deliver());
        frame.setByte(frame.writerIndex() - 1, 0x00);
        AmqpProtocolException e =
                assertMalformed(frame, ReplyCode.FRAME_ERROR, "frame-end byte is 0x00, expected 0xCE");
        assertEquals(frame.capacity() - 1, e.offset());
        assertEquals(FrameType.METHOD, e.frameType());
    }

    @Test
    void unknownFrameType() {
        ByteBuf frame = Frames.heartbeat(ALLOC);
        frame.setByte(0, 9);
        AmqpProtocolException e = assertMalformed(frame, ReplyCode.FRAME_ERROR, "unknown frame type 9");
        assertEquals(0, e.offset());
    }

    @Test
    void truncatedTable() {
        ByteBuf frame = methodFrame(1, new QueueDeclareEncoder().queue("q").arguments(Map.of("x-max-length", 10)));
        // the arguments table's length field (after ids, ticket, queue "q" and the flags octet) claims more
        int tableLengthIndex = Frames.FRAME_HEADER_SIZE + 4 + 2 + 2 + 1;
        frame.setInt(tableLengthIndex, frame.getInt(tableLengthIndex) + 5);
        AmqpProtocolException e =
                assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "argument 'arguments': field table of");
        assertTrue(e.getMessage().contains("queue.declare (50/10)"), e.getMessage());
        assertEquals(1, e.channel());
        assertEquals(tableLengthIndex, e.offset());
    }

    @Test
    void unknownTypeTag() {
        ByteBuf frame = methodFrame(2, new QueueDeclareEncoder().queue("q").arguments(Map.of("k", "v")));
        int tag = Frames.FRAME_HEADER_SIZE + 4 + 2 + 2 + 1 + 4 + 2;
        assertEquals('S', frame.getByte(tag));
        frame.setByte(tag, 'Z');
        AmqpProtocolException e =
                assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "unknown field value type tag 'Z' (0x5A)");
        assertEquals(tag, e.offset());
        assertEquals(50, e.classId());
        assertEquals(10, e.methodId());
    }

    @Test
    void stringLongerThanTheFrame() {
        ByteBuf frame = methodFrame(1, deliver());
        frame.setByte(Frames.FRAME_HEADER_SIZE + 4, 200); // consumer-tag length
        assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "argument 'consumer-tag' (shortstr) needs 200 bytes");
    }

    @Test
    void truncatedMethod() {
        ByteBuf full = methodFrame(1, new ConnectionTuneEncoder());
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.METHOD, 0, 4 + 2 + 4);
        frame.writeBytes(full, Frames.FRAME_HEADER_SIZE, 4 + 2 + 4).writeByte(Frames.FRAME_END);
        full.release();
        assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "argument 'heartbeat' (short) needs 2 bytes but only 0 remain");
    }

    @Test
    void trailingBytesAfterTheLastArgument() {
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.METHOD, 1, 4 + 1);
        frame.writeInt((60 << 16) | 100).writeByte(1).writeByte(Frames.FRAME_END); // basic.recover-async
        ByteBuf bad = Unpooled.buffer();
        Frames.writeHeader(bad, FrameType.METHOD, 1, 4 + 2);
        bad.writeInt((60 << 16) | 100).writeShort(1).writeByte(Frames.FRAME_END);
        frame.release();
        assertMalformed(bad, ReplyCode.SYNTAX_ERROR, "1 unexpected bytes after the last argument");
    }

    @Test
    void unknownMethod() {
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.METHOD, 1, 4);
        frame.writeInt((60 << 16) | 99).writeByte(Frames.FRAME_END);
        AmqpProtocolException e =
                assertMalformed(frame, ReplyCode.COMMAND_INVALID, "unknown class id 60 or method id 99");
        assertTrue(e.getMessage().contains("unknown method 60/99"), e.getMessage());
    }

    @Test
    void methodPayloadTooShortForIds() {
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.METHOD, 1, 2);
        frame.writeShort(60).writeByte(Frames.FRAME_END);
        assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "too short for class and method ids");
    }

    @Test
    void headerForTheWrongClass() {
        ByteBuf frame = Frames.contentHeader(ALLOC, 1, 10, BasicProperties.EMPTY);
        frame.setShort(Frames.FRAME_HEADER_SIZE, 50);
        AmqpProtocolException e = assertMalformed(frame, ReplyCode.UNEXPECTED_FRAME, "content header for class 50");
        assertEquals(FrameType.HEADER, e.frameType());
        assertEquals(50, e.classId());
    }

    @Test
    void headerWithUnknownTypeTagInItsHeaders() {
        ByteBuf frame = Frames.contentHeader(
                ALLOC, 1, 10, BasicProperties.builder().headers(Map.of("k", 1)).build());
        int tag = Frames.FRAME_HEADER_SIZE + 14 + 4 + 2;
        assertEquals('I', frame.getByte(tag));
        frame.setByte(tag, '!');
        assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "property headers: unknown field value type tag '!'");
    }

    @Test
    void headerAnnouncingUnknownPropertiesInAContinuationWord() {
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.HEADER, 1, 16);
        frame.writeInt(60 << 16)
                .writeLong(0)
                .writeShort(0x0001)
                .writeShort(0x8000)
                .writeByte(Frames.FRAME_END);
        assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "beyond the 14 of basic");
    }

    @Test
    void headerTruncatedProperty() {
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.HEADER, 1, 15);
        frame.writeInt(60 << 16)
                .writeLong(0)
                .writeShort(ContentHeader.CONTENT_TYPE)
                .writeByte(5)
                .writeByte(Frames.FRAME_END);
        assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "property content-type needs 6 bytes but only 1 remain");
    }

    @Test
    void bodyOnChannelZero() {
        assertMalformed(bodyFrame(0, 3), ReplyCode.UNEXPECTED_FRAME, "content body on channel 0");
    }

    @Test
    void heartbeatOnAChannel() {
        ByteBuf frame = Frames.heartbeat(ALLOC);
        frame.setShort(1, 5);
        assertMalformed(frame, ReplyCode.FRAME_ERROR, "heartbeat frame on channel 5");
    }

    @Test
    void heartbeatWithAPayload() {
        ByteBuf frame = Unpooled.buffer();
        Frames.writeHeader(frame, FrameType.HEARTBEAT, 0, 1);
        frame.writeByte(0).writeByte(Frames.FRAME_END);
        assertMalformed(frame, ReplyCode.FRAME_ERROR, "heartbeat frame with a payload of 1 bytes");
    }

    @Test
    void tablesNestedTooDeep() {
        Map<String, Object> table = new LinkedHashMap<>();
        for (int i = 0; i < 150; i++) {
            table = Map.of("n", table);
        }
        ByteBuf frame = methodFrame(1, new QueueDeclareEncoder().arguments(table));
        assertMalformed(frame, ReplyCode.SYNTAX_ERROR, "nested deeper than 100 levels");
    }

    @Test
    void protocolHeaderReplyIsAVersionMismatch() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        ProtocolVersionMismatchException e = assertThrows(
                ProtocolVersionMismatchException.class,
                () -> channel.writeInbound(Unpooled.wrappedBuffer(new byte[] {'A', 'M', 'Q', 'P', 0, 0, 8, 0})));
        assertEquals(0, e.major());
        assertEquals(8, e.minor());
        assertEquals(0, e.revision());
        assertTrue(e.getMessage().contains("offered protocol header AMQP 0-0-8-0"), e.getMessage());
        assertFalse(channel.finish());
    }

    @Test
    void protocolHeaderReplyArrivingInPieces() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(Unpooled.wrappedBuffer(new byte[] {'A', 'M', 'Q'}));
        channel.writeInbound(Unpooled.wrappedBuffer(new byte[] {'P', 0, 0, 9}));
        assertThrows(
                ProtocolVersionMismatchException.class,
                () -> channel.writeInbound(Unpooled.wrappedBuffer(new byte[] {1})));
        assertFalse(channel.finish());
    }

    @Test
    void validationCanBeLeftToTheNextHandler() {
        ByteBuf frame = methodFrame(1, deliver());
        frame.setByte(Frames.FRAME_HEADER_SIZE + 4, 200);
        EmbeddedChannel channel =
                new EmbeddedChannel(new FrameDecoder(FrameDecoder.DEFAULT_MAX_METHOD_FRAME_SIZE, false));
        channel.writeInbound(frame);
        Frame decoded = channel.readInbound();
        ByteBuf p = decoded.payload();
        AmqpProtocolException e = assertThrows(
                AmqpProtocolException.class,
                () -> io.warren.codec.method.MethodTable.validate(
                        p, p.readerIndex(), p.readableBytes(), decoded.channel()));
        assertEquals(ReplyCode.SYNTAX_ERROR, e.replyCode());
        assertEquals(1, e.channel());
        assertEquals(Frames.FRAME_HEADER_SIZE + 4 + 1, e.offset());
        decoded.release();
        assertFalse(channel.finish());
    }

    @Test
    void decodedPayloadMatchesTheEncodedBytes() {
        ByteBuf frame = methodFrame(4, deliver());
        byte[] expected = ByteBufUtil.getBytes(frame, Frames.FRAME_HEADER_SIZE, frame.readableBytes() - 8);
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder());
        channel.writeInbound(frame);
        List<Decoded> frames = readAll(channel);
        assertArrayEquals(expected, frames.get(0).payload());
        assertFalse(channel.finish());
    }
}
