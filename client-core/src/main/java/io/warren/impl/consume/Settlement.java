package io.warren.impl.consume;

/**
 * A settlement (ack, nack, reject) on its way from another thread to the channel's event loop. A delivery is
 * its own settlement, so handing one over allocates nothing; {@link SettlementPath#settle(long, int)} makes
 * a {@link Tagged} one for {@code Channel.basicAck} and friends.
 */
abstract class Settlement {

    /**
     * The operation ({@link AckCoalescer#ACK} ... plus flags). Written by the settling thread before the
     * hand-off to the MPSC queue and read on the event loop after it: the queue orders the two.
     */
    int settleOp;

    abstract long settleTag();

    /** A settlement named only by its tag. */
    static final class Tagged extends Settlement {
        private final long tag;

        Tagged(long tag, int op) {
            this.tag = tag;
            this.settleOp = op;
        }

        @Override
        long settleTag() {
            return tag;
        }
    }
}
