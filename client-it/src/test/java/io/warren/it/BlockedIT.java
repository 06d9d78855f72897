package io.warren.it;

import static io.warren.it.RecoveryIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.BlockedListener;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * connection.blocked end to end: a memory alarm ({@code rabbitmqctl set_vm_memory_high_watermark 0.00001}) makes
 * RabbitMQ block publishing connections; the listener and {@link Connection#isBlocked()} say so, and closing a
 * blocked connection still completes (bounded by the close timeout: a blocked broker may not answer close).
 * The watermark is always restored.
 */
@ExtendWith(BrokerExtension.class)
class BlockedIT {

    @Test
    void aMemoryAlarmBlocksPublishersAndABlockedConnectionStillCloses(Broker broker) throws Exception {
        Connection c = await(BrokerExtension.client()
                .connect(ConnectionOptions.fromUri(broker.uri())
                        .connectionName("blocked-it")
                        .closeTimeout(Duration.ofSeconds(3))));
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        c.addBlockedListener(new BlockedListener() {
            @Override
            public void blocked(String reason) {
                events.add("blocked: " + reason);
            }

            @Override
            public void unblocked() {
                events.add("unblocked");
            }
        });
        Channel ch = await(c.openChannel());
        String q = await(ch.queueDeclare(QueueSpec.serverNamed())).queue();
        // RabbitMQ blocks a connection when it publishes during an alarm: one publish before, so it is a publisher
        assertEquals(
                PublishOutcome.SENT, await(ch.publish("", q, false, null, "before".getBytes(StandardCharsets.UTF_8))));
        try {
            Rabbitmqctl.setVmMemoryHighWatermark("0.00001");
            CompletionStage<PublishOutcome> during =
                    ch.publish("", q, false, null, "during".getBytes(StandardCharsets.UTF_8));
            String first = events.poll(30, TimeUnit.SECONDS);
            assertTrue(first != null && first.startsWith("blocked"), "blocked listener told: " + first);
            assertTrue(c.isBlocked());
            assertFalse(
                    during.toCompletableFuture().isDone()
                            && during.toCompletableFuture().isCompletedExceptionally(),
                    "a publish while blocked is held (policy HOLD), not failed");
            // A blocked connection may never get close-ok from RabbitMQ: the close ends by the 3 s close
            // timeout. await bounds the wait (30 s); the assertion is that the close completed, as ours.
            await(c.close());
            assertFalse(c.isOpen());
            ConnectionClosedException reason = await(c.closeFuture());
            assertFalse(reason.initiatedByBroker(), reason.toString());
            assertTrue(reason.getMessage().contains("closed by the application"), reason.getMessage());
        } finally {
            Rabbitmqctl.setVmMemoryHighWatermark("0.4");
        }
    }
}
