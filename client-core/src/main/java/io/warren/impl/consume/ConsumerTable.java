package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import java.util.Arrays;

/**
 * A channel's consumers by consumer tag: the table basic.deliver is routed by. A channel has few consumers, so it
 * is an array, copied when a consumer comes or goes (rare), and scanned comparing the tag's bytes in the frame:
 * that beats decoding the tag and hashing it on every delivery. Event loop only.
 */
final class ConsumerTable {

    private static final ConsumerImpl[] NONE = new ConsumerImpl[0];

    private ConsumerImpl[] consumers = NONE;

    /** The consumers now; the array is never changed in place. */
    ConsumerImpl[] all() {
        return consumers;
    }

    void add(ConsumerImpl consumer) {
        ConsumerImpl[] more = Arrays.copyOf(consumers, consumers.length + 1);
        more[more.length - 1] = consumer;
        consumers = more;
    }

    /** Removes the consumer; false when it was not here. */
    boolean remove(ConsumerImpl consumer) {
        for (int i = 0; i < consumers.length; i++) {
            if (consumers[i] == consumer) {
                ConsumerImpl[] fewer = new ConsumerImpl[consumers.length - 1];
                System.arraycopy(consumers, 0, fewer, 0, i);
                System.arraycopy(consumers, i + 1, fewer, i, fewer.length - i);
                consumers = fewer;
                return true;
            }
        }
        return false;
    }

    /** Empties the table and returns what it held. */
    ConsumerImpl[] removeAll() {
        ConsumerImpl[] all = consumers;
        consumers = NONE;
        return all;
    }

    /** The consumer whose tag is the {@code length} bytes at {@code index}, or null. */
    ConsumerImpl find(ByteBuf buf, int index, int length) {
        for (ConsumerImpl c : consumers) {
            if (c.hasTag(buf, index, length)) {
                return c;
            }
        }
        return null;
    }

    /** The consumer with this tag, or null. */
    ConsumerImpl find(String consumerTag) {
        for (ConsumerImpl c : consumers) {
            if (c.consumerTag().equals(consumerTag)) {
                return c;
            }
        }
        return null;
    }
}
