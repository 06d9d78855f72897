package io.warren.perf;

/**
 * One consumer's count of the deliveries it takes and what it does with each: count it or not, acknowledge it
 * alone or with multiple=true, stop at {@link RunOptions#consumerMessages()}. The same rules for every driver, so
 * the clients are measured doing the same work.
 *
 * <p>{@link #take} returns a bit set; read it with {@link #taken}, {@link #acks}, {@link #multiple} and
 * {@link #done}. Not thread-safe: called from the consumer's context only (one delivery at a time).
 */
final class ConsumerCount {

    /** The delivery is counted (absent: it came after the count was reached or the consumer was cancelled). */
    static final int TAKEN = 1;
    /** Acknowledge it (absent under auto-ack, and between multiple acks). */
    static final int ACK = 1 << 1;
    /** With {@link #ACK}: multiple=true, settling every delivery up to this one. */
    static final int MULTIPLE = 1 << 2;
    /** This was the last one wanted: the consumer is done and cancels. */
    static final int DONE = 1 << 3;

    private final long limit;
    private final boolean autoAck;
    private final int multiAckEvery;
    // the consumer's context only
    private long taken;

    ConsumerCount(RunOptions options) {
        this.limit = options.consumerMessages();
        this.autoAck = options.autoAck();
        this.multiAckEvery = options.multiAckEvery();
    }

    /** What to do with the next delivery; {@code cancelled}: the consumer was cancelled (then nothing). */
    int take(boolean cancelled) {
        if (cancelled || (limit > 0 && taken >= limit)) {
            return 0; // prefetched after the last one wanted: not counted, not acknowledged
        }
        taken++;
        int what = TAKEN;
        if (!autoAck) {
            if (multiAckEvery <= 0) {
                what |= ACK;
            } else if (taken % multiAckEvery == 0 || taken == limit) {
                what |= ACK | MULTIPLE;
            }
        }
        if (limit > 0 && taken == limit) {
            what |= DONE;
        }
        return what;
    }

    static boolean taken(int what) {
        return (what & TAKEN) != 0;
    }

    static boolean acks(int what) {
        return (what & ACK) != 0;
    }

    static boolean multiple(int what) {
        return (what & MULTIPLE) != 0;
    }

    static boolean done(int what) {
        return (what & DONE) != 0;
    }
}
