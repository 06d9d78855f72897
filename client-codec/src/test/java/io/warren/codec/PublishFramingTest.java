package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.content.ContentHeaderEncoder;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicPublish;
import io.warren.codec.method.BasicPublishEncoder;
import io.warren.testing.CoalescingHandler;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link PublishFraming}: exact framing at frame-max, the body never copied (the composite's
 * components share the caller's memory), and the body's reference released exactly once on every path.
 */
class PublishFramingTest {

    private static final PooledByteBufAllocator POOLED = PooledByteBufAllocator.DEFAULT;

    private static BasicPublishEncoder publish() {
        return new BasicPublishEncoder()
                .exchange(ShortString.of("amq.topic"))
                .routingKey(ShortString.of("a.b.c"))
                .mandatory(true);
    }

    private static final BasicProperties PROPS = BasicProperties.builder()
            .contentType("text/plain")
            .deliveryMode(BasicProperties.PERSISTENT)
            .build();

    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + 7);
        }
        return b;
    }

    /** Decodes {@code framed} (released) with a decoder at {@code frameMax}. */
    private static List<Frame> decode(ByteBuf framed, int frameMax) {
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(frameMax);
        EmbeddedChannel channel = new EmbeddedChannel(decoder);
        channel.writeInbound(framed);
        List<Frame> frames = new ArrayList<>();
        Frame f;
        while ((f = channel.readInbound()) != null) {
            frames.add(f);
        }
        assertFalse(channel.finish());
        return frames;
    }

    @Test
    void bodyIsSplitAtFrameMaxMinusEight() {
        byte[] content = bytes(10_000);
        ByteBuf body = POOLED.directBuffer(content.length).writeBytes(content);
        ByteBuf framed = PublishFraming.publish(POOLED, 5, 4096, publish(), PROPS, body);
        List<Frame> frames = decode(framed, 4096);
        try {
            assertEquals(5, frames.size());
            assertEquals(FrameType.METHOD, frames.get(0).type());
            BasicPublish view = new BasicPublish()
                    .wrap(frames.get(0).payload(), frames.get(0).payload().readerIndex());
            assertEquals("amq.topic", view.exchangeAsString());
            assertEquals("a.b.c", view.routingKeyAsString());
            assertTrue(view.mandatory());
            assertEquals(FrameType.HEADER, frames.get(1).type());
            ContentHeader header = new ContentHeader()
                    .wrap(frames.get(1).payload(), frames.get(1).payload().readerIndex());
            assertEquals(10_000, header.bodySize());
            assertEquals(PROPS, header.toProperties());
            int[] sizes = {4088, 4088, 1824};
            ByteBuf all = Unpooled.buffer();
            for (int i = 0; i < 3; i++) {
                Frame f = frames.get(2 + i);
                assertEquals(FrameType.BODY, f.type());
                assertEquals(5, f.channel());
                assertEquals(sizes[i], f.payload().readableBytes());
                all.writeBytes(f.payload());
            }
            assertArrayEquals(content, ByteBufUtil.getBytes(all));
            all.release();
        } finally {
            frames.forEach(Frame::release);
        }
    }

    @Test
    void bodyOfExactlyOneFrameIsOneBodyFrame() {
        ByteBuf body = POOLED.buffer().writeBytes(bytes(4088));
        List<Frame> frames = decode(PublishFraming.publish(POOLED, 1, 4096, publish(), PROPS, body), 4096);
        assertEquals(3, frames.size());
        assertEquals(4088, frames.get(2).payload().readableBytes());
        frames.forEach(Frame::release);
    }

    @Test
    void emptyBodySendsNoBodyFrame() {
        ByteBuf body = POOLED.buffer(0);
        ByteBuf framed = PublishFraming.publish(POOLED, 1, 4096, publish(), PROPS, body);
        assertEquals(0, body.refCnt(), "the body's reference was released");
        assertFalse(framed instanceof CompositeByteBuf);
        List<Frame> frames = decode(framed, 4096);
        assertEquals(2, frames.size());
        frames.forEach(Frame::release);
    }

    @Test
    void frameMaxZeroMeansOneBodyFrame() {
        ByteBuf body = POOLED.buffer().writeBytes(bytes(100_000));
        List<Frame> frames = decode(PublishFraming.publish(POOLED, 1, 0, publish(), PROPS, body), 0);
        assertEquals(3, frames.size());
        assertEquals(100_000, frames.get(2).payload().readableBytes());
        frames.forEach(Frame::release);
    }

    @Test
    void headAndPiecesAreOneExactlySizedAllocation() {
        ByteBuf body = POOLED.buffer().writeBytes(bytes(9000));
        CompositeByteBuf framed = (CompositeByteBuf) PublishFraming.publish(POOLED, 1, 4096, publish(), PROPS, body);
        try {
            // [head + first body header] [slice] [CE + header] [slice] [CE + header] [slice] [CE]
            assertEquals(7, framed.numComponents());
            int head = new BasicPublishEncoder()
                            .exchange("amq.topic")
                            .routingKey("a.b.c")
                            .encodedLength()
                    + 8
                    + ContentHeaderEncoder.encodedLength(PROPS)
                    + 8
                    + 7;
            assertEquals(head, framed.component(0).readableBytes());
            assertEquals(8, framed.component(2).readableBytes());
            assertEquals(1, framed.component(6).readableBytes());
            assertEquals(Frames.FRAME_END, framed.getUnsignedByte(framed.writerIndex() - 1));
            ByteBuf headBuffer = root(framed.component(0));
            assertSame(headBuffer, root(framed.component(2)), "the 7 + 1 byte pieces are slices of the head buffer");
            assertSame(headBuffer, root(framed.component(6)));
            assertSame(root(body), root(framed.component(1)), "body slices are slices of the body");
        } finally {
            framed.release();
        }
    }

    @Test
    void bodyIsNeverCopiedHeap() {
        byte[] content = bytes(6000);
        ByteBuf body = Unpooled.wrappedBuffer(content);
        CompositeByteBuf framed = (CompositeByteBuf)
                PublishFraming.publish(UnpooledByteBufAllocator.DEFAULT, 1, 4096, publish(), PROPS, body);
        try {
            ByteBuf first = framed.component(1);
            ByteBuf second = framed.component(3);
            assertSame(content, first.array(), "body slices are backed by the caller's array");
            assertSame(content, second.array());
            assertEquals(0, first.arrayOffset() + first.readerIndex());
            assertEquals(4088, second.arrayOffset() + second.readerIndex());
            // and a change to the caller's memory shows through the composite
            content[5000] = 42;
            int bodyStart = framed.component(0).readableBytes() + 4088 + 8;
            assertEquals(42, framed.getByte(bodyStart + 5000 - 4088));
        } finally {
            framed.release();
        }
        assertEquals(0, body.refCnt());
    }

    @Test
    void bodyIsNeverCopiedDirect() {
        ByteBuf body = POOLED.directBuffer(5000).writeBytes(bytes(5000));
        body.readerIndex(10); // a body that starts inside its buffer
        long address = body.hasMemoryAddress() ? body.memoryAddress() : -1;
        CompositeByteBuf framed = (CompositeByteBuf) PublishFraming.publish(POOLED, 1, 4096, publish(), PROPS, body);
        try {
            ByteBuf slice = framed.component(1);
            if (address != -1) {
                assertEquals(address + 10, slice.memoryAddress(), "the slice points into the caller's memory");
                assertEquals(address + 10 + 4088, framed.component(3).memoryAddress());
            }
            body.setByte(10, 99); // the body is still readable through the composite's reference
            assertEquals(99, framed.getByte(framed.component(0).readableBytes()));
        } finally {
            framed.release();
        }
        assertEquals(0, body.refCnt());
    }

    @Test
    void successReleasesTheCallersReferenceExactlyOnce() {
        ByteBuf body = POOLED.buffer().writeBytes(bytes(9000));
        body.retain(); // the test keeps its own reference to observe the count
        ByteBuf framed = PublishFraming.publish(POOLED, 1, 4096, publish(), PROPS, body);
        framed.release();
        assertEquals(1, body.refCnt(), "framing consumed exactly the one reference it was given");
        body.release();
    }

    @Test
    void failureReleasesTheBodyExactlyOnce() {
        BasicPublishEncoder encoder = publish();
        assertReleasedOnceAfterFailure(body -> PublishFraming.publish(POOLED, 70_000, 4096, encoder, PROPS, body));
        assertReleasedOnceAfterFailure(body -> PublishFraming.publish(POOLED, 0, 4096, encoder, PROPS, body));
        assertReleasedOnceAfterFailure(body -> PublishFraming.publish(POOLED, 1, 100, encoder, PROPS, body));
        assertReleasedOnceAfterFailure(body -> PublishFraming.publish(POOLED, 1, 4096, encoder, null, body));
        assertReleasedOnceAfterFailure(
                body -> PublishFraming.frame(POOLED, 1, 4096, new BasicAckEncoder(), PROPS, body));
    }

    @Test
    void allocatorFailureReleasesTheBodyAndTheHead() {
        List<ByteBuf> heads = new ArrayList<>();
        ByteBufAllocator failing = new AbstractByteBufAllocator(false) {
            @Override
            protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
                return Unpooled.buffer(initialCapacity, maxCapacity);
            }

            @Override
            protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
                return Unpooled.directBuffer(initialCapacity, maxCapacity);
            }

            @Override
            public boolean isDirectBufferPooled() {
                return false;
            }

            @Override
            public ByteBuf buffer(int initialCapacity, int maxCapacity) {
                ByteBuf head = super.buffer(initialCapacity, maxCapacity);
                heads.add(head);
                return head;
            }

            @Override
            public CompositeByteBuf compositeBuffer(int maxNumComponents) {
                throw new OutOfMemoryError("test: no composite");
            }
        };
        assertReleasedOnceAfterFailure(
                body -> PublishFraming.publish(failing, 1, 4096, publish(), PROPS, body), OutOfMemoryError.class);
        assertEquals(1, heads.size());
        assertEquals(0, heads.get(0).refCnt(), "the head buffer was released");
    }

    @Test
    void nullBodyIsRefused() {
        assertThrows(
                IllegalArgumentException.class, () -> PublishFraming.publish(POOLED, 1, 4096, publish(), PROPS, null));
    }

    @Test
    void deliverFramingForAPeer() {
        ByteBuf body = POOLED.buffer().writeBytes(bytes(16));
        BasicDeliverEncoder deliver = new BasicDeliverEncoder()
                .consumerTag("c")
                .deliveryTag(9)
                .exchange("e")
                .routingKey("r");
        List<Frame> frames = decode(PublishFraming.frame(POOLED, 2, 4096, deliver, BasicProperties.EMPTY, body), 4096);
        assertEquals(3, frames.size());
        assertEquals(16, frames.get(2).payload().readableBytes());
        frames.forEach(Frame::release);
    }

    @Test
    void reusedEncoderAndPropertiesFrameIdentically() {
        BasicPublishEncoder encoder = publish();
        byte[] first = null;
        for (int i = 0; i < 3; i++) {
            ByteBuf framed = PublishFraming.publish(
                    POOLED, 1, 4096, encoder, PROPS, POOLED.buffer().writeBytes(bytes(64)));
            byte[] b = ByteBufUtil.getBytes(framed);
            framed.release();
            if (first == null) {
                first = b;
            } else {
                assertArrayEquals(first, b);
            }
        }
    }

    // ------------------------------------------------------------------- write(): no composite at all

    private static byte[] written(EmbeddedChannel channel) {
        ByteBuf all = Unpooled.buffer();
        ByteBuf msg;
        while ((msg = channel.readOutbound()) != null) {
            all.writeBytes(msg);
            msg.release();
        }
        byte[] bytes = ByteBufUtil.getBytes(all);
        all.release();
        return bytes;
    }

    @Test
    void writeSendsTheSameBytesAsFrame() {
        for (int size : new int[] {0, 16, 4088, 10_000}) {
            byte[] content = bytes(size);
            ByteBuf framed = PublishFraming.publish(
                    POOLED, 3, 4096, publish(), PROPS, POOLED.buffer().writeBytes(content));
            byte[] expected = ByteBufUtil.getBytes(framed);
            framed.release();
            EmbeddedChannel channel = new EmbeddedChannel();
            ChannelPromise promise = channel.newPromise();
            PublishFraming.write(
                    channel, POOLED, 3, 4096, publish(), PROPS, POOLED.buffer().writeBytes(content), promise);
            channel.flush();
            assertTrue(promise.isSuccess(), "the promise completes with the last piece");
            assertArrayEquals(expected, written(channel), "body of " + size);
            assertFalse(channel.finish());
        }
    }

    /**
     * SslHandler coalesces the writes of a flush by appending each into the previous buffer when that one has
     * room up to its maximum capacity. No buffer written may have room over memory someone else reads: the
     * head's spare capacity holds the end octets and later body-frame headers, which a 1-byte body (or the
     * first slice of a long message) would overwrite.
     */
    @Test
    void aCoalescingHandlerCannotOverwriteThePieces() {
        for (int size : new int[] {1, 9, 100, 3 * 4088 + 17}) {
            byte[] content = bytes(size);
            ByteBuf framed = PublishFraming.publish(
                    POOLED, 3, 4096, publish(), PROPS, POOLED.buffer().writeBytes(content));
            byte[] expected = ByteBufUtil.getBytes(framed);
            framed.release();
            EmbeddedChannel channel = new EmbeddedChannel(new CoalescingHandler());
            PublishFraming.write(
                    channel,
                    POOLED,
                    3,
                    4096,
                    publish(),
                    PROPS,
                    POOLED.buffer().writeBytes(content),
                    channel.voidPromise());
            channel.flush();
            assertArrayEquals(expected, written(channel), "body of " + size);
            assertFalse(channel.finish());
        }
    }

    @Test
    void writeSendsTheCallersMemory() {
        ByteBuf body = POOLED.directBuffer(100).writeBytes(bytes(100));
        body.retain();
        EmbeddedChannel channel = new EmbeddedChannel();
        PublishFraming.write(channel, POOLED, 1, 4096, publish(), PROPS, body, channel.voidPromise());
        channel.flush();
        ByteBuf head = channel.readOutbound();
        ByteBuf slice = channel.readOutbound();
        ByteBuf end = channel.readOutbound();
        assertSame(root(body), root(slice), "the body goes out as a slice of the caller's buffer");
        assertEquals(1, end.readableBytes());
        head.release();
        slice.release();
        end.release();
        assertEquals(1, body.refCnt(), "the framing released the reference it was given, once");
        body.release();
        assertFalse(channel.finish());
    }

    @Test
    void writeToAClosedChannelReleasesEverything() {
        ByteBuf body = POOLED.buffer().writeBytes(bytes(9000));
        body.retain();
        EmbeddedChannel channel = new EmbeddedChannel();
        channel.close();
        ChannelPromise promise = channel.newPromise();
        PublishFraming.write(channel, POOLED, 1, 4096, publish(), PROPS, body, promise);
        assertFalse(promise.isSuccess());
        assertEquals(1, body.refCnt(), "every slice was released by the closed channel, the reference by the framing");
        body.release();
        assertFalse(channel.finish());
    }

    @Test
    void writeFailureReleasesTheBodyOnce() {
        EmbeddedChannel channel = new EmbeddedChannel();
        assertReleasedOnceAfterFailure(body -> {
            PublishFraming.write(channel, POOLED, 1, 100, publish(), PROPS, body, channel.voidPromise());
            return null;
        });
        assertFalse(channel.finish());
    }

    private static ByteBuf root(ByteBuf buf) {
        while (buf.unwrap() != null) {
            buf = buf.unwrap();
        }
        return buf;
    }

    private interface Framing {
        ByteBuf frame(ByteBuf body);
    }

    private static void assertReleasedOnceAfterFailure(Framing framing) {
        assertReleasedOnceAfterFailure(framing, IllegalArgumentException.class);
    }

    private static void assertReleasedOnceAfterFailure(Framing framing, Class<? extends Throwable> expected) {
        ByteBuf body = POOLED.buffer().writeBytes(bytes(5000));
        body.retain();
        Throwable t = assertThrows(Throwable.class, () -> framing.frame(body));
        assertInstanceOf(expected, t);
        assertEquals(1, body.refCnt(), "the framing released the reference it was given, once");
        body.release();
    }
}
