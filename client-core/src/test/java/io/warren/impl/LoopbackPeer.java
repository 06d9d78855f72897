package io.warren.impl;

import io.netty.buffer.ByteBufUtil;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link SocketPeer} that hands each publish's body to the test. Stalled ({@link #stall}), it lets the client's
 * socket fill, so that a caller's write is taken only in part; it can reset the connection ({@link #cut}).
 */
final class LoopbackPeer extends SocketPeer {

    /** Each publish's body, in the order read. */
    final BlockingQueue<byte[]> bodies = new LinkedBlockingQueue<>();

    /** @param receiveBuffer the socket's receive buffer (small: a stalled peer then fills the client's socket) */
    LoopbackPeer(int receiveBuffer) throws IOException {
        super(receiveBuffer, false, "loopback-peer");
        start();
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
    protected Map<String, Object> serverProperties() {
        return Map.of("product", "loopback-peer");
    }

    @Override
    protected boolean publish(int channel, Stream st) {
        bodies.add(ByteBufUtil.getBytes(st.body));
        return true;
    }
}
