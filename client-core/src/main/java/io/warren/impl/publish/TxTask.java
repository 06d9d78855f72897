package io.warren.impl.publish;

import io.netty.buffer.ByteBuf;
import io.warren.impl.channel.ChannelRpc;
import io.warren.impl.connection.OutboundPath;
import java.util.concurrent.CompletableFuture;

/**
 * tx.select, tx.commit or tx.rollback on its way from the caller's thread to the channel's RPC queue: its
 * {@link Publisher} lines it up with the channel's publishes, its {@link TxSequencer} hands it to the RPC queue and
 * keeps later publishes behind it until it is sent. Its request's future is answered on the event loop;
 * {@code result}, the caller's, completes after the sequencer's own bookkeeping.
 *
 * <p>Ownership: the request owns {@code frame} once it is handed to the channel's state; before that (the task
 * discarded by a loop that has ended) the sequencer releases it.
 */
final class TxTask implements OutboundPath.DiscardableTask {

    // written by the caller's thread before the task is queued, then event loop only
    final Publisher publisher;
    final TxSequencer sequencer;
    /** The method's key ({@code MethodIds.TX_*}). */
    final int method;

    final ByteBuf frame;
    final ChannelRpc.Request<Void> request;
    final CompletableFuture<Void> result;

    // event loop only
    /** Queued behind a caller's write, after a publish the loop deferred there (confirm mode). */
    boolean deferred;
    /** In the RPC queue, counted by the sequencer until it is sent or fails there. */
    boolean queued;
    /** Handed to the outbound path: its place on the wire is fixed. */
    boolean sent;
    /** A tx.commit sent and not yet answered: counted by the sequencer, which holds what follows it. */
    boolean committing;

    TxTask(
            Publisher publisher,
            TxSequencer sequencer,
            int method,
            ByteBuf frame,
            ChannelRpc.Request<Void> request,
            CompletableFuture<Void> result) {
        this.publisher = publisher;
        this.sequencer = sequencer;
        this.method = method;
        this.frame = frame;
        this.request = request;
        this.result = result;
        request.onSend(() -> sequencer.onSent(this));
        request.future().whenComplete((v, e) -> sequencer.onAnswered(this, e));
    }

    @Override
    public void run() {
        publisher.onTx(this);
    }

    /** The event loop is gone (the client was closed): nothing will run this task. Any thread. */
    @Override
    public void discard(Throwable cause) {
        sequencer.onDiscarded(this, cause);
    }
}
