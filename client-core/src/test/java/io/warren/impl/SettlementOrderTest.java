package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A thread's settlement goes before a synchronous method or channel.close the same thread calls afterwards, even
 * when another thread's settlement took the queue from idle and has not handed its drain to the event loop yet: the
 * settlement then rides on that drain, which may reach the loop after the close. On a real event loop, against a
 * peer that counts the acks it reads.
 */
class SettlementOrderTest {

    /** A peer that sends one delivery once the consumer starts, and counts acks. */
    private static final class Peer extends SocketPeer {
        Peer() throws IOException {
            super(0, false, "settlement-order-peer");
            deliveries(1, 1);
            start();
        }

        @Override
        protected boolean publish(int channel, Stream st) {
            return true;
        }
    }

    @Test
    void anAckWhoseDrainAnotherThreadHasStillToHandOverGoesBeforeTheChannelClose() throws Exception {
        AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(1));
        try (Peer peer = new Peer()) {
            Connection connection = client.connect(new ConnectionOptions().address("127.0.0.1", peer.port()))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            Channel channel = connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS);
            CompletableFuture<Delivery> delivered = new CompletableFuture<>();
            channel.consume("q", new ConsumeOptions().prefetch(1), d -> delivered.complete(d.retain()))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            Delivery d = delivered.get(10, TimeUnit.SECONDS);

            // another thread's settlement has taken the queue from idle and not yet handed its drain over (the
            // window between its compare-and-set and its execute, held open here)
            drainScheduled(channel).setInt(((ChannelImpl) channel).consumers(), 1);
            d.ack(); // this thread (not the event loop): queued, and left to that drain
            d.release();
            channel.close().toCompletableFuture().get(10, TimeUnit.SECONDS);

            // close-ok came back: the peer read everything written before channel.close
            assertEquals(1, peer.acksRead.get(), "the ack went before channel.close; errors " + peer.errors);
        } finally {
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * The settlement path's "a drain is handed over" flag, set through reflection: the window it stands for cannot
     * be held open otherwise. Returns a field setter on the channel's consumers.
     */
    private static FieldOn drainScheduled(Channel channel) throws ReflectiveOperationException {
        Field settlements = io.warren.impl.consume.ChannelConsumers.class.getDeclaredField("settlements");
        settlements.setAccessible(true);
        Field flag = settlements.getType().getDeclaredField("drainScheduled");
        flag.setAccessible(true);
        return new FieldOn(settlements, flag);
    }

    private record FieldOn(Field owner, Field field) {
        void setInt(Object consumers, int value) throws IllegalAccessException {
            field.setInt(owner.get(consumers), value);
        }
    }
}
