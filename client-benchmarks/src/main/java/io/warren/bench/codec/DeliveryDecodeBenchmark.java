package io.warren.bench.codec;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.AMQContentHeader;
import com.rabbitmq.client.impl.AMQImpl;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.FrameReader;
import io.warren.codec.PublishFraming;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicDeliver;
import io.warren.codec.method.BasicDeliverEncoder;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Decoding deliveries (basic.deliver + content header + one body frame each) from bytes to the fields an
 * application reads, Warren against amqp-client: same bytes, same fields. One operation is one delivery.
 *
 * <p>The input is {@value #DELIVERIES_PER_READ} deliveries back to back, the way a socket read under load
 * returns many frames at once; an invocation decodes {@value #READS} such reads.
 * <ul>
 *   <li>{@code warrenReader}: the codec's own reading on the benchmark thread, as amqp-client's is measured:
 *       {@link FrameReader} checks each frame in place (header, limits, end byte, and validates method and header
 *       payloads), then the same {@link BasicDeliver} and {@link ContentHeader} views read the same fields. This
 *       is {@link FrameDecoder}'s parsing without the Netty side: no pipeline, and no reference taken on the
 *       frames (amqp-client's reader copies each payload into a {@code byte[]} instead).</li>
 *   <li>{@code warren}: the same through Netty, as the client runs it: on a Netty event loop (see {@link CodecBenchmarkLoop}), each read is a pooled
 *       buffer fired through a pipeline: {@link FrameDecoder} (which validates every method and header),
 *       then a handler that wraps {@link BasicDeliver} and {@link ContentHeader} views and reads consumer
 *       tag, delivery tag, redelivered, exchange, routing key, body size, content type and delivery mode
 *       and takes the body, then releases the frames.</li>
 *   <li>{@code amqpClient}: amqp-client's reading path on the benchmark thread (its reader is a plain
 *       thread too): {@code Frame.readFrom} over a {@code DataInputStream}, {@code AMQImpl.readMethodFrom}
 *       and {@code readContentHeaderFrom} on the frames' payloads, the same getters, the body's
 *       {@code byte[]}.</li>
 * </ul>
 *
 * <p>Run with {@code -prof gc}: {@code gc.alloc.rate.norm} is bytes allocated per delivery (all threads).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Dio.netty.leakDetection.level=disabled", "-Xmx1g"})
public class DeliveryDecodeBenchmark {

    static final int DELIVERIES_PER_READ = 10;
    static final int READS = 100;
    static final int OPERATIONS = DELIVERIES_PER_READ * READS;

    @Param({"16", "1024"})
    public int bodySize;

    // Warren: everything below is touched on the event loop only
    private CodecBenchmarkLoop loop;
    private ByteBuf wire;
    private EmbeddedChannel channel;
    private ChannelPipeline pipeline;
    private DeliverySink sink;
    private Runnable warrenReads;

    // Warren's reader: benchmark thread only
    private ByteBuf readerWire;
    private FrameReader reader;
    private final BasicDeliver readerDeliver = new BasicDeliver();
    private final ContentHeader readerHeader = new ContentHeader();

    // amqp-client
    private ByteArrayInputStream bytesIn;
    private DataInputStream dataIn;
    private final IntSupplier maxPayload = () -> 131072;

    @Setup(Level.Trial)
    public void setUp() {
        PooledByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
        byte[] bytes = deliveries(bodySize);

        loop = new CodecBenchmarkLoop();
        loop.run(() -> {
            wire = alloc.directBuffer(bytes.length).writeBytes(bytes);
            sink = new DeliverySink();
            FrameDecoder decoder = new FrameDecoder();
            decoder.setFrameMax(131072);
            channel = new EmbeddedChannel(decoder, sink);
            pipeline = channel.pipeline();
        });
        warrenReads = () -> {
            for (int i = 0; i < READS; i++) {
                // a pooled duplicate per read, like the pooled buffer a socket read hands the pipeline
                pipeline.fireChannelRead(wire.retainedDuplicate());
                pipeline.fireChannelReadComplete();
            }
        };

        readerWire = alloc.directBuffer(bytes.length).writeBytes(bytes);
        reader = new FrameReader(FrameDecoder.DEFAULT_MAX_METHOD_FRAME_SIZE, true);
        reader.setFrameMax(131072);

        bytesIn = new ByteArrayInputStream(bytes);
        dataIn = new DataInputStream(bytesIn);
    }

    /** The input: {@value #DELIVERIES_PER_READ} deliveries (method, header and one body frame each) back to back. */
    static byte[] deliveries(int bodySize) {
        PooledByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
        BasicProperties props = BasicProperties.builder()
                .contentType("application/octet-stream")
                .deliveryMode(BasicProperties.PERSISTENT)
                .timestamp(Instant.ofEpochSecond(1_700_000_000L))
                .build();
        BasicDeliverEncoder deliver = new BasicDeliverEncoder()
                .consumerTag("amq.ctag-bench-consumer-1")
                .exchange("bench.exchange")
                .routingKey("bench.routing.key");
        ByteArrayOutputStream stream = new ByteArrayOutputStream();
        for (int i = 0; i < DELIVERIES_PER_READ; i++) {
            deliver.deliveryTag(1_000_000 + i);
            ByteBuf framed = PublishFraming.frame(
                    alloc, 1, 131072, deliver, props, alloc.buffer(bodySize).writeZero(bodySize));
            stream.writeBytes(ByteBufUtil.getBytes(framed));
            framed.release();
        }
        return stream.toByteArray();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        loop.run(() -> {
            channel.finishAndReleaseAll();
            wire.release();
        });
        loop.close();
        readerWire.release();
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void warren(Blackhole bh) {
        sink.bh = bh;
        loop.run(warrenReads);
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void warrenReader(Blackhole bh) {
        ByteBuf in = readerWire;
        FrameReader r = reader;
        for (int i = 0; i < READS; i++) {
            in.readerIndex(0);
            while (r.read(in)) {
                FrameType type = r.type();
                if (type == FrameType.METHOD) {
                    readFields(bh, readerDeliver.wrap(in, r.payloadIndex()));
                } else if (type == FrameType.HEADER) {
                    readFields(bh, readerHeader.wrap(in, r.payloadIndex()));
                } else {
                    bh.consume(r.payloadSize());
                }
            }
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void amqpClient(Blackhole bh) throws IOException {
        for (int r = 0; r < READS; r++) {
            bytesIn.reset();
            for (int i = 0; i < DELIVERIES_PER_READ; i++) {
                readDelivery(bh);
            }
        }
    }

    private void readDelivery(Blackhole bh) throws IOException {
        com.rabbitmq.client.impl.Frame methodFrame = com.rabbitmq.client.impl.Frame.readFrom(dataIn, maxPayload);
        AMQImpl.Basic.Deliver deliver = (AMQImpl.Basic.Deliver) AMQImpl.readMethodFrom(methodFrame.getInputStream());
        bh.consume(deliver.getConsumerTag());
        bh.consume(deliver.getDeliveryTag());
        bh.consume(deliver.getRedelivered());
        bh.consume(deliver.getExchange());
        bh.consume(deliver.getRoutingKey());
        com.rabbitmq.client.impl.Frame headerFrame = com.rabbitmq.client.impl.Frame.readFrom(dataIn, maxPayload);
        AMQContentHeader header = AMQImpl.readContentHeaderFrom(headerFrame.getInputStream());
        AMQP.BasicProperties props = (AMQP.BasicProperties) header;
        bh.consume(header.getBodySize());
        bh.consume(props.getContentType());
        bh.consume(props.getDeliveryMode());
        com.rabbitmq.client.impl.Frame bodyFrame = com.rabbitmq.client.impl.Frame.readFrom(dataIn, maxPayload);
        bh.consume(bodyFrame.getPayload());
    }

    /** What an application reads of basic.deliver: the fields amqp-client's side reads too. */
    static void readFields(Blackhole bh, BasicDeliver deliver) {
        bh.consume(deliver.consumerTag());
        bh.consume(deliver.deliveryTag());
        bh.consume(deliver.redelivered());
        bh.consume(deliver.exchange());
        bh.consume(deliver.routingKey());
    }

    /** What an application reads of the content header. */
    static void readFields(Blackhole bh, ContentHeader header) {
        bh.consume(header.bodySize());
        bh.consume(header.contentType());
        bh.consume(header.deliveryMode());
    }

    /** The handler after the decoder: reads what an application reads, then releases the frames. */
    static final class DeliverySink extends ChannelInboundHandlerAdapter {

        Blackhole bh;
        private final BasicDeliver deliver = new BasicDeliver();
        private final ContentHeader header = new ContentHeader();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Frame frame = (Frame) msg;
            try {
                ByteBuf payload = frame.payload();
                FrameType type = frame.type();
                if (type == FrameType.METHOD) {
                    readFields(bh, deliver.wrap(payload, payload.readerIndex()));
                } else if (type == FrameType.HEADER) {
                    readFields(bh, header.wrap(payload, payload.readerIndex()));
                } else {
                    bh.consume(payload);
                }
            } finally {
                frame.release();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            throw new IllegalStateException("the benchmark input must decode", cause);
        }
    }
}
