package io.warren.it;

import static io.warren.it.TopologyIT.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.GetResponse;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ShortString;
import io.warren.it.BrokerExtension.TestNames;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Publishing against the broker: bodies at every frame boundary and 16 MiB round-trip byte for byte with all
 * fourteen properties and a headers table of every type; many threads on one channel never interleave frames.
 */
@ExtendWith(BrokerExtension.class)
class PublishIT {

    /** All 14 basic properties, and a headers table with a value of every type the encoder writes. */
    static BasicProperties allProperties() {
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("inner", "yes");
        nested.put("n", 7);
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("bool", true);
        headers.put("byte", (byte) -5);
        headers.put("short", (short) -300);
        headers.put("int", 70_000);
        headers.put("long", 1L << 40);
        headers.put("float", 1.5f);
        headers.put("double", 2.25d);
        headers.put("decimal", new BigDecimal("123.45"));
        headers.put("string", "h\u00e9llo \u2603");
        headers.put("bytes", new byte[] {0, 1, (byte) 0xFF});
        headers.put("array", List.of(1, "two", true, List.of(3L)));
        headers.put("timestamp", Instant.ofEpochSecond(1_700_000_000L));
        headers.put("table", nested);
        headers.put("void", null);
        return BasicProperties.builder()
                .contentType("application/octet-stream")
                .contentEncoding("identity")
                .headers(headers)
                .deliveryMode(2)
                .priority(5)
                .correlationId("corr-1")
                .replyTo("reply.q")
                .expiration("600000")
                .messageId("msg-1")
                .timestamp(Instant.ofEpochSecond(1_600_000_000L))
                .type("test.type")
                .userId("guest")
                .appId("warren-it")
                .clusterId("cluster-x")
                .build();
    }

    static void assertSameProperties(BasicProperties sent, BasicProperties got) {
        assertEquals(sent.contentType(), got.contentType());
        assertEquals(sent.contentEncoding(), got.contentEncoding());
        assertEquals(sent.deliveryMode(), got.deliveryMode());
        assertEquals(sent.priority(), got.priority());
        assertEquals(sent.correlationId(), got.correlationId());
        assertEquals(sent.replyTo(), got.replyTo());
        assertEquals(sent.expiration(), got.expiration());
        assertEquals(sent.messageId(), got.messageId());
        assertEquals(sent.timestamp(), got.timestamp());
        assertEquals(sent.type(), got.type());
        assertEquals(sent.userId(), got.userId());
        assertEquals(sent.appId(), got.appId());
        assertEquals(sent.clusterId(), got.clusterId());
        Map<String, Object> h = got.headers();
        assertNotNull(h, "headers");
        assertEquals(sent.headers().keySet(), h.keySet());
        for (Map.Entry<String, Object> e : sent.headers().entrySet()) {
            Object v = h.get(e.getKey());
            if (e.getValue() instanceof byte[] b) {
                assertArrayEquals(b, (byte[]) v, e.getKey());
            } else {
                assertEquals(e.getValue(), v, e.getKey());
            }
        }
    }

    @Test
    void bodiesAtEveryFrameBoundaryRoundTripWithAllProperties(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        int fm = connection.frameMax();
        assertTrue(fm > 0, "RabbitMQ negotiates a frame-max");
        int[] sizes = {0, 1, fm - 9, fm - 8, fm - 7, 3 * fm + 1, 16 * 1024 * 1024};
        BasicProperties props = allProperties();
        await(ch.confirmSelect());
        List<byte[]> bodies = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(42);
        for (int size : sizes) {
            byte[] body = new byte[size];
            random.nextBytes(body);
            bodies.add(body);
            ByteBuf buf = ByteBufAllocator.DEFAULT.directBuffer(size).writeBytes(body);
            assertSame(PublishOutcome.CONFIRMED, await(ch.publish("", ShortString.of(q), false, props, buf)));
        }
        for (int i = 0; i < sizes.length; i++) {
            try (GetResponse got = await(ch.basicGet(q, true))) {
                assertNotNull(got, "message of " + sizes[i] + " bytes");
                assertEquals(sizes[i], got.body().readableBytes());
                assertArrayEquals(bodies.get(i), ByteBufUtil.getBytes(got.body()), sizes[i] + " bytes");
                assertSameProperties(props, got.properties());
            }
        }
        assertNull(await(ch.basicGet(q, true)));
        await(ch.queueDelete(q));
    }

