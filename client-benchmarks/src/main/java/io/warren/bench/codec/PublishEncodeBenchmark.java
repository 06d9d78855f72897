package io.warren.bench.codec;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.AMQImpl;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.Frames;
import io.warren.codec.PublishFraming;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import io.warren.codec.method.BasicPublishEncoder;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
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
 * Framing publishes (basic.publish + content header + body) for the wire, Warren against amqp-client:
 * same exchange, routing key, properties and body. One operation is one publish; an invocation does
 * {@value #OPERATIONS}.
 *
 * <ul>
 *   <li>{@code warrenFrames}: the codec's own writing on the benchmark thread, as amqp-client's is measured:
 *       {@link Frames#writeMethod}, {@link Frames#writeContentHeader} and {@link Frames#writeHeader} (what the
 *       client's publisher writes into its reused head buffer), with exchange and routing key given as
 *       {@code String}s as an application gives them, then the body bytes and the end byte, all into one reused
 *       output buffer: the whole publish, byte for byte what amqp-client writes to its stream. (The client itself
 *       never copies the body: it writes the caller's buffer after the head.)</li>
 *   <li>{@code warrenHead}: the same without the body and its end byte, which the client writes as the caller's
 *       buffer and a shared end octet.</li>
 *   <li>{@code warren}: on a Netty event loop (see {@link CodecBenchmarkLoop}),
 *       {@link PublishFraming#publish} with one reused encoder holding {@link ShortString} exchange and
 *       routing key and reused {@link BasicProperties}: one pooled head buffer, the body as a retained
 *       slice in a composite, never copied. The result is what goes to {@code channel.write}; the
 *       benchmark releases it as the transport does once written.</li>
 *   <li>{@code warrenCopied}: the same, then copied into a reused output buffer, for the cost when the
 *       bytes are moved once (as the socket write does).</li>
 *   <li>{@code warrenWrite}: {@link PublishFraming#write}, the allocation-free variant: the same frames
 *       written to a channel as consecutive messages (no composite), through a pipeline whose transport
 *       discards and releases what it is given.</li>
 *   <li>{@code amqpClient}: what amqp-client's {@code AMQCommand.transmit} does for a publish: a new
 *       {@code Basic.Publish}, {@code toFrame} for method and header, {@code Frame.fromBodyFragment} for
 *       the body, each written with {@code Frame.writeTo} to a reused {@code DataOutputStream} (its socket
 *       writer is a buffered stream).</li>
 * </ul>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Dio.netty.leakDetection.level=disabled", "-Xmx1g"})
public class PublishEncodeBenchmark {

    static final int OPERATIONS = 1000;
    private static final int FRAME_MAX = 131072;
    private static final String EXCHANGE = "bench.exchange";
    private static final String ROUTING_KEY = "bench.routing.key";

    @Param({"16", "1024"})
    public int bodySize;

    // Warren: event loop only once set up
    private CodecBenchmarkLoop loop;
    private ByteBufAllocator alloc;
    private BasicPublishEncoder publish;
    private BasicProperties properties;
    private ByteBuf body;
    private ByteBuf out;
    private Blackhole bh;
    private Runnable warrenBatch;
    private Runnable warrenCopiedBatch;
    private Runnable warrenWriteBatch;
    private EmbeddedChannel channel;

    // Warren's own writing: benchmark thread only
    private BasicPublishEncoder framesPublish;
    private ByteBuf framesOut;
    private ByteBuf framesBody;

    // amqp-client
    private AMQP.BasicProperties theirProperties;
    private byte[] bodyBytes;
    private ByteArrayOutputStream bytesOut;
    private DataOutputStream dataOut;

    @Setup(Level.Trial)
    public void setUp() {
        alloc = PooledByteBufAllocator.DEFAULT;
        publish = new BasicPublishEncoder().exchange(ShortString.of(EXCHANGE)).routingKey(ShortString.of(ROUTING_KEY));
        properties = ourProperties();
        loop = new CodecBenchmarkLoop();
        loop.run(() -> {
            body = alloc.directBuffer(bodySize).writeZero(bodySize);
            out = alloc.directBuffer(bodySize + 256);
            channel = new EmbeddedChannel(new DiscardingTransport());
        });
        warrenBatch = () -> {
            for (int i = 0; i < OPERATIONS; i++) {
                // the publisher hands the framing a reference to its body (a pooled duplicate)
                ByteBuf framed =
                        PublishFraming.publish(alloc, 1, FRAME_MAX, publish, properties, body.retainedDuplicate());
                bh.consume(framed.readableBytes());
                bh.consume(framed.getByte(framed.writerIndex() - 1));
                framed.release();
            }
        };
        warrenCopiedBatch = () -> {
            for (int i = 0; i < OPERATIONS; i++) {
                ByteBuf framed =
                        PublishFraming.publish(alloc, 1, FRAME_MAX, publish, properties, body.retainedDuplicate());
                out.clear();
                out.writeBytes(framed);
                framed.release();
                bh.consume(out.readableBytes());
            }
        };
        warrenWriteBatch = () -> {
            for (int i = 0; i < OPERATIONS; i++) {
                PublishFraming.write(
                        channel,
                        alloc,
                        1,
                        FRAME_MAX,
                        publish,
                        properties,
                        body.retainedDuplicate(),
                        channel.voidPromise());
            }
            channel.flush();
        };

        framesPublish = new BasicPublishEncoder();
        framesOut = alloc.directBuffer(bodySize + 256);
        framesBody = alloc.directBuffer(bodySize).writeZero(bodySize);

        theirProperties = theirProperties();
        bodyBytes = new byte[bodySize];
        bytesOut = new ByteArrayOutputStream(bodySize + 256);
        dataOut = new DataOutputStream(bytesOut);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        loop.run(() -> {
            body.release();
            out.release();
            channel.finishAndReleaseAll();
        });
        loop.close();
        framesOut.release();
        framesBody.release();
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void warren(Blackhole bh) {
        this.bh = bh;
        loop.run(warrenBatch);
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void warrenCopied(Blackhole bh) {
        this.bh = bh;
        loop.run(warrenCopiedBatch);
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void warrenWrite(Blackhole bh) {
        loop.run(warrenWriteBatch);
        bh.consume(transport().bytes);
    }

    private DiscardingTransport transport() {
        return (DiscardingTransport) channel.pipeline().first();
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void warrenFrames(Blackhole bh) {
        ByteBuf o = framesOut;
        ByteBuf b = framesBody;
        for (int i = 0; i < OPERATIONS; i++) {
            o.clear();
            writePublish(o, framesPublish, properties, b);
            bh.consume(o.writerIndex());
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void warrenHead(Blackhole bh) {
        ByteBuf o = framesOut;
        for (int i = 0; i < OPERATIONS; i++) {
            o.clear();
            writeHead(o, framesPublish, properties, bodySize);
            bh.consume(o.writerIndex());
        }
    }

    /** The properties every Warren variant publishes with. */
    static BasicProperties ourProperties() {
        return BasicProperties.builder()
                .contentType("application/octet-stream")
                .deliveryMode(BasicProperties.PERSISTENT)
                .build();
    }

    /** The same properties as amqp-client's. */
    static AMQP.BasicProperties theirProperties() {
        return new AMQP.BasicProperties.Builder()
                .contentType("application/octet-stream")
                .deliveryMode(2)
                .build();
    }

    /**
     * Method frame, content-header frame and the body frame's header of a publish to {@value #EXCHANGE} with key
     * {@value #ROUTING_KEY} on channel 1, as the client's publisher frames a message.
     */
    static void writeHead(ByteBuf out, BasicPublishEncoder encoder, BasicProperties properties, int bodySize) {
        BasicPublishEncoder method =
                encoder.exchange(EXCHANGE).routingKey(ROUTING_KEY).mandatory(false);
        Frames.writeMethod(out, 1, method);
        Frames.writeContentHeader(out, 1, bodySize, properties);
        Frames.writeHeader(out, FrameType.BODY, 1, bodySize);
    }

    /** The whole publish, the body copied in: {@code warrenFrames}'s operation (the body's indices are not moved). */
    static void writePublish(ByteBuf out, BasicPublishEncoder encoder, BasicProperties properties, ByteBuf body) {
        writeHead(out, encoder, properties, body.readableBytes());
        out.writeBytes(body, body.readerIndex(), body.readableBytes());
        out.writeByte(Frames.FRAME_END);
    }

    /** The same publish as amqp-client writes it: {@code amqpClient}'s operation. */
    static void writeTheirs(DataOutputStream out, AMQP.BasicProperties properties, byte[] body) throws IOException {
        AMQImpl.Basic.Publish method = new AMQImpl.Basic.Publish(0, EXCHANGE, ROUTING_KEY, false, false);
        method.toFrame(1).writeTo(out);
        properties.toFrame(1, body.length).writeTo(out);
        com.rabbitmq.client.impl.Frame.fromBodyFragment(1, ByteBuffer.wrap(body), 0, body.length)
                .writeTo(out);
    }

    @Benchmark
    @OperationsPerInvocation(OPERATIONS)
    public void amqpClient(Blackhole bh) throws IOException {
        for (int i = 0; i < OPERATIONS; i++) {
            bytesOut.reset();
            writeTheirs(dataOut, theirProperties, bodyBytes);
            bh.consume(bytesOut.size());
        }
    }

    /** The end of the pipeline: counts and releases what it is given, as a socket write would once done. */
    static final class DiscardingTransport extends ChannelOutboundHandlerAdapter {

        long bytes;

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            ByteBuf buf = (ByteBuf) msg;
            bytes += buf.readableBytes();
            buf.release();
            promise.trySuccess();
        }

        @Override
        public void flush(ChannelHandlerContext ctx) {
            // nothing buffered
        }
    }
}
