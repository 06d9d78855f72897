package io.warren.impl.connection;

import java.util.BitSet;

/**
 * Allocates channel numbers 1..channelMax. Event loop only.
 *
 * <p>Allocation moves round-robin from the last number handed out instead of taking the lowest free
 * one, so a number just freed is the last to be reused: a late frame for a closed channel cannot be
 * mistaken for one of a new channel opened right after. A number is freed only once the broker has
 * forgotten the channel (close-ok received, or close-ok sent for the broker's close): reusing it earlier
 * would make the broker see a second channel.open on a channel it still has open (504 CHANNEL_ERROR).
 */
final class ChannelNumbers {

    private final BitSet used;
    private final int channelMax;
    private int inUse;
    private int last;

    ChannelNumbers(int channelMax) {
        if (channelMax < 1 || channelMax > 0xFFFF) {
            throw new IllegalArgumentException("channelMax out of range 1..65535: " + channelMax);
        }
        this.channelMax = channelMax;
        this.used = new BitSet(channelMax + 1);
    }

    /** A free number, or -1 when all of 1..channelMax are in use. */
    int allocate() {
        if (inUse == channelMax) {
            return -1;
        }
        int n = used.nextClearBit(last + 1);
        if (n > channelMax) {
            n = used.nextClearBit(1);
        }
        used.set(n);
        inUse++;
        last = n;
        return n;
    }

    /** Takes number {@code n} (a recovered channel keeps its number); false when it is out of range or in use. */
    boolean allocate(int n) {
        if (n < 1 || n > channelMax || used.get(n)) {
            return false;
        }
        used.set(n);
        inUse++;
        return true;
    }

    /** Frees {@code n}; freeing a free number is a bug and throws. */
    void free(int n) {
        if (n < 1 || n > channelMax || !used.get(n)) {
            throw new IllegalStateException("channel " + n + " is not allocated");
        }
        used.clear(n);
        inUse--;
    }

    boolean isAllocated(int n) {
        return n >= 1 && n <= channelMax && used.get(n);
    }

    int inUse() {
        return inUse;
    }

    int channelMax() {
        return channelMax;
    }
}
