package io.warren.impl;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.codec.Frames;
import io.warren.codec.ProtocolHeader;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicAck;
import io.warren.codec.method.BasicConsume;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.codec.method.BasicPublish;
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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * A broker on a real loopback socket, for tests of what callers write to the JDK socket (which an
 * {@code EmbeddedChannel} has not). One connection, one thread: it checks the byte stream frame by frame (every frame
 * whole and ended by 0xCE; on each channel basic.publish, its content header and its body frames never interleaved
 * with another frame), answers the handshake and the methods a client needs (channel.open, basic.qos, confirm.select,
 * basic.consume, the closes), keeps a consumer supplied with deliveries, and can stall its reading or cut the
 * connection. What a test checks of a publish, and how it answers one, it says in {@link #publish} and the other hooks.
 * Subclasses call {@link #start} at the end of their constructor, so that the thread sees their fields set.
 */
abstract class SocketPeer implements AutoCloseable, Runnable {

    /** The frame_max it tunes: a body up to {@code FRAME_MAX - 8} bytes is one frame, which a caller may write. */
    static final int FRAME_MAX = 131072;

    private static final int METHOD = 1;
    private static final int HEADER = 2;
    private static final int BODY = 3;

    /** Per channel: what the next frame must be, and the publish being read. */
    static final class Stream {
        long bodyExpected = -1; // -1: a method; 0..: after a publish's header, body bytes still expected
        boolean headerExpected;
        /** The publish's basic.publish had its mandatory bit set. */
        boolean mandatory;
        /** The channel asked for confirm.select. */
        boolean confirmSelected;
        /** The publish's content header frame's payload. */
        byte[] header;
        /** The publish's body as read so far; cleared after {@link #publish}. Unpooled heap: nothing to release. */
        final ByteBuf body = Unpooled.buffer(64 * 1024);
    }

    final List<String> errors = new CopyOnWriteArrayList<>();
    /** The basic.acks the client wrote for deliveries. */
    final AtomicLong acksRead = new AtomicLong();

    // any thread
    private final ServerSocket server;
    private final boolean slow;
    private final Thread thread;
    private volatile Socket socket;
    private volatile OutputStream out;
    private volatile boolean closing;
    private volatile CountDownLatch gate = new CountDownLatch(0);

    // the peer's thread only
    private final Map<Integer, Stream> streams = new HashMap<>();
    private final BasicAck ackView = new BasicAck();
    private final BasicPublish publishView = new BasicPublish();
    /** The last frames read (type, channel, size, first four bytes), for an error's message. */
    private final long[] recent = new long[12];

    private long frames;
    private int deliveryWindow;
    private long deliveryLimit;
    private String consumerTag;
    private long delivered;
    private long acked;

    /**
     * @param receiveBuffer the socket's receive buffer, 0 for the default (small: a stalled or slow peer then fills
     *     the client's socket)
     * @param slow whether it pauses every 300 frames, so that the client's socket fills and callers write in part
     */
    SocketPeer(int receiveBuffer, boolean slow, String threadName) throws IOException {
        this.slow = slow;
        server = new ServerSocket();
        if (receiveBuffer > 0) {
            server.setReceiveBufferSize(receiveBuffer);
        }
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        thread = new Thread(this, threadName);
        thread.setDaemon(true);
    }

    /** Starts the peer's thread; the subclass's constructor calls it last. */
    protected final void start() {
        thread.start();
    }

    /** Answers basic.consume with deliveries: up to {@code window} unacked, {@code limit} in all. Before start. */
    protected final void deliveries(int window, long limit) {
        deliveryWindow = window;
        deliveryLimit = limit;
    }

    /** connection.start's server-properties. */
    protected Map<String, Object> serverProperties() {
        return Map.of("product", "peer", "capabilities", Map.of("publisher_confirms", true));
    }

    /** On the peer's thread before it reads each frame; {@code inputDry}: no byte of it has arrived yet. */
    protected void beforeFrame(boolean inputDry) throws IOException {}

    /** A method frame was read on {@code channel}, before the peer answers it ({@code key}: class and method ids). */
    protected void methodRead(int channel, int key) {}

    /** A publish's content header was read on {@code channel}; {@code st.mandatory} says its publish's bit. */
    protected void contentHeader(int channel, Stream st, ContentHeader header) {}

    /**
     * A publish's body is whole in {@code st.body} (the peer clears it afterwards); false ends the connection's
     * reading.
     */
    protected abstract boolean publish(int channel, Stream st) throws IOException;

    int port() {
        return server.getLocalPort();
    }

    /** Reads no frame after the one it is reading, until {@link #resume}. */
    void stall() {
        gate = new CountDownLatch(1);
    }

    void resume() {
        gate.countDown();
    }

    /** From the test's thread: resets the connection (RST, unread bytes dropped), and the client sees it lost. */
    void cut() throws IOException {
        closing = true;
        Socket s = socket;
        s.setSoLinger(true, 0);
        s.close();
        resume();
    }

    /** Waits up to 30 s for {@code condition}, less when the peer records an error; whether it holds. */
    boolean await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (!condition.getAsBoolean() && System.currentTimeMillis() < deadline && errors.isEmpty()) {
            Thread.sleep(5);
        }
        return condition.getAsBoolean();
    }

    /** Waits for the peer to end its reading: the client closed, or the peer failed. */
    void awaitEnd(long millis) throws InterruptedException {
        thread.join(millis);
    }

    @Override
    public void close() throws IOException, InterruptedException {
        closing = true;
        resume();
        server.close();
        Socket s = socket;
        if (s != null) {
            s.close();
        }
        thread.join(10_000);
    }

    @Override
    public void run() {
        try {
            // the socket stays open until close() or cut(): the client closes first
            Socket s = server.accept();
            socket = s;
            out = s.getOutputStream();
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 4096));
            in.readFully(new byte[ProtocolHeader.LENGTH]);
            send(
                    0,
                    new ConnectionStartEncoder()
                            .versionMajor(0)
                            .versionMinor(9)
                            .serverProperties(serverProperties())
                            .mechanisms("PLAIN")
                            .locales("en_US"));
            while (true) {
                gate.await();
                beforeFrame(in.available() == 0);
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
                if (slow && frames % 300 == 0) {
                    Thread.sleep(20); // a slow reader: the client's socket fills and callers write in part
                }
                if (!frame(type, channel, payload)) {
                    return;
                }
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            if (!closing) {
                errors.add("peer: " + e);
            }
        }
    }

    /** False when the connection is done. */
    private boolean frame(int type, int channel, byte[] payload) throws IOException {
        ByteBuf p = Unpooled.wrappedBuffer(payload);
        recent[(int) (frames % recent.length)] = (long) type << 56
                | (long) channel << 40
                | (long) payload.length << 16
                | (payload.length >= 4 ? p.getUnsignedShort(2) : 0);
        Stream st = streams.computeIfAbsent(channel, c -> new Stream());
        if (st.headerExpected) {
            if (type != HEADER) {
                errors.add("channel " + channel + ": frame type " + type + " where a publish's header belongs");
                return false;
            }
            st.headerExpected = false;
            st.header = payload;
            ContentHeader h = new ContentHeader().wrap(p, 0);
            st.bodyExpected = h.bodySize();
            contentHeader(channel, st, h);
            return bodyDone(channel, st);
        }
        if (st.bodyExpected >= 0) {
            if (type != BODY) {
                errors.add(
                        "channel " + channel + ": frame type " + type + " inside a publish's body; recent " + recent());
                return false;
            }
            st.bodyExpected -= payload.length;
            st.body.writeBytes(p);
            return bodyDone(channel, st);
        }
        if (type != METHOD) {
            errors.add("channel " + channel + ": frame type " + type + " where a method belongs");
            return false;
        }
        int key = p.getInt(0);
        methodRead(channel, key);
        if (key == MethodIds.CONNECTION_START_OK) {
            send(
                    0,
                    new ConnectionTuneEncoder()
                            .channelMax(2047)
                            .frameMax(FRAME_MAX)
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
            st.confirmSelected = true;
            send(channel, new ConfirmSelectOkEncoder());
        } else if (key == MethodIds.BASIC_ACK) {
            acksRead.incrementAndGet();
            acked = ackView.wrap(p, 0).deliveryTag();
            deliverMore(channel);
        } else if (key == MethodIds.BASIC_PUBLISH) {
            st.headerExpected = true;
            st.mandatory = publishView.wrap(p, 0).mandatory();
        } else if (key == MethodIds.CHANNEL_CLOSE) {
            send(channel, new ChannelCloseOkEncoder());
        } else if (key == MethodIds.CONNECTION_CLOSE) {
            send(0, new ConnectionCloseOkEncoder());
            return false;
        }
        return true;
    }

    private boolean bodyDone(int channel, Stream st) throws IOException {
        if (st.bodyExpected > 0) {
            return true;
        }
        if (st.bodyExpected < 0) {
            errors.add("channel " + channel + ": body frames longer than the header said");
            return false;
        }
        st.bodyExpected = -1;
        try {
            return publish(channel, st);
        } finally {
            st.body.clear();
        }
    }

    /** Oldest first: type/channel/size(method id or the body's third and fourth bytes). */
    private List<String> recent() {
        List<String> r = new ArrayList<>();
        for (long i = Math.max(0, frames - recent.length); i < frames; i++) {
            long f = recent[(int) (i % recent.length)];
            r.add((f >>> 56) + "/" + (f >>> 40 & 0xFFFF) + "/" + (f >>> 16 & 0xFFFFFF) + "(" + (f & 0xFFFF) + ")");
        }
        return r;
    }

    /** Keeps up to the window of deliveries unacked on the consumer's channel, up to the limit in all. */
    private void deliverMore(int channel) throws IOException {
        while (consumerTag != null && delivered - acked < deliveryWindow && delivered < deliveryLimit) {
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

    /** Writes the method in one frame. */
    protected final void send(int channel, MethodEncoder encoder) throws IOException {
        write(Frames.method(ByteBufAllocator.DEFAULT, channel, encoder));
    }

    /** Writes the frame and releases it; from the peer's thread or a test's. */
    protected final synchronized void write(ByteBuf frame) throws IOException {
        try {
            out.write(ByteBufUtil.getBytes(frame));
        } finally {
            frame.release();
        }
    }
}
