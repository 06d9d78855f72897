package io.warren.impl;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;

/**
 * A {@link SocketPeer} that reads nothing from its {@code holdAt}th frame on until the test {@link #release()}s it
 * (or closes it): a client's handshake, or a restore, waits there. Frames count from start-ok (1), tune-ok (2),
 * connection.open (3).
 */
final class HoldingPeer extends SocketPeer {

    /** Counted down when the held frame has arrived. */
    final CountDownLatch held = new CountDownLatch(1);

    private final CountDownLatch release = new CountDownLatch(1);
    private final int holdAt;
    private int frame; // the peer's thread only

    HoldingPeer(int holdAt, String name) throws IOException {
        super(0, false, name);
        this.holdAt = holdAt;
        start();
    }

    /** Lets the peer read on. */
    void release() {
        release.countDown();
    }

    @Override
    protected void beforeFrame(boolean inputDry) throws IOException {
        if (++frame == holdAt) {
            held.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
        }
    }

    @Override
    protected boolean publish(int channel, Stream st) {
        return true;
    }

    @Override
    public void close() throws IOException, InterruptedException {
        release.countDown();
        super.close();
    }
}
