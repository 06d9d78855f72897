package io.warren.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicDeliver;
import io.warren.codec.method.BasicDeliverEncoder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link FrameReader} on its own, over heap buffers (checked reads) and direct ones (reads from memory): frames
 * described in place, the reader index moved only past whole frames, the limits and malformed input. The
 * decoder's tests ({@link FrameDecoderTest}) cover the same rules through a pipeline, with every malformed case.
 */
class FrameReaderTest {

    private static final UnpooledByteBufAllocator UNPOOLED = UnpooledByteBufAllocator.DEFAULT;

    private static ByteBuf stream(boolean direct) {
        ByteBuf out = buffer(direct);
        append(
                out,
                Frames.method(
                        UNPOOLED,
                        5,
                        new BasicDeliverEncoder()
                                .consumerTag("amq.ctag-7")
                                .deliveryTag(42)
                                .redelivered(true)
                                .exchange("ex")
                                .routingKey("rk")));
        append(
                out,
                Frames.contentHeader(
                        UNPOOLED,
                        5,
                        3,
                        BasicProperties.builder().contentType("text/plain").build()));
        append(out, Frames.body(UNPOOLED, 5, Unpooled.wrappedBuffer(new byte[] {1, 2, 3})));
        append(out, Frames.heartbeat(UNPOOLED));
        return out;
    }

    /** Runs a test twice: over heap buffers (checked reads) and over direct ones (reads from memory). */
    @java.lang.annotation.Retention(java.lang.annotation.RetentionPolicy.RUNTIME)
    @java.lang.annotation.Target(java.lang.annotation.ElementType.METHOD)
    @ParameterizedTest(name = "direct={0}")
    @ValueSource(booleans = {false, true})
    @interface HeapAndDirect {}

    /** A reader with the default method-frame limit that validates payloads, as the decoder's. */
    private static FrameReader reader() {
        return new FrameReader(FrameDecoder.DEFAULT_MAX_METHOD_FRAME_SIZE, true);
    }

    /** A pooled direct buffer (read from memory) or a heap one (checked reads). */
    private static ByteBuf buffer(boolean direct) {
        return direct ? PooledByteBufAllocator.DEFAULT.directBuffer() : UNPOOLED.heapBuffer();
    }

    private static void append(ByteBuf out, ByteBuf frame) {
        out.writeBytes(frame);
        frame.release();
    }

    @HeapAndDirect
    void describesEachFrameInPlaceAndMovesPastIt(boolean direct) {
        ByteBuf in = stream(direct);
        try {
            FrameReader reader = reader();

            assertTrue(reader.read(in));
            assertEquals(FrameType.METHOD, reader.type());
            assertEquals(5, reader.channel());
            assertEquals(Frames.FRAME_HEADER_SIZE, reader.payloadIndex(), "the payload is addressed in the input");
            BasicDeliver deliver = new BasicDeliver().wrap(in, reader.payloadIndex());
            assertEquals("amq.ctag-7", deliver.consumerTag().toString());
            assertEquals(42, deliver.deliveryTag());
            assertTrue(deliver.redelivered());
            assertEquals("rk", deliver.routingKey().toString());
            assertEquals(reader.payloadIndex() + reader.payloadSize() + 1, in.readerIndex());

            assertTrue(reader.read(in));
            assertEquals(FrameType.HEADER, reader.type());
            ContentHeader header = new ContentHeader().wrap(in, reader.payloadIndex());
            assertEquals(3, header.bodySize());
            assertEquals("text/plain", header.contentType().toString());

            assertTrue(reader.read(in));
            assertEquals(FrameType.BODY, reader.type());
            assertEquals(3, reader.payloadSize());
            assertEquals(3, in.getByte(reader.payloadIndex() + 2));

            assertTrue(reader.read(in));
            assertEquals(FrameType.HEARTBEAT, reader.type());
            assertEquals(0, reader.channel());
            assertFalse(reader.read(in), "nothing left");
            assertEquals(in.writerIndex(), reader.streamOffset());
        } finally {
            in.release();
        }
    }

    @HeapAndDirect
    void aSliceAtAnOffsetIsReadInPlaceFromItsReaderIndex(boolean direct) {
        ByteBuf whole = stream(direct);
        int length = whole.readableBytes();
        ByteBuf backing = buffer(direct).writeZero(5).writeBytes(whole).writeZero(3);
        try {
            ByteBuf slice = backing.slice(2, 3 + length);
            slice.readerIndex(3); // the stream starts three bytes into the slice, five into its buffer
            assertEquals(direct, slice.hasMemoryAddress(), "the direct case takes the reads from memory");
            FrameReader reader = reader();
            assertTrue(reader.read(slice));
            assertEquals(FrameType.METHOD, reader.type());
            assertEquals(3 + Frames.FRAME_HEADER_SIZE, reader.payloadIndex(), "an index of the slice");
            assertEquals(
                    "amq.ctag-7",
                    new BasicDeliver()
                            .wrap(slice, reader.payloadIndex())
                            .consumerTag()
                            .toString());
            assertTrue(reader.read(slice));
            assertTrue(reader.read(slice));
            assertEquals(FrameType.BODY, reader.type());
            assertEquals(2, slice.getByte(reader.payloadIndex() + 1));
            assertTrue(reader.read(slice));
            assertEquals(FrameType.HEARTBEAT, reader.type());
            assertFalse(reader.read(slice));
        } finally {
            whole.release();
            backing.release();
        }
    }

