package io.warren.codec.fuzz;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.FrameType;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.MethodInfo;
import io.warren.codec.method.MethodTable;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Hostile input for {@link FrameDecoder}, through an {@link EmbeddedChannel}, in chunks of random sizes:
 * random bytes, frame-shaped noise (plausible headers around random method payloads of every class and method
 * the codec knows), and mutations (flipped, inserted, deleted, duplicated and truncated bytes) of a real
 * RabbitMQ session recorded byte for byte ({@code fuzz/rabbitmq-session.bin}).
 *
 * <p>Whatever the input, every run must end in one of two ways: correct frames only, or correct frames followed
 * by exactly one {@link AmqpProtocolException} whose reply code is one a connection is closed with (501, 502,
 * 503, 505). Never another exception type, never a second error (the failed state is sticky). "Correct" is
 * checked against the input itself: the frames passed on, written back to the wire, are exactly the input's
 * first bytes, and every method and content-header payload passed on validates. Every input buffer ends
 * released, and PARANOID leak detection watches the decoder's own buffers.
 *
 * <p>The number of tries is jqwik's default (1000 per property); a longer run:
 * {@code ./mvnw -B -o test -pl client-codec -Dtest='FrameDecoderFuzzTest' -Djqwik.tries.default=200000}.
 */
class FrameDecoderFuzzTest {

    private static final Set<Integer> CLOSE_CODES = Set.of(501, 502, 503, 505);
    private static final byte[] SESSION = corpus();

    static byte[] corpus() {
        try (InputStream in = FrameDecoderFuzzTest.class.getResourceAsStream("/fuzz/rabbitmq-session.bin")) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // ---- properties ----------------------------------------------------------------------------------------

    @Property
    void randomBytes(@ForAll @Size(max = 600) byte[] input, @ForAll @IntRange(min = 1, max = 64) int chunk) {
        check(input, chunk, 4096);
    }

    @Property
    void frameShapedNoise(@ForAll("frames") byte[] input, @ForAll @IntRange(min = 1, max = 300) int chunk) {
        check(input, chunk, 4096);
    }

    @Property
    void mutatedRealSession(@ForAll("mutations") byte[] input, @ForAll @IntRange(min = 16, max = 2048) int chunk) {
        check(input, chunk, 4096);
    }

    @Property(tries = 20)
    void theRealSessionDecodesWhateverTheSplit(@ForAll @IntRange(min = 7, max = 13000) int chunk) {
        Outcome o = check(SESSION, chunk, 4096);
        assertEquals(null, o.error, "the recorded session is well formed");
        assertEquals(SESSION.length, o.consumed);
    }

    // ---- generators ----------------------------------------------------------------------------------------

    @Provide
    Arbitrary<byte[]> frames() {
        Arbitrary<byte[]> one = Combinators.combine(
                        Arbitraries.of(1, 1, 1, 2, 3, 8, 4, 0, 9, 206),
                        Arbitraries.of(0, 1, 2, 65535),
                        methodPayload(),
                        Arbitraries.integers().between(-2, 2),
                        Arbitraries.of(0xCE, 0xCE, 0xCE, 0xCE, 0x00, 0xCF))
                .as(FrameDecoderFuzzTest::frame);
        return one.list().ofMinSize(1).ofMaxSize(8).map(list -> {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            list.forEach(out::writeBytes);
            return out.toByteArray();
        });
    }

    /** A payload that starts like a real method (a known class and method id) followed by random arguments. */
    private static Arbitrary<byte[]> methodPayload() {
        List<int[]> ids = new ArrayList<>();
        for (int c = 0; c < 100; c++) {
            for (int m = 0; m < 200; m++) {
                if (MethodTable.lookup(c, m) != null) {
                    ids.add(new int[] {c, m});
                }
            }
        }
        ids.add(new int[] {60, 0}); // a content header's class id and weight: the same first bytes
        return Combinators.combine(
                        Arbitraries.of(ids),
                        Arbitraries.bytes().array(byte[].class).ofMaxSize(80))
                .as((id, args) -> {
                    byte[] p = new byte[4 + args.length];
                    p[0] = (byte) (id[0] >> 8);
                    p[1] = (byte) id[0];
                    p[2] = (byte) (id[1] >> 8);
                    p[3] = (byte) id[1];
                    System.arraycopy(args, 0, p, 4, args.length);
                    return p;
                });
    }

    /** type, channel, size (off by {@code sizeError}), payload, end byte. */
    private static byte[] frame(int type, int channel, byte[] payload, int sizeError, int end) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int size = Math.max(0, payload.length + sizeError);
        out.write(type);
        out.write(channel >> 8);
        out.write(channel);
        out.write(size >>> 24);
        out.write(size >> 16);
        out.write(size >> 8);
        out.write(size);
        out.writeBytes(payload);
        out.write(end);
        return out.toByteArray();
    }

    /**
     * A window of whole frames of the recorded session (up to about 2 KiB, so a try stays cheap under PARANOID
     * leak tracking), mutated one to four times.
     */
    @Provide
    Arbitrary<byte[]> mutations() {
        Arbitrary<byte[]> window = Arbitraries.integers()
                .between(0, FRAME_STARTS.length - 1)
                .map(first -> {
                    int from = FRAME_STARTS[first];
                    int to = from;
                    for (int i = first + 1; i <= FRAME_STARTS.length; i++) {
                        int end = i == FRAME_STARTS.length ? SESSION.length : FRAME_STARTS[i];
                        if (end - from > 2048 && to > from) {
                            break;
                        }
                        to = end;
                    }
                    return Arrays.copyOfRange(SESSION, from, to);
                });
        Arbitrary<Mutation> m = Combinators.combine(
                        Arbitraries.integers().between(0, 5),
                        Arbitraries.integers().between(0, 1 << 20),
                        Arbitraries.integers().between(1, 64),
                        Arbitraries.bytes())
                .as(Mutation::new);
        return Combinators.combine(window, m.list().ofMinSize(1).ofMaxSize(4)).as((base, list) -> {
            byte[] b = base;
            for (Mutation x : list) {
                b = x.apply(b);
            }
            return b;
        });
    }

