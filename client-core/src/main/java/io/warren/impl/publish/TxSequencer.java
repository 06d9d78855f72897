package io.warren.impl.publish;

import io.netty.buffer.ByteBuf;
import io.warren.RpcTimeoutException;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.ChannelRpc;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.connection.OutboundPath;
import io.warren.impl.connection.Requests;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Keeps one channel's tx.select, tx.commit and tx.rollback in call order with its publishes, so that a commit
 * covers exactly the publishes made before it.
 *
 * <p>A tx method travels as a {@link TxTask} through the outbound path's queue with the publishes; its
 * {@link Publisher} lines it up among them (behind a caller's write, behind held publishes) and hands it here when its
 * turn comes ({@link #queue}). From then until its frame is sent it waits in the channel's RPC queue, and so do the
 * publishes made after it ({@link #holdsPublishes}). When it is sent, or leaves that queue unsent, the publisher lets
 * them go.
 */
final class TxSequencer {

    private final Publisher publisher;
    private final ChannelState state;
    private final OutboundPath outbound;
    /** Told when tx.select is on the wire: from then on what is published belongs to transactions. */
    private final PublishCarryOver carryOver;

    private final int number;

    // event loop only
    /** tx methods in the channel's RPC queue and not sent yet: publishes wait for them (held). */
    private int queued;
    /** A tx method is being handed to the RPC queue by {@link #queue}, which goes on itself if it is sent at once. */
    private boolean queueing;
    /**
     * tx.commit sent and not answered: RabbitMQ closes the connection (504 CHANNEL_ERROR) over any command on the
     * channel while it commits, so publishes and settlements wait for commit-ok.
     */
    private int committing;

    /** Created by its publisher, with it. */
    TxSequencer(Publisher publisher, ChannelState state, PublishCarryOver carryOver) {
        this.publisher = publisher;
        this.state = state;
        this.outbound = state.outbound();
        this.carryOver = carryOver;
        this.number = state.number();
    }

    // ---- any thread --------------------------------------------------------------------------------------

    /** tx.select, in order with this channel's publishes. */
    CompletionStage<Void> select() {
        return call(MethodIds.TX_SELECT, MethodIds.TX_SELECT_OK, Requests.txSelect(state.alloc(), number));
    }

    /** tx.commit: commits the publishes made before it on this channel, and no later one. */
    CompletionStage<Void> commit() {
        return call(MethodIds.TX_COMMIT, MethodIds.TX_COMMIT_OK, Requests.txCommit(state.alloc(), number));
    }

    /** tx.rollback: rolls back the publishes made before it on this channel, and no later one. */
    CompletionStage<Void> rollback() {
        return call(MethodIds.TX_ROLLBACK, MethodIds.TX_ROLLBACK_OK, Requests.txRollback(state.alloc(), number));
    }

    /** Sends {@code frame} (ownership taken) the publisher's way, behind this thread's publishes. */
    private CompletionStage<Void> call(int requestKey, int replyKey, ByteBuf frame) {
        CompletableFuture<Void> result = new CompletableFuture<>();
        ChannelRpc.Request<Void> request = ChannelRpc.Request.of(
                requestKey, replyKey, -1, frame, (reply, f) -> f.complete(null), new CompletableFuture<>());
        outbound.execute(new TxTask(publisher, this, requestKey, frame, request, result));
        return result;
    }

    /** The event loop refused a tx method (the client's event loop group is shut down). Any thread. */
    void onDiscarded(TxTask tx, Throwable cause) {
        tx.frame.release(); // never handed to the channel's RPC queue
        tx.result.completeExceptionally(publisher.closedError(cause));
    }

    // ---- event loop --------------------------------------------------------------------------------------

    /** Whether publishes must wait: a tx method called before them waits for its turn in the RPC queue. */
    boolean holdsPublishes() {
        return queued > 0 || committing > 0;
    }

    /** Hands a tx method to the channel's RPC queue; publishes wait until it is sent ({@link #onSent}). */
    void queue(TxTask tx) {
        assert outbound.inEventLoop() : "tx state off the event loop";
        tx.queued = true;
        queued++;
        if (tx.method == MethodIds.TX_COMMIT) {
            // no caller writes a publish from now until commit-ok: not even between the commit's frame and the
            // bookkeeping after it (a caller checks `direct` under the writer token, which the loop holds to write)
            publisher.stopCallerWrites();
        }
        queueing = true;
        try {
            state.call(tx.request);
        } finally {
            queueing = false;
        }
        if (!tx.sent || tx.committing) {
            publisher.updateWritability(); // it waits for its turn, or its commit-ok: so does the next publish
        }
    }

    /**
     * A tx method held behind publishes when the channel closed: the closed channel's state fails it and releases its
     * frame, and its caller hears it through {@link #onAnswered}.
     */
    void failHeld(TxTask tx) {
        assert outbound.inEventLoop() : "tx state off the event loop";
        state.call(tx.request);
    }

    /** A tx method's frame went to the outbound path: what was published after it may follow. */
    void onSent(TxTask tx) {
        assert outbound.inEventLoop() : "tx state off the event loop";
        if (tx.method == MethodIds.TX_SELECT) {
            // the broker may act on it from now on: what follows is in a transaction, before select-ok comes
            carryOver.transactional();
        }
        tx.sent = true;
        tx.queued = false;
        queued--;
        if (tx.method == MethodIds.TX_COMMIT) {
            tx.committing = true;
            committing++;
            return; // what follows it waits for commit-ok (onAnswered)
        }
        if (!queueing) {
            // its turn came after a reply: the publishes held for it go now (queue's caller goes on by itself)
            publisher.onTxTurnOver();
        }
    }

    /** A tx method's request is answered, or failed (timed out, the channel closed): its caller is told. */
    void onAnswered(TxTask tx, Throwable error) {
        assert outbound.inEventLoop() : "tx state off the event loop";
        if (tx.sent && tx.method == MethodIds.TX_SELECT && error instanceof RpcTimeoutException timeout) {
            // the broker may have entered tx mode, where nothing published is routed until a commit nobody will make
            publisher.closeUnknown("tx.select", timeout);
        } else if (tx.committing && error instanceof RpcTimeoutException timeout) {
            // the broker may still be committing: anything but channel.close written now closes the connection (504)
            publisher.closeUnknown("tx.commit", timeout);
        }
        if (tx.queued) {
            // left the RPC queue unsent (timed out there, or the channel closed): what waited for it goes on
            tx.queued = false;
            queued--;
            if (!queueing) {
                publisher.onTxTurnOver();
            }
        } else if (tx.committing) {
            // commit-ok (or the commit failed, timed out, or the channel closed): what waited for it goes on
            tx.committing = false;
            committing--;
            if (!queueing) {
                publisher.onTxTurnOver();
            }
        }
        if (error == null) {
            tx.result.complete(null);
        } else {
            tx.result.completeExceptionally(error);
        }
    }
}
