package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.impl.LongStringHelper;
import io.netty.buffer.ByteBufUtil;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.GetResponse;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.table.LongString;
import io.warren.codec.table.Unsigned;
import io.warren.it.BrokerExtension.TestNames;
import java.math.BigDecimal;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A relay on Warren against the broker: a message taken from one queue and published to another with the
 * properties it came with reaches the second queue with the same content-header bytes, whoever wrote it (the
 * official Java client's long strings that are not UTF-8, Warren's unsigned values).
 */
@ExtendWith(BrokerExtension.class)
class RelayIT {

    /** A Latin-1 "été": not UTF-8. */
    private static final byte[] LATIN1 = {(byte) 0xE9, 't', (byte) 0xE9};

    /** Takes one message from {@code from}, publishes it to {@code to} as a relay does; returns its header bytes. */
    private static String relay(Channel ch, String from, String to) throws Exception {
        try (GetResponse got = await(ch.basicGet(from, true))) {
            String header = ByteBufUtil.hexDump(got.header().propertiesSlice());
            await(ch.publish("", to, false, got.properties(), got.body().retain()));
            return header;
        }
    }

    private static String take(Channel ch, String queue) throws Exception {
        try (GetResponse got = await(ch.basicGet(queue, true))) {
            return ByteBufUtil.hexDump(got.header().propertiesSlice());
        }
    }

    @Test
    void aMessageFromAnotherClientIsForwardedWithTheSameHeaderBytes(
            Broker broker, Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        await(ch.confirmSelect());
        String in = names.queue("in");
        String out = names.queue("out");
        await(ch.queueDeclare(in));
        await(ch.queueDeclare(out));
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("latin1", LongStringHelper.asLongString(LATIN1));
        headers.put("nested", Map.of("list", List.of(Map.of("deep", LongStringHelper.asLongString(LATIN1)), 7L)));
        headers.put("bytes", new byte[] {1, 2});
        headers.put("decimal", new BigDecimal("12.345"));
        headers.put("when", new Date(1_700_000_000_000L));
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .contentType("text/plain")
                .messageId("m-\u00e9")
                .headers(headers)
                .deliveryMode(2)
                .priority(3)
                .build();
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(broker.uri());
        try (com.rabbitmq.client.Connection c = f.newConnection();
                com.rabbitmq.client.Channel other = c.createChannel()) {
            other.confirmSelect();
            other.basicPublish("", in, props, "body".getBytes());
            other.waitForConfirmsOrDie(10_000);
        }
        String received = relay(ch, in, out);
        assertEquals(received, take(ch, out));
    }

    @Test
    void unsignedValuesAndLongStringsThatAreNotUtf8SurviveTheBrokerAndTheRelay(Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        await(ch.confirmSelect());
        String in = names.queue("in");
        String out = names.queue("out");
        await(ch.queueDeclare(in));
        await(ch.queueDeclare(out));
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("B", Unsigned.shortShortUint(200));
        headers.put("u", Unsigned.shortUint(65000));
        headers.put("i", Unsigned.longUint(0xF000_0000L));
        headers.put("latin1", LongString.of(LATIN1));
        BasicProperties sent = BasicProperties.builder().headers(headers).build();
        await(ch.publish("", in, false, sent, "body".getBytes()));
        try (GetResponse got = await(ch.basicGet(in, true))) {
            assertEquals(headers, got.properties().headers(), "the broker kept every type");
            assertEquals(sent, got.properties(), "the same bytes");
            await(ch.publish("", out, false, got.properties(), got.body().retain()));
        }
        assertEquals(ByteBufUtil.hexDump(sentBytes(sent)), take(ch, out));
    }

    private static byte[] sentBytes(BasicProperties properties) {
        io.netty.buffer.ByteBuf buf = io.netty.buffer.Unpooled.buffer(properties.encodedLength());
        properties.writeTo(buf);
        byte[] bytes = ByteBufUtil.getBytes(buf);
        buf.release();
        return bytes;
    }
}