    /** Where each frame of the recorded session starts. */
    private static final int[] FRAME_STARTS = frameStarts(SESSION);

    private static int[] frameStarts(byte[] s) {
        List<Integer> starts = new ArrayList<>();
        int at = 0;
        while (at + 7 <= s.length) {
            starts.add(at);
            int size = ((s[at + 3] & 0xFF) << 24)
                    | ((s[at + 4] & 0xFF) << 16)
                    | ((s[at + 5] & 0xFF) << 8)
                    | (s[at + 6] & 0xFF);
            at += 8 + size;
        }
        return starts.stream().mapToInt(Integer::intValue).toArray();
    }

    record Mutation(int kind, int at, int length, byte value) {
        byte[] apply(byte[] in) {
            if (in.length == 0) {
                return in;
            }
            int i = at % in.length;
            int n = Math.min(length, in.length - i);
            byte[] out;
            switch (kind) {
                case 0 -> { // flip one bit
                    out = in.clone();
                    out[i] ^= (byte) (1 << (value & 7));
                }
                case 1 -> { // overwrite a byte
                    out = in.clone();
                    out[i] = value;
                }
                case 2 -> { // insert bytes
                    out = new byte[in.length + n];
                    System.arraycopy(in, 0, out, 0, i);
                    Arrays.fill(out, i, i + n, value);
                    System.arraycopy(in, i, out, i + n, in.length - i);
                }
                case 3 -> { // delete bytes
                    out = new byte[in.length - n];
                    System.arraycopy(in, 0, out, 0, i);
                    System.arraycopy(in, i + n, out, i, in.length - i - n);
                }
                case 4 -> { // duplicate a range
                    out = new byte[in.length + n];
                    System.arraycopy(in, 0, out, 0, i + n);
                    System.arraycopy(in, i, out, i + n, in.length - i);
                }
                default -> out = Arrays.copyOf(in, i); // truncate
            }
            return out;
        }
    }

    // ---- the oracle ----------------------------------------------------------------------------------------

    record Outcome(int consumed, int frames, Throwable error) {}

    /** Feeds {@code input} in chunks of {@code chunk} bytes and checks every invariant of the class comment. */
    static Outcome check(byte[] input, int chunk, int frameMax) {
        List<Throwable> errors = new ArrayList<>();
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(), new ChannelInboundHandlerAdapter() {
            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                errors.add(cause);
            }
        });
        ch.pipeline().get(FrameDecoder.class).setFrameMax(frameMax);
        List<ByteBuf> written = new ArrayList<>();
        ByteArrayOutputStream rewritten = new ByteArrayOutputStream();
        int frames = 0;
        try {
            for (int at = 0; at < input.length; at += chunk) {
                int n = Math.min(chunk, input.length - at);
                // Not tracked by the leak detector (a wrapped array): its release is asserted below instead, which
                // is exact and costs nothing. The decoder's own buffers (cumulation, frames) are tracked.
                ByteBuf buf = Unpooled.wrappedBuffer(input, at, n);
                written.add(buf);
                ch.writeInbound(buf);
                frames += drain(ch, rewritten);
            }
        } finally {
            ch.finishAndReleaseAll();
        }
        for (ByteBuf b : written) {
            assertEquals(0, b.refCnt(), "every input buffer is released");
        }
        assertTrue(errors.size() <= 1, () -> "at most one error (the failed state is sticky): " + errors);
        Throwable error = errors.isEmpty() ? null : errors.get(0);
        if (error != null) {
            if (!(error instanceof AmqpProtocolException ape)) {
                throw new AssertionError("not a protocol error: " + error, error);
            }
            assertTrue(CLOSE_CODES.contains(ape.replyCode()), () -> "reply code " + ape.replyCode() + ": " + ape);
            assertTrue(ape.getMessage() != null && !ape.getMessage().isEmpty());
        }
        byte[] prefix = rewritten.toByteArray();
        assertTrue(prefix.length <= input.length);
        assertArrayEquals(
                Arrays.copyOf(input, prefix.length),
                prefix,
                "the frames passed on are exactly the input's first bytes");
        return new Outcome(prefix.length, frames, error);
    }

    /** Reads the decoded frames, validates and re-encodes each into {@code out}, releases it. */
    private static int drain(EmbeddedChannel ch, ByteArrayOutputStream out) {
        int n = 0;
        Frame f;
        while ((f = ch.readInbound()) != null) {
            try {
                ByteBuf p = f.payload();
                if (f.type() == FrameType.METHOD) {
                    MethodInfo info = MethodTable.validate(p, p.readerIndex(), p.readableBytes(), f.channel());
                    assertTrue(info != null);
                } else if (f.type() == FrameType.HEADER) {
                    ContentHeader.validate(p, p.readerIndex(), p.readableBytes(), f.channel());
                }
                int size = p.readableBytes();
                out.write(f.type().id());
                out.write(f.channel() >> 8);
                out.write(f.channel());
                out.write(size >>> 24);
                out.write(size >> 16);
                out.write(size >> 8);
                out.write(size);
                out.writeBytes(ByteBufUtil.getBytes(p));
                out.write(0xCE);
                n++;
            } finally {
                f.release();
            }
        }
        return n;
    }
}
