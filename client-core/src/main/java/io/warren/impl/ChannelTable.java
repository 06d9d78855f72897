package io.warren.impl;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The channels of one connection by number, and the allocation of numbers up to the negotiated
 * channel-max. Event loop only.
 */
final class ChannelTable {

    private final ChannelNumbers numbers;
    private final ChannelState[] byNumber;

    ChannelTable(int channelMax) {
        this.numbers = new ChannelNumbers(channelMax);
        this.byNumber = new ChannelState[channelMax + 1];
    }

    /** A new channel on a free number made by {@code factory}, or {@code null} when all are in use. */
    ChannelState allocate(IntFunction<ChannelState> factory) {
        int n = numbers.allocate();
        if (n < 0) {
            return null;
        }
        ChannelState state = factory.apply(n);
        byNumber[n] = state;
        return state;
    }

    /**
     * Recovery: channel {@code n} again, made by {@code factory}; {@code null} when {@code n} is over the
     * channel-max or in use.
     */
    ChannelState allocate(int n, IntFunction<ChannelState> factory) {
        if (!numbers.allocate(n)) {
            return null;
        }
        ChannelState state = factory.apply(n);
        byNumber[n] = state;
        return state;
    }

    /** The channel with number {@code n}, or {@code null}. */
    ChannelState get(int n) {
        return n > 0 && n < byNumber.length ? byNumber[n] : null;
    }

    /** Forgets {@code state} and frees its number for reuse. */
    void remove(ChannelState state) {
        int n = state.number();
        if (byNumber[n] == state) {
            byNumber[n] = null;
            numbers.free(n);
        }
    }

    int channelMax() {
        return numbers.channelMax();
    }

    int size() {
        return numbers.inUse();
    }

    /** A snapshot of the open channels (the caller may close them while iterating). */
    List<ChannelState> all() {
        List<ChannelState> list = new ArrayList<>(numbers.inUse());
        for (ChannelState s : byNumber) {
            if (s != null) {
                list.add(s);
            }
        }
        return list;
    }
}
