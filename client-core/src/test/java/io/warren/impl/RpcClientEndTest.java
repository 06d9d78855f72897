package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.codec.method.BasicCancelEncoder;
import io.warren.codec.method.BasicConsumeOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.rpc.RpcClient;
import java.lang.ref.WeakReference;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/** An RpcClient whose reply consumer ended leaves nothing of itself on the channel, which stays the caller's. */
class RpcClientEndTest {

    /**
     * The broker cancelled the client's reply consumer (its queue is gone, a node went down) and the channel stayed
     * open: before, the client's return listener stayed on the channel, and the client and its calls map with it, for
     * the channel's life.
     */
    @Test
    void aClientWhoseReplyConsumerTheBrokerCancelledIsNotKeptByTheChannel() throws Exception {
        try (FakeBroker broker = new FakeBroker()) {
            Channel ch = broker.openChannel(broker.handshake(), 1);
            WeakReference<RpcClient> client = createThenCancelled(broker, ch);
            for (int i = 0; i < 100 && client.get() != null; i++) {
                System.gc();
                Thread.sleep(10);
            }
            assertNull(client.get(), "the channel keeps no reference to the ended client");
            assertTrue(ch.isOpen());
        }
    }

    /** A client on {@code ch} whose reply consumer the broker then cancelled; only a weak reference to it is left. */
    private static WeakReference<RpcClient> createThenCancelled(FakeBroker broker, Channel ch) {
        CompletionStage<RpcClient> created = RpcClient.create(ch);
        broker.expectAndRelease(1, MethodIds.BASIC_CONSUME);
        broker.send(1, new BasicConsumeOkEncoder().consumerTag("replies"));
        RpcClient client = created.toCompletableFuture().join();
        broker.send(1, new BasicCancelEncoder().consumerTag("replies").nowait(true));
        broker.client.runPendingTasks();
        return new WeakReference<>(client);
    }
}
