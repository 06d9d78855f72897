package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.DeclaredQueue;
import io.warren.GetResponse;
import io.warren.it.BrokerExtension.TestNames;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * basic.get against the broker. Messages are published with the official Java client (Warren's publishing
 * is another issue), so what Warren reads is checked against an independent writer.
 */
@ExtendWith(BrokerExtension.class)
class BasicGetIT {

    private static void publish(Broker broker, String queue, AMQP.BasicProperties props, byte[]... bodies)
            throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(broker.uri());
        try (com.rabbitmq.client.Connection c = f.newConnection();
                com.rabbitmq.client.Channel ch = c.createChannel()) {
            ch.confirmSelect();
            for (byte[] body : bodies) {
                ch.basicPublish("", queue, props, body);
            }
            ch.waitForConfirmsOrDie(10_000);
        }
    }

    @Test
    void getsMessagesWithPropertiesAndBodiesSpanningFrames(Broker broker, Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        byte[] big = new byte[300_000]; // over frame-max (131072): three body frames
        new Random(42).nextBytes(big);
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .contentType("application/octet-stream")
                .messageId("m-1")
                .headers(Map.of("h", "v"))
                .deliveryMode(2)
                .build();
        publish(broker, q, props, "small".getBytes(), big);
        assertEquals(2, await(ch.queueDeclare(io.warren.QueueSpec.passive(q))).messageCount());

        try (GetResponse first = await(ch.basicGet(q, false))) {
            assertEquals("small", first.body().toString(java.nio.charset.StandardCharsets.UTF_8));
            assertEquals(1, first.messageCount());
            assertEquals("", first.exchange());
            assertEquals(q, first.routingKey());
            assertFalse(first.redelivered());
            assertEquals("m-1", first.properties().messageId());
            assertEquals(2, first.properties().deliveryMode());
            assertEquals("v", String.valueOf(first.properties().headers().get("h")));
            ch.basicAck(first.deliveryTag(), false);
        }
        GetResponse second = await(ch.basicGet(q, true));
        try {
            assertInstanceOf(CompositeByteBuf.class, second.body(), "a body in several frames is a composite");
            assertArrayEquals(big, ByteBufUtil.getBytes(second.body()));
            assertEquals(0, second.messageCount());
        } finally {
            second.release();
        }
        assertNull(await(ch.basicGet(q, true)), "basic.get-empty");
        DeclaredQueue after = await(ch.queueDeclare(io.warren.QueueSpec.passive(q)));
        assertEquals(0, after.messageCount());
        await(ch.queueDelete(q));
    }

    @Test
    void rejectedAndRecoveredMessagesComeBackRedelivered(Broker broker, Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        publish(broker, q, new AMQP.BasicProperties(), "a".getBytes(), "b".getBytes());
        GetResponse a = await(ch.basicGet(q, false));
        ch.basicReject(a.deliveryTag(), true);
        a.release();
        GetResponse again = await(ch.basicGet(q, false));
        assertTrue(again.redelivered());
        ch.basicNack(again.deliveryTag(), false, true);
        again.release();
        GetResponse b = await(ch.basicGet(q, false));
        b.release();
        // one message is still unacknowledged on this channel: recover requeues it
        await(ch.basicRecover(true));
        long purged = await(ch.queuePurge(q));
        assertTrue(purged >= 1 && purged <= 2, "purged " + purged);
        await(ch.queueDelete(q));
    }
}
