package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.vertx.core.Vertx;
import io.vertx.core.internal.VertxInternal;
import io.warren.AmqpClient;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.QueueSpec;
import io.warren.vertx.VertxAmqp;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Warren on an event loop group the application owns: a Vert.x instance's. */
@ExtendWith(BrokerExtension.class)
class EventLoopGroupIT {

    @Test
    void runsOnAVertxEventLoopAndLeavesTheGroupRunning(Broker broker) throws Exception {
        Vertx vertx = Vertx.vertx();
        try {
            AmqpClient client = VertxAmqp.client(vertx);
            // the test reaches into Vert.x for the group only to hold its loops (below)
            EventLoopGroup group = ((VertxInternal) vertx).nettyEventLoopGroup();
            Connection c = await(client.connect(broker.uri()));
            Channel ch = await(c.openChannel());
            CompletableFuture<String> thread = new CompletableFuture<>();
            // Hold every loop of the group until the callback is attached: else declare-ok can complete the
            // future first, and the callback then runs on this thread when it is attached.
            CountDownLatch attached = new CountDownLatch(1);
            for (EventExecutor loop : group) {
                loop.execute(() -> {
                    try {
                        attached.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
            ch.queueDeclare(QueueSpec.serverNamed())
                    .whenComplete(
                            (ok, e) -> thread.complete(Thread.currentThread().getName()));
            attached.countDown();
            assertTrue(thread.get(30, TimeUnit.SECONDS).startsWith("vert.x-eventloop-thread"), thread.join());
            await(client.close());
            assertEquals(false, c.isOpen());
            assertEquals(false, group.isShuttingDown(), "the application's group is left running");
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
