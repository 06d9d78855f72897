package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.PublishOutcome;
import io.warren.codec.Frames;
import io.warren.codec.ProtocolHeader;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicAck;
import io.warren.codec.method.BasicAckEncoder;
import io.warren.codec.method.BasicConsume;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicQosOkEncoder;
import io.warren.codec.method.ChannelCloseOkEncoder;
import io.warren.codec.method.ChannelOpenOkEncoder;
import io.warren.codec.method.ConfirmSelectOkEncoder;
import io.warren.codec.method.ConnectionCloseOkEncoder;
import io.warren.codec.method.ConnectionOpenOkEncoder;
import io.warren.codec.method.ConnectionStartEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.publish.Publisher;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Publishing threads that write on their own thread (the outbound path's writer token) and the event loop's writes
 * (a consumer's acks, publishes of a channel in confirm mode, channel RPCs) on one connection, over a real socket to
 * a peer that reads slowly through a small receive buffer, so that the socket fills and callers' writes are handed
 * over in part. The peer checks the byte stream frame by frame: every frame well formed and ended by 0xCE; on each
 * channel basic.publish, its content header and its body frames never interleaved with another method; each
 * thread's messages in its order with their bodies intact; in confirm mode the sequence number each publish carries
 * equal to its place on the wire.
 */
class CallerThreadWriteTest {

    private static final int THREADS = 8;
    private static final int MESSAGES = 1500;
    /** Channels 2..4: two threads each, no confirms; channel 5: two threads, confirm mode; channel 1: a consumer. */
    private static final int CONFIRM_CHANNEL = 5;

    @Test
    void callerAndEventLoopWritesInterleaveOnlyBetweenWholeMessages() throws Exception {
        AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(1));
        try (ServerSocket server = new ServerSocket()) {
            server.setReceiveBufferSize(8192);
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            Peer peer = new Peer(server);
            Thread peerThread = new Thread(peer, "peer");
            peerThread.start();
            Connection connection = client.connect(new ConnectionOptions().address("127.0.0.1", server.getLocalPort()))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            // a small socket send buffer: callers' writes are often taken only in part and handed to the loop
            OutboundPath outbound = ((ConnectionImpl) connection).handler().outbound();
            outbound.channel().config().setOption(io.netty.channel.ChannelOption.SO_SNDBUF, 4096);
            // callers write whenever the path is idle, not only after a pause: as many caller writes as can be
            outbound.callerWriteGap(0);
            Channel consumerChannel =
                    connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            consumerChannel
                    .consume("q", new ConsumeOptions().prefetch(100), d -> d.ack())
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            List<Channel> channels = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                channels.add(connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS));
            }
            Channel confirming = channels.get(3);
            assertEquals(CONFIRM_CHANNEL, confirming.channelNumber());
            confirming.confirmSelect().toCompletableFuture().get(10, TimeUnit.SECONDS);

            CyclicBarrier start = new CyclicBarrier(THREADS);
            ConcurrentLinkedQueue<CompletableFuture<PublishOutcome>> all = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                Channel ch = channels.get(t / 2);
                threads.add(new Thread(
                        () -> {
                            try {
                                start.await();
                                for (int seq = 0; seq < MESSAGES; seq++) {
                                    if (!ch.isWritable()) {
                                        ch.whenWritable().toCompletableFuture().get(30, TimeUnit.SECONDS);
                                    }
                                    ByteBuf body = body(thread, seq);
                                    boolean confirms = ch == confirming;
                                    if (confirms || seq % 2 == 0) {
                                        all.add(ch.publish("x", "rk", confirms, BasicProperties.EMPTY, body)
                                                .toCompletableFuture());
                                    } else {
                                        ch.publishNoOutcome("x", "rk", false, BasicProperties.EMPTY, body);
                                    }
                                }
                            } catch (Throwable e) {
                                failures.add(e);
                            }
                        },
                        "publisher-" + t));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join(60_000);
            }
            assertEquals(List.of(), peer.errors);
            assertEquals(List.of(), failures);
            for (CompletableFuture<PublishOutcome> f : all) {
                PublishOutcome o = f.get(30, TimeUnit.SECONDS);
                assertTrue(o == PublishOutcome.SENT || o == PublishOutcome.CONFIRMED, o::toString);
            }
            assertTrue(
                    peer.publishes.await(THREADS * MESSAGES, 30_000),
                    () -> "the peer read " + peer.publishes.get() + " publishes of " + THREADS * MESSAGES + "; "
                            + peer.errors);
            assertEquals(List.of(), peer.errors);
            long[] counts = outbound.callerWriteCounts();
            assertTrue(counts[0] > 0, "some publishes were written on their callers' threads");
            // a 20 kB message written by a caller cannot fit the socket's buffers: its rest went through the loop
            assertTrue(counts[1] > 0, "some callers' writes were taken in part and handed over");
            assertTrue(peer.acksRead.get() > 0, "the event loop wrote acks meanwhile");
            connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
            peerThread.join(10_000);
            assertEquals(List.of(), peer.errors);
        } finally {
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    /** Thread and sequence number first, then a filler of the sequence number's low byte; some are large. */
    private static ByteBuf body(int thread, int seq) {
        int size = seq % 7 == 0 ? 20_000 : 8 + seq % 200;
        ByteBuf b = ByteBufAllocator.DEFAULT.buffer(size);
        b.writeInt(thread).writeInt(seq);
        while (b.isWritable()) {
            b.writeByte(seq);
        }
        return b;
    }

    /** A counter a test can wait on. */
    static final class Count {
        private final AtomicLong n = new AtomicLong();

        void increment() {
            n.incrementAndGet();
        }

        long get() {
            return n.get();
        }

        boolean await(long target, long millis) throws InterruptedException {
            long deadline = System.currentTimeMillis() + millis;
            while (n.get() < target && System.currentTimeMillis() < deadline) {
                Thread.sleep(10);
            }
            return n.get() >= target;
        }
    }

    /** Per channel: what the next frame must be. */
    private static final class ChannelStream {
        long bodyExpected = -1; // -1: a method; 0..: after a publish's header, body bytes still expected
        boolean headerExpected;
        long wireSequence; // confirm mode: publishes read so far
        long stamped;
        final ByteBuf body = Unpooled.wrappedBuffer(new byte[64 * 1024]).clear();
    }

    /** A broker that answers what the client needs and checks every frame it reads; one thread. */
    private static final class Peer implements Runnable {
        final ServerSocket server;
        final List<String> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        final Count publishes = new Count();
        final AtomicLong acksRead = new AtomicLong();
        private final Map<Integer, ChannelStream> streams = new HashMap<>();
        private final Map<Integer, Integer> nextSeq = new HashMap<>();
        private final BasicAck ackView = new BasicAck();
        private OutputStream out;
        private String consumerTag;
        private long delivered;
        private long acked;
        private boolean confirmMode;

        Peer(ServerSocket server) {
            this.server = server;
        }

        @Override
        public void run() {
            try (Socket s = server.accept()) {
                out = s.getOutputStream();
                DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 4096));
                byte[] header = new byte[ProtocolHeader.LENGTH];
                in.readFully(header);
                send(
                        0,
                        new ConnectionStartEncoder()
                                .versionMajor(0)
                                .versionMinor(9)
                                .serverProperties(
                                        Map.of("product", "peer", "capabilities", Map.of("publisher_confirms", true)))
                                .mechanisms("PLAIN")
                                .locales("en_US"));
                long frames = 0;
                while (true) {
                    int type = in.read();
                    if (type < 0) {
                        return;
                    }
                    int channel = in.readUnsignedShort();
                    int size = in.readInt();
                    byte[] payload = new byte[size];
                    in.readFully(payload);
                    int end = in.readUnsignedByte();
                    if (end != Frames.FRAME_END) {
                        errors.add("frame " + frames + " (type " + type + ", channel " + channel + ", size " + size
                                + ") ends with " + end);
                        return;
                    }
                    frames++;
                    if (frames % 300 == 0) {
                        Thread.sleep(20); // a slow reader: the client's socket fills and callers write in part
                    }
                    if (!frame(type, channel, Unpooled.wrappedBuffer(payload))) {
                        return;
                    }
                }
            } catch (IOException | InterruptedException | RuntimeException e) {
                errors.add("peer: " + e);
            }
        }

        /** False when the connection is done. */
        private final java.util.ArrayDeque<String> recent = new java.util.ArrayDeque<>();

        private boolean frame(int type, int channel, ByteBuf p) throws IOException {
            recent.add(type + "/" + channel + "/" + p.readableBytes()
                    + (type == 3 && p.readableBytes() >= 8 ? "(" + p.getInt(0) + ":" + p.getInt(4) + ")" : ""));
            if (recent.size() > 12) {
                recent.poll();
            }
            ChannelStream st = streams.computeIfAbsent(channel, c -> new ChannelStream());
            if (st.headerExpected) {
                if (type != 2) {
                    errors.add("channel " + channel + ": frame type " + type + " where a publish's header belongs");
                    return false;
                }
                st.headerExpected = false;
                ContentHeader h = new ContentHeader().wrap(p, 0);
                st.bodyExpected = h.bodySize();
                if (channel == CONFIRM_CHANNEL && confirmMode) {
                    st.wireSequence++;
                    st.stamped = Publisher.SEQUENCE_HEADER.find(h, -1);
                    if (st.stamped != st.wireSequence) {
                        errors.add("channel " + channel + ": publish " + st.wireSequence + " on the wire carries "
                                + "sequence number " + st.stamped);
                    }
                }
                return bodyDone(channel, st);
            }
            if (st.bodyExpected >= 0) {
                if (type != 3) {
                    errors.add("channel " + channel + ": frame type " + type + " inside a publish's body; recent "
                            + recent);
                    return false;
                }
                st.bodyExpected -= p.readableBytes();
                st.body.writeBytes(p);
                return bodyDone(channel, st);
            }
            if (type != 1) {
                errors.add("channel " + channel + ": frame type " + type + " where a method belongs");
                return false;
            }
            int key = p.getInt(0);
            if (key == MethodIds.CONNECTION_START_OK) {
                send(
                        0,
                        new ConnectionTuneEncoder()
                                .channelMax(2047)
                                .frameMax(131072)
                                .heartbeat(0));
            } else if (key == MethodIds.CONNECTION_OPEN) {
                send(0, new ConnectionOpenOkEncoder());
            } else if (key == MethodIds.CHANNEL_OPEN) {
                send(channel, new ChannelOpenOkEncoder());
            } else if (key == MethodIds.BASIC_QOS) {
                send(channel, new BasicQosOkEncoder());
            } else if (key == MethodIds.BASIC_CONSUME) {
                consumerTag = "ctag-" + new BasicConsume().wrap(p, 0).consumerTagAsString();
                send(channel, new BasicConsumeOkEncoder().consumerTag(consumerTag));
                deliverMore(channel);
            } else if (key == MethodIds.CONFIRM_SELECT) {
                confirmMode = true;
                send(channel, new ConfirmSelectOkEncoder());
            } else if (key == MethodIds.BASIC_ACK) {
                acksRead.incrementAndGet();
                ackView.wrap(p, 0);
                acked = ackView.deliveryTag();
                deliverMore(channel);
            } else if (key == MethodIds.BASIC_PUBLISH) {
                st.headerExpected = true;
            } else if (key == MethodIds.CHANNEL_CLOSE) {
                send(channel, new ChannelCloseOkEncoder());
            } else if (key == MethodIds.CONNECTION_CLOSE) {
                send(0, new ConnectionCloseOkEncoder());
                return false;
            }
            return true;
        }

        /** A publish's body is complete: check it, and in confirm mode ack it. */
        private boolean bodyDone(int channel, ChannelStream st) throws IOException {
            if (st.bodyExpected > 0) {
                return true;
            }
            if (st.bodyExpected < 0) {
                errors.add("channel " + channel + ": body frames longer than the header said");
                return false;
            }
            st.bodyExpected = -1;
            ByteBuf b = st.body;
            int thread = b.readInt();
            int seq = b.readInt();
            int expected = nextSeq.getOrDefault(thread, 0);
            if (seq != expected || thread / 2 + 2 != channel) {
                errors.add("channel " + channel + ": thread " + thread + "'s message " + seq + " where " + expected
                        + " was next");
            }
            nextSeq.put(thread, seq + 1);
            while (b.isReadable()) {
                if (b.readByte() != (byte) seq) {
                    errors.add("channel " + channel + ": thread " + thread + "'s message " + seq + " has a foreign "
                            + "byte at " + (b.readerIndex() - 1) + ": " + ByteBufUtil.hexDump(b, 0, 8));
                    break;
                }
            }
            b.clear();
            publishes.increment();
            if (channel == CONFIRM_CHANNEL && confirmMode) {
                send(channel, new BasicAckEncoder().deliveryTag(st.wireSequence).multiple(false));
            }
            return errors.isEmpty();
        }

        /** Keeps up to 100 deliveries unacked on the consumer's channel: the event loop acks as they come. */
        private void deliverMore(int channel) throws IOException {
            while (consumerTag != null && delivered - acked < 100) {
                delivered++;
                send(
                        channel,
                        new BasicDeliverEncoder()
                                .consumerTag(consumerTag)
                                .deliveryTag(delivered)
                                .exchange("x")
                                .routingKey("rk"));
                byte[] body = ByteBuffer.allocate(8).putLong(delivered).array();
                write(Frames.contentHeader(ByteBufAllocator.DEFAULT, channel, body.length, BasicProperties.EMPTY));
                write(Frames.body(ByteBufAllocator.DEFAULT, channel, Unpooled.wrappedBuffer(body)));
            }
        }

        private void send(int channel, MethodEncoder encoder) throws IOException {
            write(Frames.method(ByteBufAllocator.DEFAULT, channel, encoder));
        }

        private void write(ByteBuf frame) throws IOException {
            try {
                out.write(ByteBufUtil.getBytes(frame));
            } finally {
                frame.release();
            }
        }
    }
}
