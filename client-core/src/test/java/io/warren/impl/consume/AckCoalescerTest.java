package io.warren.impl.consume;

import static io.warren.impl.consume.AckCoalescer.ACK;
import static io.warren.impl.consume.AckCoalescer.MULTIPLE;
import static io.warren.impl.consume.AckCoalescer.NACK;
import static io.warren.impl.consume.AckCoalescer.REJECT;
import static io.warren.impl.consume.AckCoalescer.REQUEUE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.warren.codec.Frame;
import io.warren.codec.FrameDecoder;
import io.warren.codec.method.BasicAck;
import io.warren.codec.method.BasicNack;
import io.warren.codec.method.BasicReject;
import io.warren.codec.method.MethodIds;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The coalescer on its own: which frames a sequence of deliveries and settlements produces, read back through
 * the codec's {@link FrameDecoder} and method views (so the hand-written frames are checked too).
 */
class AckCoalescerTest {

    private final AckCoalescer acks = new AckCoalescer(7, UnpooledByteBufAllocator.DEFAULT);

    /** The frames appended so far, as "ack 3", "ack 5 multiple", "nack 2 multiple requeue", "reject 4". */
    private List<String> frames() {
        ByteBuf out = acks.takeFrames();
        List<String> result = new ArrayList<>();
        if (out == null) {
            return result;
        }
        FrameDecoder decoder = new FrameDecoder();
        decoder.setFrameMax(0);
        EmbeddedChannel channel = new EmbeddedChannel(decoder);
        channel.writeInbound(out);
        Frame f;
        while ((f = channel.readInbound()) != null) {
            try {
                assertEquals(7, f.channel());
                ByteBuf p = f.payload();
                int at = p.readerIndex();
                switch (p.getInt(at)) {
                    case MethodIds.BASIC_ACK -> {
                        BasicAck a = new BasicAck().wrap(p, at);
                        result.add("ack " + a.deliveryTag() + (a.multiple() ? " multiple" : ""));
                    }
                    case MethodIds.BASIC_NACK -> {
                        BasicNack n = new BasicNack().wrap(p, at);
                        result.add("nack " + n.deliveryTag() + (n.multiple() ? " multiple" : "")
                                + (n.requeue() ? " requeue" : ""));
                    }
                    case MethodIds.BASIC_REJECT -> {
                        BasicReject r = new BasicReject().wrap(p, at);
                        result.add("reject " + r.deliveryTag() + (r.requeue() ? " requeue" : ""));
                    }
                    default -> throw new AssertionError("unexpected method " + p.getInt(at));
                }
            } finally {
                f.release();
            }
        }
        assertFalse(channel.finish());
        return result;
    }

    private void deliver(long from, long to, boolean needsAck) {
        for (long t = from; t <= to; t++) {
            acks.delivered(t, needsAck);
        }
    }

    @Test
    void acksInOrderBecomeOneMultipleAck() {
        deliver(1, 100, true);
        for (long t = 1; t <= 100; t++) {
            assertTrue(acks.settle(t, ACK));
        }
        assertEquals(List.of("ack 100 multiple"), frames());
        assertEquals(0, acks.pendingCount());
    }

