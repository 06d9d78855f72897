package io.warren.bench.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.AMQContentHeader;
import com.rabbitmq.client.impl.AMQImpl;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.warren.codec.FrameDecoder;
import io.warren.codec.FrameReader;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicDeliver;
import io.warren.codec.method.BasicPublishEncoder;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The codec benchmarks compare like with like: Warren's codec paths read the same fields from the same bytes as
 * amqp-client's reader ({@link DeliveryDecodeBenchmark}), and write byte for byte what amqp-client writes
 * ({@link PublishEncodeBenchmark}).
 */
class CodecBenchmarkParityTest {

    @ParameterizedTest(name = "body {0} B")
    @ValueSource(ints = {16, 1024})
    void bothReadersSeeTheSameDeliveries(int bodySize) throws IOException {
        byte[] bytes = DeliveryDecodeBenchmark.deliveries(bodySize);
        ByteBuf in = Unpooled.wrappedBuffer(bytes);
        DataInputStream theirs = new DataInputStream(new ByteArrayInputStream(bytes));
        FrameReader reader = new FrameReader(FrameDecoder.DEFAULT_MAX_METHOD_FRAME_SIZE, true);
        reader.setFrameMax(131072);
        BasicDeliver deliver = new BasicDeliver();
        ContentHeader header = new ContentHeader();
        for (int i = 0; i < DeliveryDecodeBenchmark.DELIVERIES_PER_READ; i++) {
            AMQImpl.Basic.Deliver theirDeliver = (AMQImpl.Basic.Deliver)
                    AMQImpl.readMethodFrom(com.rabbitmq.client.impl.Frame.readFrom(theirs, () -> 131072)
                            .getInputStream());
            AMQContentHeader theirHeader =
                    AMQImpl.readContentHeaderFrom(com.rabbitmq.client.impl.Frame.readFrom(theirs, () -> 131072)
                            .getInputStream());
            byte[] theirBody = com.rabbitmq.client.impl.Frame.readFrom(theirs, () -> 131072)
                    .getPayload();

            assertEquals(FrameType.METHOD, read(reader, in));
            deliver.wrap(in, reader.payloadIndex());
            assertEquals(theirDeliver.getConsumerTag(), deliver.consumerTag().toString());
            assertEquals(theirDeliver.getDeliveryTag(), deliver.deliveryTag());
            assertEquals(theirDeliver.getRedelivered(), deliver.redelivered());
            assertEquals(theirDeliver.getExchange(), deliver.exchange().toString());
            assertEquals(theirDeliver.getRoutingKey(), deliver.routingKey().toString());

            assertEquals(FrameType.HEADER, read(reader, in));
            header.wrap(in, reader.payloadIndex());
            AMQP.BasicProperties theirProperties = (AMQP.BasicProperties) theirHeader;
            assertEquals(theirHeader.getBodySize(), header.bodySize());
            assertEquals(theirProperties.getContentType(), header.contentType().toString());
            assertEquals(theirProperties.getDeliveryMode().intValue(), header.deliveryMode());

            assertEquals(FrameType.BODY, read(reader, in));
            assertEquals(theirBody.length, reader.payloadSize());
            assertArrayEquals(theirBody, ByteBufUtil.getBytes(in, reader.payloadIndex(), reader.payloadSize()));
        }
        assertFalse(in.isReadable(), "both read the whole input");
        assertEquals(-1, theirs.read());
        in.release();
    }

    private static FrameType read(FrameReader reader, ByteBuf in) {
        if (!reader.read(in)) {
            throw new AssertionError("a whole frame was expected at " + in.readerIndex());
        }
        return reader.type();
    }

    @ParameterizedTest(name = "body {0} B")
    @ValueSource(ints = {16, 1024})
    void warrensFramesAreTheBytesAmqpClientWrites(int bodySize) throws IOException {
        byte[] body = new byte[bodySize];
        for (int i = 0; i < bodySize; i++) {
            body[i] = (byte) i;
        }
        ByteBuf ours = Unpooled.buffer();
        try {
            PublishEncodeBenchmark.writePublish(
                    ours,
                    new BasicPublishEncoder(),
                    PublishEncodeBenchmark.ourProperties(),
                    Unpooled.wrappedBuffer(body));
            ByteArrayOutputStream theirs = new ByteArrayOutputStream();
            PublishEncodeBenchmark.writeTheirs(
                    new DataOutputStream(theirs), PublishEncodeBenchmark.theirProperties(), body);
            assertArrayEquals(theirs.toByteArray(), ByteBufUtil.getBytes(ours));
        } finally {
            ours.release();
        }
    }
}
