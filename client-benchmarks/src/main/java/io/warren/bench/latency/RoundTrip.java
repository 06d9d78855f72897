package io.warren.bench.latency;

import io.warren.perf.LoopbackPeer;
import io.warren.perf.MessageBody;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * The benchmark's core loop, one message at a time: a client publishes to the in-process loopback peer (sink mode)
 * and the caller waits until the peer has read the whole message. The latency is the peer's own: it subtracts the
 * body's stamp, taken right before the client's publish call, from {@code System.nanoTime()} when its event loop
 * handles the body frame (the message is complete: every body here fits in one frame), and records it in its
 * receipt histogram. How the caller waits or wakes is not in that figure.
 *
 * <p>The caller thread owns this object; the peer runs on its own event loop thread ({@code warren-peer-*}).
 */
final class RoundTrip implements AutoCloseable {

    /** The largest body in one frame at the peer's frame-max (131072, less the frame's 8 bytes). */
    static final int MAX_BODY_SIZE = 131_072 - 8;

    private static final long PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(10);
    private static final long RECEIPT_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final LoopbackPeer peer;
    private final RoundTripClient client;
    // caller thread only
    private long published;

    private RoundTrip(LoopbackPeer peer, RoundTripClient client) {
        this.peer = peer;
        this.client = client;
        this.published = peer.publishesRead();
    }

    /** Starts a peer and connects {@code clientName}'s client to it; the peer records receipt latencies from now. */
    static RoundTrip start(String clientName, int bodySize) throws Exception {
        if (bodySize < MessageBody.MIN_SIZE || bodySize > MAX_BODY_SIZE) {
            throw new IllegalArgumentException("the body size must be within " + MessageBody.MIN_SIZE + ".."
                    + MAX_BODY_SIZE + " (the stamp, one body frame): " + bodySize);
        }
        LoopbackPeer peer = LoopbackPeer.start(LoopbackPeer.Mode.SINK, MessageBody.MIN_SIZE, 0);
        try {
            RoundTrip roundTrip = new RoundTrip(peer, RoundTripClient.open(clientName, peer.uri(), bodySize));
            peer.recordReceiptLatency(true);
            return roundTrip;
        } catch (Exception | Error e) {
            peer.close();
            throw e;
        }
    }

    /**
     * Publishes one message and waits until the peer has read all of it. Returns the number of messages the peer
     * has read (a value for JMH to consume).
     *
     * @throws IllegalStateException when the peer has not read the message within 10 s
     */
    long publishAndAwaitReceipt() {
        client.publish();
        long expected = ++published;
        long start = System.nanoTime();
        long received;
        while ((received = peer.publishesRead()) < expected) {
            // Parks at once, no spin: the kernel wakes the peer's thread on the core of the thread that wrote (the
            // caller), so a spinning caller held the peer off its core (~5 % of receipts took the whole spin, 100 us,
            // for both clients on 2 cores). The receipt is stamped by the peer; the caller's wake-up is not in it.
            if (System.nanoTime() - start < RECEIPT_TIMEOUT_NANOS) {
                LockSupport.parkNanos(PARK_NANOS);
            } else {
                throw new IllegalStateException("the peer read " + received + " of " + expected + " messages in "
                        + TimeUnit.NANOSECONDS.toSeconds(RECEIPT_TIMEOUT_NANOS) + " s");
            }
        }
        return received;
    }

    /** The receipt latencies (ns) recorded since the last call, in {@code recycle} (may be null) or a new histogram. */
    Histogram intervalLatency(Histogram recycle) {
        return peer.intervalReceiptLatency(recycle);
    }

    /** Closes the client, then the peer. */
    @Override
    public void close() throws Exception {
        try {
            client.close();
        } finally {
            peer.close();
        }
    }
}
