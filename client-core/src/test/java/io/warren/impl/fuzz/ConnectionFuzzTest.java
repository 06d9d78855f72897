package io.warren.impl.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.Address;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.QueueSpec;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.Frames;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.method.ChannelOpenOkEncoder;
import io.warren.codec.method.ConnectionClose;
import io.warren.codec.method.ConnectionOpenOkEncoder;
import io.warren.codec.method.ConnectionStartEncoder;
import io.warren.codec.method.ConnectionTuneEncoder;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodInfo;
import io.warren.codec.method.MethodTable;
import io.warren.impl.ConnectionImpl;
import io.warren.impl.connection.ConnectionHandler;
import io.warren.impl.metrics.MetricsCollector;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Hostile broker input for the connection and channel state machines: an open connection with a channel that has
 * requests in flight (queue.declare, confirm.select, basic.consume, a publish held for the select) is fed a random
 * sequence of server frames (every method the codec knows, with defaults, on channels 0 to 3; content headers and
 * bodies; heartbeats), optionally mutated byte by byte, all through a real {@link FrameDecoder} in an
 * {@link EmbeddedChannel}.
 *
 * <p>Whatever the input: the connection is either still open, or closed by the broker's own connection.close in
 * the input, or closed by the client with a protocol error whose reply code (501-505) is the one in the
 * connection.close the client wrote. Never closed by another exception (a bug that escaped into the handler would
 * show as an "I/O failure"); every request's stage ends (when the socket goes) with an {@link AmqpException},
 * never another type; nothing leaks (PARANOID leak detection through the jqwik hook).
 *
 * <p>1000 tries by default; a longer run: {@code -Djqwik.tries.default=100000}.
 */
class ConnectionFuzzTest {

    private static final ByteBufAllocator ALLOC = ByteBufAllocator.DEFAULT;
    private static final Set<Integer> CLOSE_CODES = Set.of(501, 502, 503, 504, 505);
    private static final List<MethodInfo> METHODS = methods();

    private static List<MethodInfo> methods() {
        List<MethodInfo> all = new ArrayList<>();
        for (int c = 0; c < 100; c++) {
            for (int m = 0; m < 200; m++) {
                MethodInfo info = MethodTable.lookup(c, m);
                if (info != null) {
                    all.add(info);
                }
            }
        }
        return all;
    }

    /** One server frame of the sequence. */
    record Step(int kind, int channel, int method, int size) {
        byte[] bytes() {
            ByteBuf buf = switch (kind) {
                case 0, 1, 2 -> Frames.method(ALLOC, channel, encoder(METHODS.get(method % METHODS.size())));
                case 3 ->
                    Frames.contentHeader(
                            ALLOC,
                            channel,
                            size,
                            BasicProperties.builder().deliveryMode(2).build());
                case 4 -> Frames.body(ALLOC, channel, Unpooled.wrappedBuffer(new byte[size]));
                default -> Frames.heartbeat(ALLOC);
            };
            try {
                return ByteBufUtil.getBytes(buf);
            } finally {
                buf.release();
            }
        }
    }

    private static MethodEncoder encoder(MethodInfo info) {
        MethodEncoder e = info.newEncoder();
        // a few methods the client reads for real get plausible arguments
        if (e instanceof io.warren.codec.method.QueueDeclareOkEncoder q) {
            q.queue("q");
        } else if (e instanceof io.warren.codec.method.BasicConsumeOkEncoder b) {
            b.consumerTag("ctag");
        } else if (e instanceof io.warren.codec.method.BasicDeliverEncoder d) {
            d.consumerTag("ctag").deliveryTag(1);
        }
        return e;
    }

