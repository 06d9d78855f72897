package io.warren.impl;

import static io.warren.impl.PublishFixture.assertPending;
import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static io.warren.impl.PublishFixture.text;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.BackPressureException;
import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.ConnectionBlockedException;
import io.warren.ConnectionOptions;
import io.warren.PublishNotConfirmedException;
import io.warren.PublishOptions;
import io.warren.PublishOutcome;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.ChannelFlowEncoder;
import io.warren.codec.method.ChannelFlowOk;
import io.warren.codec.method.ConnectionBlockedEncoder;
import io.warren.codec.method.ConnectionUnblockedEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.impl.PublishFixture.Published;
import io.warren.impl.PublishFixture.TrackedBody;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.publish.PublishFlow;
import io.warren.testing.CoalescingHandler;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/** Publishing through a scripted broker: framing without copies, order, ownership of bodies, back-pressure. */
class PublishTest {

    static final BasicProperties PROPS =
            BasicProperties.builder().contentType("text/plain").messageId("m").build();

    @Test
    void publishesMethodHeaderAndBodyWithTheGivenArguments() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<PublishOutcome> sent = ch.publish("ex", ShortString.of("key"), true, PROPS, text("hello"));
            Published p = expectPublish(broker, 1);
            assertEquals("ex", p.exchange());
            assertEquals("key", p.routingKey());
            assertTrue(p.mandatory());
            assertEquals(PROPS, p.properties());
            assertEquals("hello", p.text());
            broker.client.runPendingTasks();
            assertSame(PublishOutcome.SENT, sent.toCompletableFuture().join(), "written: SENT without confirm mode");
            broker.expectNothing();
        }
    }

    @Test
    void aConnectionPaysForItsTaskPoolOnlyOnceItPublishes() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            PublishFlow flow = PublishFlow.of(broker.handler);
            assertEquals(-1, flow.pooledTasks(), "an idle connection has no pool (1024 slots)");
            ch.publish("", "q", false, PROPS, text("hello"));
            expectPublish(broker, 1);
            broker.client.runPendingTasks();
            assertEquals(1, flow.pooledTasks(), "the written publish's task is kept for the next one");
        }
    }

    @Test
    void emptyBodySendsNoBodyFrameAndNullPropertiesAreNone() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ByteBuf empty = ByteBufAllocator.DEFAULT.buffer(8);
            ch.publish("", "q", false, null, empty);
            Published p = expectPublish(broker, 1);
            assertEquals(0, p.body().length);
            assertEquals(BasicProperties.EMPTY, p.properties());
            broker.expectNothing();
            assertEquals(0, empty.refCnt(), "the empty body is released");
        }
    }

    @Test
    void aSingleFrameBodyIsWrittenAsTheCallersBufferItself() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ByteBuf body = ByteBufAllocator.DEFAULT.directBuffer(16).writeBytes("0123456789abcdef".getBytes());
            ch.publish("", "q", false, PROPS, body);
            broker.client.runPendingTasks();
            ByteBuf head = broker.client.readOutbound();
            ByteBuf written = broker.client.readOutbound();
            ByteBuf tail = broker.client.readOutbound();
            assertNull(broker.client.readOutbound());
            assertSame(body, written, "the caller's buffer object goes to the socket: no slice, no copy");
            assertEquals(1, tail.readableBytes());
            assertEquals(0xCE, tail.getUnsignedByte(tail.readerIndex()));
            // the bytes are valid frames: method, header, body
            List<Frame> frames = decode(head, written, tail);
            try {
                assertEquals(
                        List.of(FrameType.METHOD, FrameType.HEADER, FrameType.BODY),
                        frames.stream().map(Frame::type).toList());
                assertEquals("0123456789abcdef", frames.get(2).payload().toString(StandardCharsets.US_ASCII));
            } finally {
                frames.forEach(Frame::release);
            }
            assertEquals(0, body.refCnt(), "released once written");
        }
    }

    @Test
    void bytesOnTheWireAreReadFromTheCallersMemoryForEveryBodyType() {
        try (FakeBroker broker = new FakeBroker()) {
            // frame-max 4096: the 10,000-byte bodies go in three body frames (4088 + 4088 + 1824)
            Channel ch = broker.openChannel(broker.handshake(2047, 4096, 0), 1);
            byte[] array = filled(10_000, 'a');
            ByteBuffer direct =
                    ByteBuffer.allocateDirect(10_000).put(filled(10_000, 'b')).flip();
            ByteBuf pooled = ByteBufAllocator.DEFAULT.directBuffer(10_000).writeBytes(filled(10_000, 'c'));
            byte[] small = filled(100, 'd');
            ch.publish("", "q", false, PROPS, array);
            ch.publish("", "q", false, PROPS, direct);
            ch.publish("", "q", false, PROPS, pooled);
            ch.publish("", "q", false, PROPS, small);
            assertEquals(0, direct.position(), "the ByteBuffer's position does not move");
            // Change the caller's memory after publish returned and before the socket reads it: the wire shows
            // the change, so no copy was taken.
            array[5000] = 'X';
            direct.put(5000, (byte) 'Y');
            pooled.setByte(5000, 'Z');
            small[50] = 'W';
            assertEquals('X', expectPublish(broker, 1).body()[5000]);
            assertEquals('Y', expectPublish(broker, 1).body()[5000]);
            assertEquals('Z', expectPublish(broker, 1).body()[5000]);
            assertEquals('W', expectPublish(broker, 1).body()[50]);
        }
    }

    @Test
    void aBodySpanningFramesIsACompositeOfSlicesOfTheCallersBuffer() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(2047, 4096, 0), 1);
            byte[] array = filled(10_000, 'a');
            ch.publish("", "q", false, PROPS, array);
            broker.client.runPendingTasks();
            ByteBuf written = broker.client.readOutbound();
            assertNull(broker.client.readOutbound(), "one buffer for the whole message");
            CompositeByteBuf composite = assertInstanceOf(CompositeByteBuf.class, written);
            int slicesOfTheArray = 0;
            for (int i = 0; i < composite.numComponents(); i++) {
                ByteBuf c = composite.component(i);
                if (c.hasArray() && c.array() == array) {
                    slicesOfTheArray++;
                }
            }
            assertEquals(3, slicesOfTheArray, "three body frames, each a slice of the caller's array");
            List<Frame> frames = decode(written);
            try {
                assertEquals(5, frames.size());
                assertEquals(4088, frames.get(2).payload().readableBytes());
                assertEquals(1824, frames.get(4).payload().readableBytes());
            } finally {
                frames.forEach(Frame::release);
            }
        }
    }

    @Test
    void aBufferPublishedTwiceWithRetainIsNotCorrupted() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ByteBuf body = text("twice");
            body.retain();
            ch.publish("", "q", false, PROPS, body);
            ch.publish("", "q", false, PROPS, body);
            assertEquals("twice", expectPublish(broker, 1).text());
            assertEquals("twice", expectPublish(broker, 1).text());
            assertEquals(0, body.refCnt());
        }
    }

    /**
     * A handler that coalesces writes, as SslHandler does: it appends a write into the previous buffer when that
     * one has room up to its maximum capacity. No buffer Warren writes may share memory past its writer index
     * with another, or the appended bytes would overwrite a frame's end octet or a caller's bytes.
     */
    @Test
    void aCoalescingHandlerCannotCorruptTheFrames() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            broker.client.pipeline().addFirst(new CoalescingHandler());
            ByteBuf roomy = ByteBufAllocator.DEFAULT.buffer(64).writeByte('a'); // spare capacity after its byte
            ByteBuf shared = Unpooled.buffer(64).writeBytes("bb".getBytes());
            ch.publish("", "q", false, PROPS, roomy);
            ch.publish("", "q", false, PROPS, shared.retain()); // referenced twice: written as a slice
            ch.publish("", "q", false, PROPS, text("c"));
            assertEquals("a", expectPublish(broker, 1).text());
            assertEquals("bb", expectPublish(broker, 1).text());
            assertEquals("c", expectPublish(broker, 1).text());
            assertEquals(0, shared.getByte(2), "nothing appended into the caller's memory past its bytes");
            shared.release();
        }
    }

    @Test
    void publishesFromOneThreadKeepTheirOrderWithOtherRequests() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(2047, 4096, 0), 1);
            ch.publish("", "q", false, PROPS, text("one"));
            ch.queueDeclare("between");
            ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(filled(9000, 'x')));
            ch.publish("", "q", false, PROPS, text("three"));
            assertEquals("one", expectPublish(broker, 1).text());
            broker.expectAndRelease(1, MethodIds.QUEUE_DECLARE);
            assertEquals(9000, expectPublish(broker, 1).body().length);
            assertEquals("three", expectPublish(broker, 1).text());
        }
    }

    // ---- ownership of the body on every path -------------------------------------------------------------

    @Test
    void bodyReleasedOnceWhenWritten() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(2047, 4096, 0), 1);
            TrackedBody small = new TrackedBody(filled(10, 's'));
            TrackedBody large = new TrackedBody(filled(10_000, 'l'));
            ch.publish("", "q", false, PROPS, small);
            ch.publishNoOutcome("", "q", false, PROPS, large);
            expectPublish(broker, 1);
            expectPublish(broker, 1);
            small.assertReleasedOnce();
            large.assertReleasedOnce();
        }
    }

    @Test
    void bodyReleasedOnceWhenRefusedForInvalidArguments() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            TrackedBody body = new TrackedBody(filled(10, 'x'));
            String tooLong = "k".repeat(256);
            assertInstanceOf(IllegalArgumentException.class, failure(ch.publish("", tooLong, false, PROPS, body)));
            body.assertReleasedOnce();
            TrackedBody other = new TrackedBody(filled(10, 'x'));
            assertThrows(IllegalArgumentException.class, () -> ch.publishNoOutcome(tooLong, "", false, PROPS, other));
            other.assertReleasedOnce();
            assertInstanceOf(
                    IllegalArgumentException.class, failure(ch.publish("", "q", false, PROPS, (ByteBuf) null)));
            broker.expectNothing();
        }
    }

    @Test
    void bodyReleasedOnceOnAClosedChannel() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            broker.sendChannelClose(1, 404, "NOT_FOUND - no exchange 'x'", 60, 40);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            TrackedBody body = new TrackedBody(filled(10, 'x'));
            ChannelClosedException e =
                    assertInstanceOf(ChannelClosedException.class, failure(ch.publish("x", "", false, PROPS, body)));
            assertEquals(404, e.replyCode());
            assertTrue(e.initiatedByBroker(), "the channel's own close says who closed it");
            body.assertReleasedOnce();
        }
    }

    /** Confirms are off: the publish cannot be "not confirmed"; it was refused because the channel is closed. */
    @Test
    void publishingOnAChannelTheApplicationClosedFailsWithChannelClosed() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            CompletionStage<Void> closed = ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.sendChannelCloseOk(1);
            assertNull(closed.toCompletableFuture().join());
            TrackedBody body = new TrackedBody(filled(10, 'x'));
            ChannelClosedException e =
                    assertInstanceOf(ChannelClosedException.class, failure(ch.publish("", "q", false, PROPS, body)));
            assertFalse(e.initiatedByBroker());
            assertEquals(1, e.channelNumber());
            assertTrue(e.getMessage().contains("closed by the application"), e.getMessage());
            body.assertReleasedOnce();
            TrackedBody other = new TrackedBody(filled(10, 'y'));
            assertThrows(ChannelClosedException.class, () -> ch.publishNoOutcome("", "q", false, PROPS, other));
            other.assertReleasedOnce();
            broker.expectNothing();
        }
    }

    /** In confirm mode too: nothing was written, and the reason is the closed channel, not a missing confirm. */
    @Test
    void publishingOnAClosedChannelInConfirmModeFailsWithChannelClosed() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            PublishFixture.confirmMode(broker, ch);
            CompletionStage<Void> closed = ch.close();
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE);
            broker.sendChannelCloseOk(1);
            assertNull(closed.toCompletableFuture().join());
            TrackedBody body = new TrackedBody(filled(10, 'x'));
            assertInstanceOf(ChannelClosedException.class, failure(ch.publish("", "q", false, PROPS, body)));
            body.assertReleasedOnce();
            broker.expectNothing();
        }
    }

    @Test
    void bodyReleasedOnceWhenTheSocketDiesBeforeTheWrite() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(2047, 4096, 0), 1);
            PublishFixture.StalledSocket.install(broker);
            TrackedBody small = new TrackedBody(filled(10, 's'));
            TrackedBody large = new TrackedBody(filled(10_000, 'l'));
            CompletionStage<PublishOutcome> a = ch.publish("", "q", false, PROPS, small);
            CompletionStage<PublishOutcome> b = ch.publish("", "q", false, PROPS, large);
            // written to Netty, not flushed yet, when the socket dies: Netty fails and releases them
            broker.client.unsafe().close(broker.client.unsafe().voidPromise());
            broker.client.runPendingTasks();
            assertInstanceOf(PublishNotConfirmedException.class, failure(a));
            assertInstanceOf(PublishNotConfirmedException.class, failure(b));
            small.assertReleasedOnce();
            large.assertReleasedOnce();
        }
    }

    @Test
    void bodyReleasedOnceWhenRefusedOverMaxPendingBytes() {
        ConnectionOptions options = new ConnectionOptions()
                .publishOptions(new PublishOptions().maxPendingBytes(65536).writeBufferHighWaterMark(65536));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(2047, 0, 0), 1);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            // nothing pending: a message over the bound is accepted, and stays in Netty's buffer (no flush yet)
            ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(new byte[70_000]));
            assertFalse(ch.isWritable(), "over Netty's high-water mark");
            TrackedBody body = new TrackedBody(filled(10, 'x'));
            assertInstanceOf(BackPressureException.class, failure(ch.publish("", "q", false, PROPS, body)));
            body.assertReleasedOnce();
            TrackedBody other = new TrackedBody(filled(10, 'x'));
            assertThrows(BackPressureException.class, () -> ch.publishNoOutcome("", "q", false, PROPS, other));
            other.assertReleasedOnce();
            CompletionStage<Void> writable = ch.whenWritable();
            assertPending(writable);
            socket.drain();
            assertEquals(70_000, expectPublish(broker, 1).body().length);
            assertTrue(writable.toCompletableFuture().isDone(), "writable again once the socket drained");
            assertTrue(ch.isWritable());
        }
    }

    // ---- connection.blocked ------------------------------------------------------------------------------

    @Test
    void whileBlockedPublishesAreHeldAndGoOutOnUnblock() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            List<Boolean> changes = new ArrayList<>();
            ch.addWritabilityListener((channel, writable) -> changes.add(writable));
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            assertTrue(c.isBlocked());
            assertFalse(ch.isWritable());
            CompletionStage<Void> writable = ch.whenWritable();
            TrackedBody body = new TrackedBody("held".getBytes());
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, body);
            broker.expectNothing();
            assertPending(held);
            assertPending(writable);
            broker.send(0, new ConnectionUnblockedEncoder());
            assertEquals("held", expectPublish(broker, 1).text());
            broker.client.runPendingTasks();
            assertSame(PublishOutcome.SENT, held.toCompletableFuture().join());
            assertTrue(writable.toCompletableFuture().isDone());
            assertTrue(ch.isWritable());
            assertEquals(List.of(false, true), changes);
            body.assertReleasedOnce();
        }
    }

    /** Before: flow-ok was sent and the publish written at once, against the broker's channel.flow(active=false). */
    @Test
    void whileTheBrokerStopsTheChannelsFlowPublishesAreHeld() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            broker.send(1, new ChannelFlowEncoder().active(false));
            assertFalse(flowOk(broker), "flow-ok says the flow is off");
            assertFalse(ch.isWritable());
            TrackedBody body = new TrackedBody("held".getBytes());
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, body);
            broker.expectNothing();
            assertPending(held);

            broker.send(1, new ChannelFlowEncoder().active(true));
            assertTrue(flowOk(broker), "flow-ok says the flow is on");
            assertEquals("held", expectPublish(broker, 1).text());
            broker.client.runPendingTasks();
            assertSame(PublishOutcome.SENT, held.toCompletableFuture().join());
            assertTrue(ch.isWritable());
            body.assertReleasedOnce();
        }
    }

    /** Reads the client's channel.flow-ok on channel 1; returns its active flag. */
    private static boolean flowOk(FakeBroker broker) {
        Frame ok = broker.expect(1, MethodIds.CHANNEL_FLOW_OK);
        try {
            return new ChannelFlowOk()
                    .wrap(ok.payload(), ok.payload().readerIndex())
                    .active();
        } finally {
            ok.release();
        }
    }

    @Test
    void heldWhileBlockedAndTheChannelClosesReleasesTheBody() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on disk"));
            TrackedBody body = new TrackedBody("held".getBytes());
            CompletionStage<PublishOutcome> held = ch.publish("", "q", false, PROPS, body);
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED", 50, 10);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            // confirms are off: held and never written because the channel closed
            ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, failure(held));
            assertEquals(406, e.replyCode());
            body.assertReleasedOnce();
            broker.expectNothing();
        }
    }

    @Test
    void whileBlockedWithPolicyFailPublishesAreRefusedAtOnce() {
        ConnectionOptions options = new ConnectionOptions()
                .publishOptions(new PublishOptions().blockedPolicy(PublishOptions.BlockedPolicy.FAIL));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            TrackedBody body = new TrackedBody("x".getBytes());
            ConnectionBlockedException e = assertInstanceOf(
                    ConnectionBlockedException.class, failure(ch.publish("", "q", false, PROPS, body)));
            assertEquals("low on memory", e.reason());
            body.assertReleasedOnce();
            TrackedBody other = new TrackedBody("x".getBytes());
            assertThrows(ConnectionBlockedException.class, () -> ch.publishNoOutcome("", "q", false, PROPS, other));
            other.assertReleasedOnce();
            broker.send(0, new ConnectionUnblockedEncoder());
            ch.publish("", "q", false, PROPS, text("after"));
            assertEquals("after", expectPublish(broker, 1).text());
        }
    }

    // ---- Netty writability -------------------------------------------------------------------------------

    @Test
    void writabilityFollowsTheSocketBufferAndWaitersCompleteWhenItDrains() {
        ConnectionOptions options =
                new ConnectionOptions().publishOptions(new PublishOptions().writeBufferHighWaterMark(65536));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(2047, 0, 0), 1);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            List<Boolean> changes = new ArrayList<>();
            ch.addWritabilityListener((channel, writable) -> changes.add(writable));
            assertTrue(ch.isWritable());
            assertSame(ch.whenWritable(), ch.whenWritable(), "writable: one shared completed stage");
            ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(new byte[40_000]));
            ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(new byte[40_000]));
            assertFalse(ch.isWritable(), "80 KB written, not drained: above the 64 KiB high-water mark");
            CompletionStage<Void> writable = ch.whenWritable();
            assertPending(writable);
            assertEquals(List.of(false), changes);
            socket.drain();
            expectPublish(broker, 1);
            expectPublish(broker, 1);
            assertTrue(writable.toCompletableFuture().isDone());
            assertTrue(ch.isWritable());
            assertEquals(List.of(false, true), changes);
        }
    }

    @Test
    void aLargePublishRaisesTheDefaultHighWaterMarkSoThatItsPublisherNeedNotStopAtEveryMessage() {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            io.netty.channel.ChannelConfig config = broker.client.config();
            for (int i = 0; i < 8; i++) {
                ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(new byte[16_000]));
            }
            broker.client.runPendingTasks();
            assertEquals(
                    PublishOptions.DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK,
                    config.getWriteBufferHighWaterMark(),
                    "messages below a quarter of the mark keep the default");
            // with the default mark, 300 KB not yet taken by the socket made the channel unwritable
            byte[] large = filled(300_000, 'L');
            CompletionStage<PublishOutcome> sent = ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(large));
            broker.client.runPendingTasks();
            assertEquals(PublishFlow.LARGE_MESSAGE_MARK, config.getWriteBufferHighWaterMark());
            assertEquals(PublishFlow.LARGE_MESSAGE_MARK / 2, config.getWriteBufferLowWaterMark());
            assertTrue(
                    broker.client.unsafe().outboundBuffer().totalPendingWriteBytes() > 300_000,
                    "the large message waits in Netty's buffer");
            assertTrue(ch.isWritable(), "below the raised mark: its publisher goes on");
            socket.drain();
            for (int i = 0; i < 8; i++) {
                expectPublish(broker, 1);
            }
            assertArrayEquals(large, expectPublish(broker, 1).body());
            assertSame(PublishOutcome.SENT, sent.toCompletableFuture().join());
        }
    }

    @Test
    void theRaisedMarkStaysAQuarterOfThePendingBoundSoThatPublishersWaitBeforePublishesAreRefused() {
        for (long bound : new long[] {1 << 20, 8 << 20}) {
            ConnectionOptions options =
                    new ConnectionOptions().publishOptions(new PublishOptions().maxPendingBytes(bound));
            try (FakeBroker broker = new FakeBroker(options)) {
                Channel ch = broker.openChannel(broker.handshake(), 1);
                PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
                ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(new byte[300_000]));
                broker.client.runPendingTasks();
                int expected = bound == 1 << 20 ? PublishOptions.DEFAULT_WRITE_BUFFER_HIGH_WATER_MARK : 2 << 20;
                assertEquals(expected, broker.client.config().getWriteBufferHighWaterMark(), "bound " + bound);
                // with the 1 MiB bound the mark stays below it: the publisher waits, it is not refused
                assertEquals(bound > 1 << 20, ch.isWritable(), "bound " + bound);
                socket.drain();
                expectPublish(broker, 1);
            }
        }
    }

    @Test
    void aHighWaterMarkTheApplicationChoseIsKeptWhateverItPublishes() {
        ConnectionOptions options =
                new ConnectionOptions().publishOptions(new PublishOptions().writeBufferHighWaterMark(65536));
        try (FakeBroker broker = new FakeBroker(options)) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            ch.publish("", "q", false, PROPS, Unpooled.wrappedBuffer(new byte[300_000]));
            broker.client.runPendingTasks();
            expectPublish(broker, 1);
            assertEquals(65536, broker.client.config().getWriteBufferHighWaterMark());
        }
    }

    @Test
    void aboveTheHighWaterMarkPublishesAreHeldByTheirChannelsAndGoOutInTurnsWhenTheSocketDrains() {
        ConnectionOptions options =
                new ConnectionOptions().publishOptions(new PublishOptions().writeBufferHighWaterMark(65536));
        try (FakeBroker broker = new FakeBroker(options)) {
            ConnectionImpl c = broker.handshake(2047, 0, 0);
            Channel[] channels = {broker.openChannel(c, 1), broker.openChannel(c, 2), broker.openChannel(c, 3)};
            PublishFixture.StalledSocket socket = PublishFixture.StalledSocket.install(broker);
            io.netty.channel.ChannelOutboundBuffer netty =
                    broker.client.unsafe().outboundBuffer();
            channels[0].publish("", "q", false, PROPS, Unpooled.wrappedBuffer(filled(70_000, '0')));
            long first = netty.totalPendingWriteBytes();
            assertFalse(broker.client.isWritable(), "70 KB in Netty's buffer: above the 64 KiB high-water mark");
            // two 70 KB messages per channel, published in spite of the unwritable channel (as threads that raced it)
            List<TrackedBody> bodies = new ArrayList<>();
            List<CompletionStage<PublishOutcome>> outcomes = new ArrayList<>();
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < channels.length; i++) {
                    TrackedBody body = new TrackedBody(filled(70_000, (char) ('a' + 3 * round + i)));
                    bodies.add(body);
                    outcomes.add(channels[i].publish("", "q", false, PROPS, body));
                }
            }
            broker.client.runPendingTasks();
            assertEquals(first, netty.totalPendingWriteBytes(), "held by their channels, not written to Netty");
            for (int i = 0; i < channels.length; i++) {
                assertFalse(channels[i].isWritable(), "channel " + (i + 1) + " holds publishes");
            }
            for (TrackedBody b : bodies) {
                assertEquals(1, b.refCnt(), "a held body is still the caller's buffer, not released");
            }
            outcomes.forEach(PublishFixture::assertPending);
            socket.drain();
            assertEquals('0', expectPublish(broker, 1).body()[0]);
            // each writability change lets one channel send until the socket is above the mark again: one 70 KB
            // message, from the channels in turn, each channel's own in order
            StringBuilder order = new StringBuilder();
            for (int m = 0; m < 6; m++) {
                Frame method = broker.next();
                assertNotNull(method, "publish " + m);
                int channel = method.channel();
                method.release();
                Frame header = broker.next();
                header.release();
                Frame body = broker.next();
                order.append((char) body.payload().getByte(body.payload().readerIndex()));
                body.release();
                assertEquals(channel, (order.charAt(m) - 'a') % 3 + 1, "the body of channel " + channel + "'s publish");
            }
            assertEquals(
                    3,
                    order.substring(0, 3).chars().distinct().count(),
                    () -> "the first three from three channels: " + order);
            for (int i = 0; i < channels.length; i++) {
                char one = (char) ('a' + i);
                char two = (char) ('d' + i);
                assertTrue(
                        order.indexOf(String.valueOf(one)) < order.indexOf(String.valueOf(two)),
                        () -> "a channel's publishes in order: " + order);
            }
            for (CompletionStage<PublishOutcome> o : outcomes) {
                assertSame(PublishOutcome.SENT, o.toCompletableFuture().join());
            }
            bodies.forEach(TrackedBody::assertReleasedOnce);
            for (Channel ch : channels) {
                assertTrue(ch.isWritable());
            }
        }
    }

    @Test
    void whenWritableFailsWhenTheChannelCloses() {
        try (FakeBroker broker = new FakeBroker()) {
            ConnectionImpl c = broker.handshake();
            Channel ch = broker.openChannel(c, 1);
            broker.send(0, new ConnectionBlockedEncoder().reason("low on memory"));
            CompletionStage<Void> writable = ch.whenWritable();
            broker.sendChannelClose(1, 406, "PRECONDITION_FAILED", 50, 10);
            broker.expectAndRelease(1, MethodIds.CHANNEL_CLOSE_OK);
            assertInstanceOf(io.warren.ChannelClosedException.class, failure(writable));
            assertFalse(ch.isWritable());
        }
    }

    // ---- helpers -----------------------------------------------------------------------------------------

    static byte[] filled(int length, char c) {
        byte[] b = new byte[length];
        Arrays.fill(b, (byte) c);
        return b;
    }

    /** Decodes buffers the client wrote (ownership taken) into frames the caller releases. */
    static List<Frame> decode(ByteBuf... written) {
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(0);
        EmbeddedChannel server = new EmbeddedChannel(decoder);
        for (ByteBuf b : written) {
            server.writeInbound(b);
        }
        List<Frame> frames = new ArrayList<>();
        Frame f;
        while ((f = server.readInbound()) != null) {
            frames.add(f);
        }
        assertFalse(server.finish());
        return frames;
    }

    /**
     * Three publishes the event loop writes in one read batch: flushed once, at its end, by default; once per
     * message when the connection's PublishOptions ask for one message per flush (read once, when the connection
     * is made), and after every second one with two.
     */
    @Test
    void publishesOfOneBatchShareAFlushUnlessFewerMessagesPerFlushAreAsked() {
        assertEquals(1, flushesForThreePublishes(new PublishOptions()), "coalesced: one flush for the batch");
        assertEquals(
                3,
                flushesForThreePublishes(new PublishOptions().maxMessagesPerFlush(1)),
                "maxMessagesPerFlush(1): a flush after every publish");
        assertEquals(
                2,
                flushesForThreePublishes(new PublishOptions().maxMessagesPerFlush(2)),
                "maxMessagesPerFlush(2): a flush after the second, and the batch's own after the third");
    }

    private static int flushesForThreePublishes(PublishOptions publishing) {
        // the callers write nothing themselves: every publish goes through the event loop
        try (FakeBroker broker =
                new FakeBroker(new ConnectionOptions().publishOptions(publishing.callerWritesPerBurst(0)))) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            int[] flushes = {0};
            broker.client.pipeline().addFirst(new io.netty.channel.ChannelOutboundHandlerAdapter() {
                @Override
                public void flush(io.netty.channel.ChannelHandlerContext ctx) {
                    flushes[0]++;
                    ctx.flush();
                }
            });
            // as if they were published by a delivery handler on the loop: the read batch's end flushes
            OutboundPath path = broker.handler.outbound();
            path.beginReadBatch();
            ch.publish("", "q", false, PROPS, text("a"));
            ch.publish("", "q", false, PROPS, text("b"));
            ch.publish("", "q", false, PROPS, text("c"));
            path.endReadBatch();
            broker.client.runPendingTasks();
            assertEquals("a", expectPublish(broker, 1).text());
            assertEquals("b", expectPublish(broker, 1).text());
            assertEquals("c", expectPublish(broker, 1).text());
            broker.expectNothing();
            return flushes[0];
        }
    }
}
