package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.PublishOutcome;
import io.warren.QueueSpec;
import io.warren.codec.content.BasicProperties;
import io.warren.it.BrokerExtension.TestNames;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** mandatory + basic.return against the broker, with and without confirms. */
@ExtendWith(BrokerExtension.class)
class ReturnIT {

    @Test
    void anUnroutableMandatoryPublishIsReturnedAndItsOutcomeSaysSo(Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        List<String> returned = new CopyOnWriteArrayList<>();
        ch.addReturnListener(
                m -> returned.add(m.replyCode() + " " + m.replyText() + " " + m.exchange() + " " + m.routingKey() + " "
                        + m.properties().messageId() + " " + m.body().toString(StandardCharsets.UTF_8)));
        await(ch.confirmSelect());
        String key = names.queue("nobody-binds-this");
        PublishOutcome outcome = await(ch.publish(
                "amq.direct",
                key,
                true,
                BasicProperties.builder().messageId("id-1").build(),
                "lost".getBytes()));
        assertTrue(outcome.isReturned(), outcome.toString());
        assertEquals(312, outcome.replyCode());
        assertEquals("NO_ROUTE", outcome.replyText());
        assertEquals(List.of("312 NO_ROUTE amq.direct " + key + " id-1 lost"), returned);
    }

    /**
     * Routable mandatory publishes to a quorum queue (confirmed only after the Raft commit, so late) interleaved
     * with unroutable ones: each return goes to its own publish, never to an older routable one still waiting
     * for its confirm, which a FIFO of outstanding mandatory publishes would pick. RabbitMQ's late quorum confirms
     * share a flush with a return's own ack often enough that matching by order alone failed here about one run in
     * seven with 200 publishes; the sequence-number header makes it exact.
     */
    @Test
    void returnsGoToTheirOwnPublishAmongLateConfirms(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("quorum");
        await(ch.queueDeclare(QueueSpec.named(q).durable(true).argument("x-queue-type", "quorum")));
        names.onCleanup(() -> await(connection.openChannel().thenCompose(c -> c.queueDelete(q))));
        await(ch.confirmSelect());
        BasicProperties persistent = BasicProperties.builder().deliveryMode(2).build();
        List<CompletionStage<PublishOutcome>> routed = new ArrayList<>();
        List<CompletionStage<PublishOutcome>> unroutable = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            routed.add(ch.publish("", q, true, persistent, new byte[100]));
            if (i % 3 == 0) {
                unroutable.add(ch.publish("", names.queue("missing"), true, persistent, new byte[10]));
            }
        }
        for (CompletionStage<PublishOutcome> s : routed) {
            assertSame(PublishOutcome.CONFIRMED, await(s));
        }
        for (CompletionStage<PublishOutcome> s : unroutable) {
            assertTrue(await(s).isReturned());
        }
    }

    @Test
    void withoutConfirmsTheReturnGoesToTheListener(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        CompletionStage<String> seen = new java.util.concurrent.CompletableFuture<>();
        ch.addReturnListener(m -> seen.toCompletableFuture().complete(m.body().toString(StandardCharsets.UTF_8)));
        assertSame(PublishOutcome.SENT, await(ch.publish("", names.queue("none"), true, null, "back".getBytes())));
        assertEquals("back", await(seen));
    }
}
