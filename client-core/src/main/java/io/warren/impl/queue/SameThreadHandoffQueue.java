package io.warren.impl.queue;

import java.util.ArrayDeque;

/**
 * {@link HandoffQueue} for a producer and a consumer on the same thread (one Netty event loop): a plain
 * counter and an {@link ArrayDeque}, which grows to the largest backlog and then never allocates.
 */
final class SameThreadHandoffQueue<M> extends HandoffQueue<M> {

    // event loop only
    private long wip;

    SameThreadHandoffQueue(int lowWaterMark, int highWaterMark) {
        super(new ArrayDeque<>(Math.min(highWaterMark, 16)), lowWaterMark, highWaterMark);
    }

    @Override
    long wip() {
        return wip;
    }

    @Override
    long incrementWip() {
        return ++wip;
    }

    @Override
    long addWip(long delta) {
        return wip += delta;
    }

    @Override
    boolean casWip(long expect, long update) {
        if (wip != expect) {
            return false;
        }
        wip = update;
        return true;
    }
}