    /** A tag far beyond a waiting one (a broker's bug, or a hostile one) moves the window, bounded, never spins. */
    @Test
    void aTagFarAheadOfAWaitingOneMovesTheWindowInBoundedSteps() {
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(30), () -> {
            deliver(1, 1, true);
            acks.delivered(Long.MAX_VALUE - 1, true);
            assertTrue(acks.settle(Long.MAX_VALUE - 1, ACK));
            assertTrue(acks.settle(1, ACK));
        });
        assertEquals(List.of("ack 1", "ack " + (Long.MAX_VALUE - 1)), frames());
        assertEquals(0, acks.pendingCount());
    }

    /**
     * basic.ack 0 multiple means every delivery so far: it settles the tags the coalescer holds, so that none of them
     * is written again after it (a second ack of a tag closes the channel with 406).
     */
    @Test
    void aMultipleAckOfTagZeroSettlesEveryTagDeliveredSoFar() {
        deliver(1, 3, true);
        acks.settle(1, ACK);
        assertTrue(acks.settle(0, ACK | MULTIPLE));
        assertEquals(List.of("ack 3 multiple"), frames());
        assertEquals(0, acks.pendingCount());
        assertFalse(acks.settle(2, ACK), "already settled by the multiple ack");
        assertEquals(List.of(), frames());
    }

    /** Every delivery so far, when nothing was delivered: nothing to settle, and no frame that would settle nothing. */
    @Test
    void aMultipleSettlementOfTagZeroBeforeAnyDeliveryIsDropped() {
        assertFalse(acks.settle(0, ACK | MULTIPLE));
        assertFalse(acks.settle(0, NACK | MULTIPLE | REQUEUE));
        assertEquals(List.of(), frames());
        deliver(1, 1, true);
        assertTrue(acks.settle(0, ACK | MULTIPLE));
        assertEquals(List.of("ack 1"), frames());
    }

    @Test
    void aMultipleNackOfTagZeroLeavesNoAckOfACoveredTagBehindIt() {
        deliver(1, 3, true);
        acks.settle(1, ACK);
        assertTrue(acks.settle(0, NACK | MULTIPLE | REQUEUE));
        assertEquals(List.of("ack 1", "nack 3 multiple requeue"), frames());
        assertEquals(0, acks.pendingCount());
    }

    @Test
    void aSingleAckStaysSingle() {
        deliver(1, 3, true);
        acks.settle(1, ACK);
        assertEquals(List.of("ack 1"), frames());
    }

    @Test
    void acksAboveAWaitingDeliveryGoOutOneByOneAndNeverCoverIt() {
        deliver(1, 5, true);
        acks.settle(2, ACK);
        acks.settle(4, ACK);
        acks.settle(5, ACK);
        assertEquals(List.of("ack 2", "ack 4", "ack 5"), frames());
        acks.settle(1, ACK);
        acks.settle(3, ACK);
        // 1..5 are now settled: 1 and 3 are the only unwritten acks; 3 may cover 1 (2 was acked before)
        assertEquals(List.of("ack 3 multiple"), frames());
        assertEquals(0, acks.pendingCount());
    }

    @Test
    void theContiguousRunIsCoalescedAndTheRestSentSingly() {
        deliver(1, 10, true);
        for (long t : new long[] {1, 2, 3, 5, 6}) {
            acks.settle(t, ACK);
        }
        assertEquals(List.of("ack 3 multiple", "ack 5", "ack 6"), frames());
    }

    @Test
    void noAckDeliveriesNeedNothingAndDoNotBreakTheRun() {
        acks.delivered(1, true);
        acks.delivered(2, false);
        acks.delivered(3, true);
        acks.settle(1, ACK);
        acks.settle(3, ACK);
        assertEquals(List.of("ack 3 multiple"), frames());
        // a noAck tag cannot be settled
        assertFalse(acks.settle(2, ACK));
        assertEquals(List.of(), frames());
    }

    @Test
    void aSecondSettlementIsDropped() {
        deliver(1, 2, true);
        assertTrue(acks.settle(1, ACK));
        assertFalse(acks.settle(1, ACK));
        assertEquals(List.of("ack 1"), frames());
        assertFalse(acks.settle(1, NACK | REQUEUE));
        assertEquals(List.of(), frames());
    }

    @Test
    void aTagNeverDeliveredIsPassedThroughForTheBrokerToJudge() {
        deliver(1, 2, true);
        assertTrue(acks.settle(9, ACK));
        assertEquals(List.of("ack 9"), frames());
    }

    @Test
    void multipleAckMarksEveryWaitingTagUpToIt() {
        deliver(1, 200, true);
        acks.settle(100, ACK | MULTIPLE);
        assertEquals(List.of("ack 100 multiple"), frames());
        assertEquals(100, acks.pendingCount());
        acks.settle(200, ACK | MULTIPLE);
        assertEquals(List.of("ack 200 multiple"), frames());
        assertEquals(0, acks.pendingCount());
    }

    @Test
    void nackAndRejectGoOutAtOnceInOrder() {
        deliver(1, 4, true);
        acks.settle(1, ACK);
        acks.settle(2, REJECT | REQUEUE);
        acks.settle(3, NACK);
        acks.settle(4, ACK);
        // the reject and nack were appended when made; the acks at the flush (1, then 4 which may cover 1..3)
        assertEquals(List.of("reject 2 requeue", "nack 3", "ack 4 multiple"), frames());
    }

    @Test
    void multipleNackWritesPendingAcksFirstSoThatItCannotCoverThem() {
        deliver(1, 6, true);
        acks.settle(2, ACK);
        acks.settle(3, ACK);
        acks.settle(6, ACK);
        acks.settle(5, NACK | MULTIPLE | REQUEUE);
        // 2, 3 and 6 acked (singly: 1 was waiting), then the nack covers 1, 4, 5
        assertEquals(List.of("ack 2", "ack 3", "ack 6", "nack 5 multiple requeue"), frames());
        assertEquals(0, acks.pendingCount());
    }

    @Test
    void multipleNackNamesTheHighestWaitingTag() {
        deliver(1, 5, true);
        acks.settle(5, ACK);
        acks.settle(5, NACK | MULTIPLE);
        assertEquals(List.of("ack 5", "nack 4 multiple"), frames());
    }

    @Test
    void theRingGrowsWithTheWindow() {
        deliver(1, 1000, true);
        assertTrue(acks.capacity() >= 1024);
        for (long t = 2; t <= 1000; t++) {
            acks.settle(t, ACK);
        }
        List<String> out = frames();
        assertEquals(999, out.size(), "all out of order behind tag 1");
        acks.settle(1, ACK);
        assertEquals(List.of("ack 1"), frames());
    }

    @Test
    void aDeliveryHeldBeyondTheRingBecomesAStragglerAndStopsMultipleAcks() {
        int n = AckCoalescer.MAX_CAPACITY + 10;
        acks.delivered(1, true); // held for ever
        for (long t = 2; t <= n; t++) {
            acks.delivered(t, true);
            acks.settle(t, ACK);
            if (t % 1000 == 0) {
                frames();
            }
        }
        frames();
        assertEquals(AckCoalescer.MAX_CAPACITY, acks.capacity());
        assertEquals(1, acks.stragglerCount());
        acks.delivered(n + 1, true);
        acks.delivered(n + 2, true);
        acks.settle(n + 1, ACK);
        acks.settle(n + 2, ACK);
        assertEquals(List.of("ack " + (n + 1), "ack " + (n + 2)), frames(), "no multiple ack over a straggler");
        acks.settle(1, ACK);
        assertEquals(List.of("ack 1"), frames());
        assertEquals(0, acks.stragglerCount());
        acks.delivered(n + 3, true);
        acks.delivered(n + 4, true);
        acks.settle(n + 3, ACK);
        acks.settle(n + 4, ACK);
        assertEquals(List.of("ack " + (n + 4) + " multiple"), frames());
    }

    /**
     * basic.recover requeues what still waits and the broker forgets those tags: none of them may hold the next run
     * of acks back, or be named by a multiple settlement, and the frames appended before stay.
     */
    @Test
    void forgottenWaitingTagsHoldNothingBackAndAreNamedByNoSettlement() {
        deliver(1, 4, true);
        acks.settle(2, REJECT);
        acks.settle(3, ACK);
        assertEquals(List.of("reject 2", "ack 3"), frames());
        acks.settle(4, NACK | REQUEUE); // appended, not yet taken when basic.recover goes out
        acks.forgetWaiting();
        assertEquals(0, acks.pendingCount());
        assertEquals(AckCoalescer.NONE, acks.oldestPendingSince());
        assertFalse(acks.settle(1, ACK), "forgotten: dropped");
        assertFalse(acks.settle(0, NACK | MULTIPLE | REQUEUE), "every outstanding delivery: there is none");
        deliver(5, 6, true);
        assertTrue(acks.settle(5, ACK));
        assertTrue(acks.settle(6, ACK));
        assertEquals(List.of("nack 4 requeue", "ack 6 multiple"), frames());
    }

    /** A straggler (held past the ring's largest window) is forgotten as well. */
    @Test
    void aForgottenStragglerStopsNoMultipleAck() {
        int n = AckCoalescer.MAX_CAPACITY + 10;
        acks.delivered(1, true);
        for (long t = 2; t <= n; t++) {
            acks.delivered(t, true);
            acks.settle(t, ACK);
            if (t % 1000 == 0) {
                frames();
            }
        }
        frames();
        assertEquals(1, acks.stragglerCount());
        acks.forgetWaiting();
        assertEquals(0, acks.stragglerCount());
        assertFalse(acks.settle(1, ACK));
        acks.delivered(n + 1, true);
        acks.delivered(n + 2, true);
        acks.settle(n + 1, ACK);
        acks.settle(n + 2, ACK);
        assertEquals(List.of("ack " + (n + 2) + " multiple"), frames());
    }

    @Test
    void clearForgetsEverything() {
        deliver(1, 3, true);
        acks.settle(1, ACK);
        acks.settle(2, REJECT);
        acks.clear();
        assertEquals(List.of(), frames());
        assertEquals(0, acks.pendingCount());
    }

    /**
     * Random deliveries (some noAck) settled in random order with random operations: every settlement the
     * coalescer accepted is covered by exactly the frames it wrote, and no frame covers a tag that was still
     * waiting. The broker's rules are simulated: a multiple frame covers every unacknowledged tag up to its own.
     */
    @Test
    void randomSettlementsAreReproducedExactlyByTheFrames() {
        Random random = new Random(42);
        for (int round = 0; round < 200; round++) {
            AckCoalescer c = new AckCoalescer(1, UnpooledByteBufAllocator.DEFAULT);
            int n = 1 + random.nextInt(300);
            BitSet needsAck = new BitSet();
            BitSet brokerUnacked = new BitSet(); // the broker's view
            BitSet settledByApp = new BitSet();
            List<Long> order = new ArrayList<>();
            for (int t = 1; t <= n; t++) {
                boolean ack = random.nextInt(5) != 0;
                c.delivered(t, ack);
                if (ack) {
                    needsAck.set(t);
                    brokerUnacked.set(t);
                    order.add((long) t);
                }
            }
            java.util.Collections.shuffle(order, random);
            List<String> written = new ArrayList<>();
            for (long t : order) {
                if (settledByApp.get((int) t)) {
                    continue;
                }
                int op = random.nextInt(10) < 8 ? ACK : (random.nextBoolean() ? NACK : REJECT);
                c.settle(t, op);
                settledByApp.set((int) t);
                if (random.nextInt(8) == 0) {
                    written.addAll(framesOf(c));
                    apply(written, brokerUnacked, settledByApp);
                    written.clear();
                }
            }
            written.addAll(framesOf(c));
            apply(written, brokerUnacked, settledByApp);
            assertTrue(
                    brokerUnacked.isEmpty(),
                    "round " + round + ": left unacknowledged at the broker: " + brokerUnacked);
        }
    }

    private List<String> framesOf(AckCoalescer c) {
        ByteBuf out = c.takeFrames();
        List<String> result = new ArrayList<>();
        if (out == null) {
            return result;
        }
        while (out.isReadable()) {
            out.skipBytes(7);
            int key = out.readInt();
            long tag = out.readLong();
            int bits = out.readByte();
            out.skipBytes(1);
            String kind = key == MethodIds.BASIC_ACK ? "ack" : key == MethodIds.BASIC_NACK ? "nack" : "reject";
            boolean multiple = key != MethodIds.BASIC_REJECT && (bits & 1) != 0;
            result.add(kind + " " + tag + (multiple ? " multiple" : ""));
        }
        out.release();
        return result;
    }

    /** Applies frames as the broker would; fails on a frame naming a tag the broker does not hold unacked. */
    private static void apply(List<String> frames, BitSet brokerUnacked, BitSet settledByApp) {
        for (String f : frames) {
            String[] parts = f.split(" ");
            int tag = Integer.parseInt(parts[1]);
            boolean multiple = parts.length > 2 && parts[2].equals("multiple");
            assertTrue(brokerUnacked.get(tag), "frame '" + f + "' names a tag the broker does not hold");
            if (multiple) {
                for (int t = brokerUnacked.nextSetBit(0); t >= 0 && t <= tag; t = brokerUnacked.nextSetBit(t + 1)) {
                    assertTrue(settledByApp.get(t), "frame '" + f + "' covers tag " + t + ", still waiting");
                    brokerUnacked.clear(t);
                }
            } else {
                brokerUnacked.clear(tag);
            }
        }
    }
}
