package io.warren.impl;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.codec.Frames;
import io.warren.codec.ProtocolHeader;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.ChannelCloseOkEncoder;
import io.warren.codec.method.ChannelOpenOkEncoder;
import io.warren.codec.method.ConnectionCloseOkEncoder;
import io.warren.codec.method.ConnectionOpenOkEncoder;
import io.warren.codec.method.ConnectionStartEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.MethodIds;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A broker on a real loopback socket, for the publishes their callers write to the JDK socket (which an
 * {@code EmbeddedChannel} has not): it answers the handshake, channel.open and the closes, and hands each publish's
 * body to the test. It can stop reading ({@link #stall}), so that the client's socket fills and a caller's write is
 * taken only in part, and can reset the connection ({@link #reset}). One connection, one thread.
 */
final class LoopbackPeer implements AutoCloseable, Runnable {

    /** The frame_max it tunes: a body up to {@code FRAME_MAX - 8} bytes is one frame, which a caller may write. */
    static final int FRAME_MAX = 131072;

    final ServerSocket server;
    /** Each publish's body, in the order read. */
    final BlockingQueue<byte[]> bodies = new LinkedBlockingQueue<>();

    final List<String> errors = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private volatile Socket socket;
    private volatile CountDownLatch gate = new CountDownLatch(0);

    /** @param receiveBuffer the socket's receive buffer (small: a stalled peer then fills the client's socket) */
    LoopbackPeer(int receiveBuffer) throws IOException {
        server = new ServerSocket();
        server.setReceiveBufferSize(receiveBuffer);
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        thread = new Thread(this, "loopback-peer");
        thread.setDaemon(true);
        thread.start();
    }

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

    /** Resets the connection (RST, unread bytes dropped): the client sees it lost. */
    void reset() throws IOException {
        Socket s = socket;
        s.setSoLinger(true, 0);
        s.close();
        resume();
    }

    /** The next publish's body, waiting up to 10 s; fails when none came. */
    byte[] nextBody() throws InterruptedException {
        byte[] b = bodies.poll(10, TimeUnit.SECONDS);
        if (b == null) {
            throw new AssertionError("no publish reached the peer; errors " + errors);
        }
        return b;
    }

    @Override
    public void run() {
        try {
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
                            .serverProperties(Map.of("product", "loopback-peer"))
                            .mechanisms("PLAIN")
                            .locales("en_US"));
            while (true) {
                gate.await();
                int type = in.read();
                if (type < 0) {
                    return; // the client shut its output: the socket stays open until close()
                }
                int channel = in.readUnsignedShort();
                byte[] payload = new byte[in.readInt()];
                in.readFully(payload);
                if (in.readUnsignedByte() != Frames.FRAME_END) {
                    errors.add("a frame of type " + type + " without its end octet");
                    return;
                }
                if (!frame(type, channel, Unpooled.wrappedBuffer(payload))) {
                    return;
                }
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            if (!server.isClosed() && (socket == null || !socket.isClosed())) {
                errors.add("peer: " + e);
            }
        }
    }

    private OutputStream out;
    private long bodyExpected = -1;
    private boolean headerExpected;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();

    /** False when the connection is done. */
    private boolean frame(int type, int channel, ByteBuf p) throws IOException {
        if (headerExpected) {
            headerExpected = false;
            bodyExpected = new ContentHeader().wrap(p, 0).bodySize();
            return bodyDone();
        }
        if (bodyExpected >= 0) {
            bodyExpected -= p.readableBytes();
            body.write(p.array(), p.readerIndex(), p.readableBytes());
            return bodyDone();
        }
        int key = p.getInt(0);
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
        } else if (key == MethodIds.BASIC_PUBLISH) {
            headerExpected = true;
        } else if (key == MethodIds.CHANNEL_CLOSE) {
            send(channel, new ChannelCloseOkEncoder());
        } else if (key == MethodIds.CONNECTION_CLOSE) {
            send(0, new ConnectionCloseOkEncoder());
            return false;
        }
        return true;
    }

    private boolean bodyDone() {
        if (bodyExpected > 0) {
            return true;
        }
        if (bodyExpected < 0) {
            errors.add("body frames longer than the header said");
            return false;
        }
        bodyExpected = -1;
        bodies.add(body.toByteArray());
        body.reset();
        return true;
    }

    private void send(int channel, MethodEncoder encoder) throws IOException {
        ByteBuf frame = Frames.method(ByteBufAllocator.DEFAULT, channel, encoder);
        try {
            out.write(ByteBufUtil.getBytes(frame));
        } finally {
            frame.release();
        }
    }

    @Override
    public void close() throws Exception {
        resume();
        server.close();
        Socket s = socket;
        if (s != null) {
            s.close();
        }
        thread.join(10_000);
    }
}
