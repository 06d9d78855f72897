package io.warren.impl.publish;

/**
 * The order of one channel's tx.select, tx.commit and tx.rollback with its publishes.
 */
final class TxSequencer {

    // event loop only
    /** tx methods in the channel's RPC queue and not sent yet: publishes wait for them (held). */
    int queued;
    /** A tx method is being handed to the RPC queue, whose caller goes on itself if it is sent at once. */
    boolean queueing;

    /** Whether publishes must wait: a tx method called before them waits for its turn in the RPC queue. */
    boolean holdsPublishes() {
        return queued > 0;
    }
}
