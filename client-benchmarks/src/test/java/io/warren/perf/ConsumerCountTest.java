package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The consumer's count both drivers share: what is counted, when it acks, when it is done. */
class ConsumerCountTest {

    private static RunOptions options(long consumerMessages, boolean autoAck, int multiAckEvery) {
        return options(1, 1, 0, consumerMessages, 0, multiAckEvery, autoAck);
    }

    /** Unpaced run options with the smallest body and the counts given, the rest the tool's defaults. */
    static RunOptions options(
            int producers,
            int consumers,
            long producerMessages,
            long consumerMessages,
            int confirm,
            int multiAckEvery,
            boolean autoAck) {
        return new RunOptions(
                List.of("amqp://localhost"),
                producers,
                consumers,
                MessageBody.MIN_SIZE,
                producerMessages,
                consumerMessages,
                -1,
                confirm,
                0,
                multiAckEvery,
                autoAck,
                "",
                false,
                false,
                "k",
                "",
                "direct",
                Map.of(),
                true,
                false);
    }

    /** Each delivery's bits as text: T(aken) A(ck) M(ultiple) D(one), "-" for nothing. */
    private static List<String> take(ConsumerCount count, int deliveries, boolean cancelled) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < deliveries; i++) {
            int what = count.take(cancelled);
            String s = (ConsumerCount.taken(what) ? "T" : "")
                    + (ConsumerCount.acks(what) ? "A" : "")
                    + (ConsumerCount.multiple(what) ? "M" : "")
                    + (ConsumerCount.done(what) ? "D" : "");
            out.add(s.isEmpty() ? "-" : s);
        }
        return out;
    }

    @Test
    void eachOneAckedUpToTheLimitThenNothing() {
        assertEquals(List.of("TA", "TA", "TAD", "-", "-"), take(new ConsumerCount(options(3, false, 0)), 5, false));
    }

    @Test
    void multipleAcksEveryNAndAtTheLimit() {
        assertEquals(
                List.of("T", "TAM", "T", "TAM", "TAMD", "-"), take(new ConsumerCount(options(5, false, 2)), 6, false));
        assertEquals(List.of("T", "T", "TAM", "T"), take(new ConsumerCount(options(0, false, 3)), 4, false));
    }

    @Test
    void autoAckNeverAcksAndNoLimitNeverEnds() {
        assertEquals(List.of("T", "T", "TD"), take(new ConsumerCount(options(3, true, 0)), 3, false));
        assertEquals(List.of("TA", "TA"), take(new ConsumerCount(options(0, false, 0)), 2, false));
    }

    @Test
    void aCancelledConsumerTakesNothing() {
        assertEquals(List.of("-", "-"), take(new ConsumerCount(options(3, false, 0)), 2, true));
    }
}