    @Test
    void byteArrayAndByteBufferBodiesAreSentAsGiven(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        byte[] array = "from an array".getBytes();
        ByteBuffer direct = ByteBuffer.allocateDirect(64);
        direct.put("xxfrom a ByteBufferxx".getBytes()).flip().position(2).limit(19);
        assertSame(PublishOutcome.SENT, await(ch.publish("", q, false, null, array)));
        assertSame(PublishOutcome.SENT, await(ch.publish("", q, false, null, direct)));
        assertEquals(2, direct.position(), "position untouched");
        try (GetResponse a = await(ch.basicGet(q, true));
                GetResponse b = await(ch.basicGet(q, true))) {
            assertEquals("from an array", a.body().toString(java.nio.charset.StandardCharsets.US_ASCII));
            assertEquals("from a ByteBuffer", b.body().toString(java.nio.charset.StandardCharsets.US_ASCII));
        }
        await(ch.queueDelete(q));
    }

    /**
     * 16 threads publish 1,000 multi-frame messages each on ONE channel (frame-max 4096, bodies up to 20 KB:
     * up to five body frames each). A consumer on another connection checks every body byte for byte and the
     * order of each thread's messages: an interleaved frame would corrupt a body or close the connection.
     * Consumed with Warren's consume API.
     */
    @Test
    void sixteenThreadsOnOneChannelNeverInterleaveFrames(Broker broker, TestNames names) throws Exception {
        int threads = 16;
        int perThread = 1000;
        ConnectionOptions options = ConnectionOptions.fromUri(broker.uri())
                .requestedFrameMax(4096)
                .connectionName("warren-it publish stress");
        Connection pub = await(BrokerExtension.client().connect(options));
        names.onCleanup(() -> await(pub.close()));
        Connection sub = await(BrokerExtension.client().connect(ConnectionOptions.fromUri(broker.uri())));
        names.onCleanup(() -> await(sub.close()));
        assertEquals(4096, pub.frameMax());
        Channel ch = await(pub.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        names.onCleanup(() -> await(sub.openChannel().thenCompose(c -> c.queueDelete(q))));

        int[] next = new int[threads];
        AtomicInteger received = new AtomicInteger();
        AtomicReference<String> error = new AtomicReference<>();
        CompletableFuture<Void> all = new CompletableFuture<>();
        Channel subCh = await(sub.openChannel());
        ConsumerHandle consumer = await(subCh.consume(q, new ConsumeOptions().noAck(true), d -> {
            ByteBuf body = d.body();
            int thread = body.getInt(body.readerIndex());
            int seq = body.getInt(body.readerIndex() + 4);
            if (thread < 0 || thread >= threads) {
                error.compareAndSet(null, "a body starting with thread number " + thread);
            } else if (seq != next[thread]) {
                error.compareAndSet(null, "thread " + thread + ": got message " + seq + ", expected " + next[thread]);
            } else if (!ByteBufUtil.equals(body, io.netty.buffer.Unpooled.wrappedBuffer(body(thread, seq)))) {
                error.compareAndSet(null, "thread " + thread + " message " + seq + ": body differs");
            } else {
                next[thread]++;
            }
            if (received.incrementAndGet() == threads * perThread) {
                all.complete(null);
            }
        }));

        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Future<?>> publishers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                publishers.add(pool.submit(() -> {
                    start.await();
                    for (int seq = 0; seq < perThread; seq++) {
                        if (!ch.isWritable()) {
                            ch.whenWritable().toCompletableFuture().get(30, TimeUnit.SECONDS);
                        }
                        byte[] b = body(thread, seq);
                        ByteBuf buf = ByteBufAllocator.DEFAULT.buffer(b.length).writeBytes(b);
                        ch.publishNoOutcome("", q, false, BasicProperties.EMPTY, buf);
                    }
                    return null;
                }));
            }
            // hang guards only (192 MB through frame-max 4096 takes ~2 minutes on a loaded 2-core machine)
            for (Future<?> f : publishers) {
                f.get(300, TimeUnit.SECONDS);
            }
            all.get(300, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        assertNull(error.get(), error.get());
        assertTrue(ch.isOpen() && pub.isOpen(), "no frame error closed anything");
        for (int t = 0; t < threads; t++) {
            assertEquals(perThread, next[t], "thread " + t);
        }
        await(consumer.cancel());
    }

    /** The body of message {@code seq} of {@code thread}: 4,089 to 20,000 bytes, thread and seq first. */
    static byte[] body(int thread, int seq) {
        SplittableRandom r = new SplittableRandom(((long) thread << 32) | seq);
        byte[] b = new byte[4089 + r.nextInt(20_000 - 4089)];
        r.nextBytes(b);
        java.nio.ByteBuffer.wrap(b).putInt(thread).putInt(seq);
        return b;
    }
}