    record Mutation(int kind, int at, byte value) {}

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<Step> step = Combinators.combine(
                        Arbitraries.integers().between(0, 5),
                        Arbitraries.of(0, 1, 1, 1, 2, 3),
                        Arbitraries.integers().between(0, METHODS.size() - 1),
                        Arbitraries.integers().between(0, 40))
                .as(Step::new);
        return step.list().ofMinSize(1).ofMaxSize(16);
    }

    @Provide
    Arbitrary<List<Mutation>> mutations() {
        return Combinators.combine(
                        Arbitraries.integers().between(0, 2),
                        Arbitraries.integers().between(0, 1 << 16),
                        Arbitraries.bytes())
                .as(Mutation::new)
                .list()
                .ofMaxSize(3);
    }

    @Property
    void anyBrokerInputEndsInFramesOrAProtocolClose(
            @ForAll("steps") List<Step> steps, @ForAll("mutations") List<Mutation> mutations) {
        ByteArrayOutputStream feed = new ByteArrayOutputStream();
        steps.forEach(s -> feed.writeBytes(s.bytes()));
        byte[] input = mutate(feed.toByteArray(), mutations);

        Harness h = new Harness();
        try {
            Channel ch = h.openChannel();
            List<CompletionStage<?>> requests = new ArrayList<>();
            requests.add(ch.queueDeclare(QueueSpec.named("q")));
            requests.add(ch.confirmSelect());
            requests.add(ch.consume("q", d -> d.ack()));
            requests.add(ch.publish("", "q", false, null, Unpooled.wrappedBuffer(new byte[] {1, 2, 3})));
            h.client.runPendingTasks();
            h.drainOutbound();

            h.client.writeInbound(Unpooled.wrappedBuffer(input));
            h.client.runPendingTasks();
            h.drainOutbound();
            h.client.checkException(); // nothing may escape the handler

            CompletableFuture<ConnectionClosedException> closed =
                    h.connection.closeFuture().toCompletableFuture();
            if (closed.isDone()) {
                ConnectionClosedException cause = closed.join();
                if (cause.getCause() instanceof AmqpProtocolException ape) {
                    assertTrue(CLOSE_CODES.contains(ape.replyCode()), () -> "reply code " + ape.replyCode());
                    assertEquals(ape.replyCode(), h.closeCodeWritten, "connection.close carries the error's code");
                } else {
                    assertTrue(
                            cause.initiatedByBroker(),
                            () -> "closed for another reason than the broker's close " + "or a protocol error: "
                                    + cause);
                }
            }
            h.client.finishAndReleaseAll();
            h.drainOutbound();
            for (CompletionStage<?> r : requests) {
                CompletableFuture<?> f = r.toCompletableFuture();
                assertTrue(f.isDone(), "every request ends when the connection does: " + f);
                if (f.isCompletedExceptionally()) {
                    Throwable t = f.handle((v, e) -> e).join();
                    Throwable cause = t instanceof java.util.concurrent.CompletionException ? t.getCause() : t;
                    assertTrue(cause instanceof AmqpException, () -> "failed with " + cause);
                }
            }
        } finally {
            h.close();
        }
    }

    private static byte[] mutate(byte[] in, List<Mutation> mutations) {
        byte[] b = in;
        for (Mutation m : mutations) {
            if (b.length == 0) {
                break;
            }
            int i = m.at % b.length;
            b = switch (m.kind) {
                case 0 -> {
                    byte[] c = b.clone();
                    c[i] = m.value;
                    yield c;
                }
                case 1 -> {
                    byte[] c = new byte[b.length + 1];
                    System.arraycopy(b, 0, c, 0, i);
                    c[i] = m.value;
                    System.arraycopy(b, i, c, i + 1, b.length - i);
                    yield c;
                }
                default -> Arrays.copyOf(b, i);
            };
        }
        return b;
    }

    /** A connection handler opened through the handshake, and a decoder for what it writes. */
    static final class Harness implements AutoCloseable {
        final CompletableFuture<ConnectionImpl> connected = new CompletableFuture<>();
        final EmbeddedChannel client;
        final EmbeddedChannel fromClient;
        final Connection connection;
        int closeCodeWritten = -1;
        private boolean headerSkipped;

        Harness() {
            ConnectionHandler handler = ConnectionImpl.newHandler(
                    new ConnectionOptions().automaticRecovery(false),
                    new Address("fuzz.test", 5672),
                    connected,
                    null,
                    MetricsCollector.NOOP);
            client = new EmbeddedChannel(new FrameDecoder(), handler);
            FrameDecoder server = new FrameDecoder();
            server.setFrameMax(0);
            fromClient = new EmbeddedChannel(server);
            send(
                    0,
                    new ConnectionStartEncoder()
                            .versionMajor(0)
                            .versionMinor(9)
                            .serverProperties(
                                    Map.of("product", "fuzz", "capabilities", Map.of("publisher_confirms", true)))
                            .mechanisms("PLAIN")
                            .locales("en_US"));
            send(0, new ConnectionTuneEncoder().channelMax(16).frameMax(4096).heartbeat(0));
            send(0, new ConnectionOpenOkEncoder());
            drainOutbound();
            connection = connected.getNow(null);
            assertNotNull(connection, "the handshake completes");
        }

        void send(int channel, MethodEncoder e) {
            client.writeInbound(Frames.method(ALLOC, channel, e));
        }

        Channel openChannel() {
            CompletableFuture<Channel> f = connection.openChannel().toCompletableFuture();
            client.runPendingTasks();
            drainOutbound();
            send(1, new ChannelOpenOkEncoder());
            return f.join();
        }

        /** Reads and releases what the client wrote, noting the reply code of a connection.close. */
        void drainOutbound() {
            client.runPendingTasks();
            ByteBuf out;
            while ((out = client.readOutbound()) != null) {
                if (!headerSkipped) {
                    headerSkipped = true;
                    out.skipBytes(8); // "AMQP" 0 0 9 1
                }
                fromClient.writeInbound(out);
            }
            Frame f;
            while ((f = fromClient.readInbound()) != null) {
                try {
                    ByteBuf p = f.payload();
                    if (f.type() == FrameType.METHOD
                            && f.channel() == 0
                            && p.getInt(p.readerIndex()) == MethodIds.CONNECTION_CLOSE) {
                        closeCodeWritten =
                                new ConnectionClose().wrap(p, p.readerIndex()).replyCode();
                    }
                } finally {
                    f.release();
                }
            }
        }

        @Override
        public void close() {
            client.finishAndReleaseAll();
            fromClient.finishAndReleaseAll();
        }
    }
}