    @HeapAndDirect
    void aPartialFrameLeavesTheInputAlone(boolean direct) {
        ByteBuf whole = stream(direct);
        ByteBuf in = buffer(direct);
        try {
            FrameReader reader = reader();
            int frames = 0;
            // byte by byte: each frame is read once its end byte arrives, never before
            while (whole.isReadable()) {
                in.writeByte(whole.readByte());
                int before = in.readerIndex();
                if (reader.read(in)) {
                    frames++;
                    assertEquals(in.writerIndex(), in.readerIndex(), "read as soon as the end byte is there");
                } else {
                    assertEquals(before, in.readerIndex());
                }
            }
            assertEquals(4, frames);
        } finally {
            whole.release();
            in.release();
        }
    }

    @HeapAndDirect
    void aBadEndByteIsAFrameErrorWithItsOffset(boolean direct) {
        ByteBuf in = stream(direct);
        try {
            FrameReader reader = reader();
            assertTrue(reader.read(in));
            int headerFrame = in.readerIndex();
            int size = in.getInt(headerFrame + 3);
            in.setByte(headerFrame + Frames.FRAME_HEADER_SIZE + size, 0x00);
            AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> reader.read(in));
            assertEquals(ReplyCode.FRAME_ERROR, e.replyCode());
            assertEquals(FrameType.HEADER, e.frameType());
            assertEquals(Frames.FRAME_HEADER_SIZE + size, e.offset());
            assertTrue(e.getMessage().contains("at stream offset " + headerFrame), e.getMessage());
            assertThrows(IllegalStateException.class, () -> reader.read(in), "no reading on past malformed input");
        } finally {
            in.release();
        }
    }

    @HeapAndDirect
    void aBodyFrameOverFrameMaxIsRefusedFromItsHeader(boolean direct) {
        ByteBuf in = buffer(direct);
        try {
            // only the header of a body frame of frame-max + 1 bytes: refused before its payload arrives
            in.writeByte(FrameType.BODY.id()).writeShort(1).writeInt(Frames.FRAME_MIN_SIZE - Frames.FRAME_OVERHEAD + 1);
            FrameReader reader = reader();
            AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> reader.read(in));
            assertEquals(ReplyCode.FRAME_ERROR, e.replyCode());
            assertTrue(e.getMessage().contains("exceeds frame-max 4096"), e.getMessage());

            FrameReader raised = reader();
            raised.setFrameMax(Frames.FRAME_MIN_SIZE * 2);
            assertFalse(raised.read(in), "under the raised limit it waits for the payload");
        } finally {
            in.release();
        }
    }

    @HeapAndDirect
    void anInvalidMethodPayloadIsASyntaxError(boolean direct) {
        ByteBuf in = buffer(direct);
        try {
            // basic.deliver whose consumer tag claims 200 bytes in a 10-byte payload
            in.writeByte(FrameType.METHOD.id()).writeShort(1).writeInt(10);
            in.writeShort(60).writeShort(60).writeByte(200).writeZero(5).writeByte(Frames.FRAME_END);
            FrameReader reader = reader();
            AmqpProtocolException e = assertThrows(AmqpProtocolException.class, () -> reader.read(in));
            assertEquals(ReplyCode.SYNTAX_ERROR, e.replyCode(), e.getMessage());

            in.readerIndex(0);
            FrameReader trusting = new FrameReader(FrameDecoder.DEFAULT_MAX_METHOD_FRAME_SIZE, false);
            assertTrue(trusting.read(in), "with validation off the frame is described as it is");
            assertEquals(10, trusting.payloadSize());
        } finally {
            in.release();
        }
    }

    @HeapAndDirect
    void aProtocolHeaderFirstIsAVersionMismatch(boolean direct) {
        ByteBuf in = buffer(direct).writeBytes(new byte[] {'A', 'M', 'Q', 'P', 0, 0, 9});
        try {
            FrameReader reader = reader();
            assertFalse(reader.read(in), "seven of its eight bytes");
            in.writeByte(1);
            ProtocolVersionMismatchException e =
                    assertThrows(ProtocolVersionMismatchException.class, () -> reader.read(in));
            assertEquals(9, e.minor());
        } finally {
            in.release();
        }
    }

    @ParameterizedTest(name = "maxMethodFrameSize={0}")
    @ValueSource(ints = {0, Frames.FRAME_MIN_SIZE - 1})
    void aMethodLimitUnderTheMinimumFrameIsRefused(int limit) {
        assertThrows(IllegalArgumentException.class, () -> new FrameReader(limit, true));
        FrameReader reader = new FrameReader(Frames.FRAME_MIN_SIZE, true);
        assertThrows(IllegalArgumentException.class, () -> reader.setFrameMax(Frames.FRAME_MIN_SIZE - 1));
    }
}
