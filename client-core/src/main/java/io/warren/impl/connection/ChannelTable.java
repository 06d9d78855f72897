package io.warren.impl.connection;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The channels of one connection by number, and the allocation of numbers up to the negotiated
 * channel-max. Event loop only.
 *
 * <p>The table grows with the highest number in use instead of being sized to the channel-max up front: at
 * RabbitMQ's default of 2047 that would be 8 KiB on every connection, most of which open one or two channels.
 * Lookups stay an array index, as every inbound frame needs one.
 */
public final class ChannelTable {

    /** Numbers 1..3 without growing: most connections never open a fourth channel. */
    public static final int INITIAL_CAPACITY = 4;

    private final ChannelNumbers numbers;
    private InboundChannel[] byNumber;

    ChannelTable(int channelMax) {
        this.numbers = new ChannelNumbers(channelMax);
        this.byNumber = new InboundChannel[Math.min(INITIAL_CAPACITY, channelMax + 1)];
    }

    /** A new channel on a free number made by {@code factory}, or {@code null} when all are in use. */
    <C extends InboundChannel> C allocate(IntFunction<C> factory) {
        int n = numbers.allocate();
        if (n < 0) {
            return null;
        }
        C state = factory.apply(n);
        put(n, state);
        return state;
    }

    /**
     * Recovery: channel {@code n} again, made by {@code factory}; {@code null} when {@code n} is over the
     * channel-max or in use.
     */
    public <C extends InboundChannel> C allocate(int n, IntFunction<C> factory) {
        if (!numbers.allocate(n)) {
            return null;
        }
        C state = factory.apply(n);
        put(n, state);
        return state;
    }

    private void put(int n, InboundChannel state) {
        if (n >= byNumber.length) {
            // doubling keeps a connection that opens channels one by one at O(log channelMax) copies
            int length = Math.min(Math.max(byNumber.length * 2, n + 1), numbers.channelMax() + 1);
            byNumber = Arrays.copyOf(byNumber, length);
        }
        byNumber[n] = state;
    }

    /** Slots of the table today, for tests. */
    public int capacity() {
        return byNumber.length;
    }

    /** The channel with number {@code n}, or {@code null}. */
    public InboundChannel get(int n) {
        return n > 0 && n < byNumber.length ? byNumber[n] : null;
    }

    /** Forgets {@code state} and frees its number for reuse. */
    public void remove(InboundChannel state) {
        int n = state.number();
        if (n < byNumber.length && byNumber[n] == state) {
            byNumber[n] = null;
            numbers.free(n);
        }
    }

    public int channelMax() {
        return numbers.channelMax();
    }

    int size() {
        return numbers.inUse();
    }

    /** A snapshot of the open channels (the caller may close them while iterating). */
    public List<InboundChannel> all() {
        List<InboundChannel> list = new ArrayList<>(numbers.inUse());
        for (InboundChannel s : byNumber) {
            if (s != null) {
                list.add(s);
            }
        }
        return list;
    }
}
