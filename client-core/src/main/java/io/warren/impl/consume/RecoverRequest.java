package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.warren.codec.Frame;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.ChannelRpc;
import java.util.concurrent.CompletableFuture;

/**
 * basic.recover as a channel request. RabbitMQ requeues every delivery of the channel still unsettled when it reads
 * the method, forgets their tags, answers recover-ok and delivers them again with new tags: the channel's consumers
 * are told when the frame is written ({@link ChannelConsumers#recoverSent}), which is when settlements of those
 * deliveries must stop, and when recover-ok comes, also after a timeout ({@link ChannelConsumers#recoverOk}). Event
 * loop only.
 */
public final class RecoverRequest {

    private final ConsumerHost host;
    /** The channel's consumers when the frame was written: recover-ok comes on the same channel state. */
    private ChannelConsumers sentOn;

    private RecoverRequest(ConsumerHost host) {
        this.host = host;
    }

    /** The request for {@code frame} (taken: the request owns it), completing {@code future} at recover-ok. */
    public static ChannelRpc.Request<Void> of(ConsumerHost host, ByteBuf frame, CompletableFuture<Void> future) {
        RecoverRequest r = new RecoverRequest(host);
        return ChannelRpc.Request.of(MethodIds.BASIC_RECOVER, MethodIds.BASIC_RECOVER_OK, -1, frame, r::onReply, future)
                .onLateReply(r::onLateReply)
                .beforeSend(r::sent);
    }

    private void sent() {
        // a request is written only on the channel state it was queued on, which is the current one: a lost state
        // fails what it queued, and recovery replaces the host's consumers only with the state
        sentOn = host.currentConsumers();
        sentOn.recoverSent();
    }

    private void onReply(Frame reply, CompletableFuture<Void> future) {
        sentOn.recoverOk();
        future.complete(null);
    }

    /** After a timeout the broker requeued all the same: what it delivers from now on is new. */
    private void onLateReply(Frame reply, CompletableFuture<Void> future) {
        sentOn.recoverOk();
    }
}
