package io.warren.impl.consume;

import io.warren.StaleDeliveryException;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * One channel state's delivery tags as the application sees them across recovery: the broker numbers a recovered
 * channel's deliveries from 1 again, so the application's tags are the broker's plus an {@link #offset()} (0 on a
 * channel never lost; on a recovered one the highest tag the application saw before the loss). Tags never repeat
 * on a {@link io.warren.Channel}: one at or below the offset can only be from before the loss and is refused as
 * stale instead of naming another message (or none) on the new channel. A class of its own so that the
 * arithmetic and its refusals sit in one place, apart from how settlements travel ({@link SettlementPath}), which
 * deals in the broker's tags only. (The official Java client does the same in its {@code RecoveryAwareChannelN}.)
 *
 * <p>basic.recover makes tags stale on a live channel too: the broker requeues every delivery still unsettled when it
 * reads the method and forgets their tags ({@link #recoverSent}, {@link #recoverOk}); a settlement of one would make
 * it close the channel (406 unknown delivery tag).
 */
final class DeliveryTags {

    private static final AtomicLongFieldUpdater<DeliveryTags> HIGHEST =
            AtomicLongFieldUpdater.newUpdater(DeliveryTags.class, "highest");

    private final int number;
    /** Added to the broker's delivery tags for the application. */
    private final long offset;

    // any thread (volatile)
    /**
     * The highest broker tag delivered here (deliver or get-ok): read at the loss to set the next offset, and by
     * {@link #toBroker} to refuse a tag never delivered. Written on the event loop only, with a release store (no
     * fence on the delivery path): a thread that got a tag through a delivery's hand-off sees at least that tag.
     */
    private volatile long highest;
    /** Lost with the connection, recovery to follow: its deliveries' tags mean nothing on the new channel. */
    private volatile boolean stale;
    /**
     * Broker tags at or below it were requeued by basic.recover, and the broker forgot them: 0 for none; every tag
     * ({@link Long#MAX_VALUE}) from the moment basic.recover is written until its recover-ok, since what arrives
     * meanwhile was sent before the broker read it; then the highest tag delivered by recover-ok. Written on the
     * event loop.
     */
    private volatile long requeuedUpTo;

    DeliveryTags(int number, long offset) {
        this.number = number;
        this.offset = offset;
    }

    /**
     * A broker tag was delivered. The broker's tags only grow on a channel; one that does not (a broker's bug) must
     * not lower the highest, which sets the next state's offset after a loss. Event loop.
     */
    void delivered(long brokerTag) {
        if (brokerTag > highest) {
            HIGHEST.lazySet(this, brokerTag);
        }
    }

    /** What the application's delivery tags add to the broker's on this channel state. Any thread. */
    long offset() {
        return offset;
    }

    /** The highest tag the application can have seen here (the offset when nothing was delivered). */
    long highestExposed() {
        return offset + highest;
    }

    /** Whether this channel state was lost with its connection. Any thread. */
    boolean isStale() {
        return stale;
    }

    /** The channel state is lost with its connection, recovery to follow. Event loop. */
    void markStale() {
        stale = true;
    }

    /** basic.recover was written: every tag delivered so far, and any that comes before its recover-ok, is stale. */
    void recoverSent() {
        requeuedUpTo = Long.MAX_VALUE;
    }

    /**
     * recover-ok (in time or late): the broker requeued what came before it, and what it delivers from now on is
     * new, its redeliveries included (with new tags: they only grow on a channel). Event loop.
     */
    void recoverOk() {
        requeuedUpTo = highest;
    }

    /**
     * Whether basic.recover requeued the delivery of a broker tag (not 0, which names none): its settlement must
     * not be written. Any thread.
     */
    boolean isRequeued(long brokerTag) {
        return brokerTag != 0 && brokerTag <= requeuedUpTo;
    }

    /**
     * Refuses a tag (the application's) that cannot name a delivery: negative, 0 without {@code multiple}, or from
     * before a connection loss. Any thread.
     *
     * @throws IllegalArgumentException for a negative tag or 0 without {@code multiple}
     * @throws StaleDeliveryException for a tag at or below the offset, or any tag while this state is stale
     */
    void checkCurrent(long deliveryTag, boolean multiple) {
        if (deliveryTag < 0 || (deliveryTag == 0 && !multiple)) {
            // the broker would close the channel (406 unknown delivery tag) and fail everything on it
            throw new IllegalArgumentException("delivery tag " + deliveryTag + " names no delivery on channel " + number
                    + (deliveryTag == 0 ? ": 0 means every outstanding delivery, and only with multiple=true" : ""));
        }
        // 0 is passed as it is: with multiple it means every outstanding delivery, which on a recovered channel
        // are only the new channel's; without, the broker judges it as before
        if (deliveryTag != 0 && (stale || deliveryTag <= offset)) {
            throw staleTag(deliveryTag);
        }
    }

    /**
     * The broker's tag for a current application tag ({@link #checkCurrent} passed). Any thread.
     *
     * @throws IllegalArgumentException for a tag above the highest delivered on the channel
     * @throws StaleDeliveryException for a tag basic.recover requeued (with {@code multiple} too: the broker
     *         would close the channel for a multiple settlement of a tag it forgot as well)
     */
    long toBroker(long deliveryTag, boolean multiple) {
        long highestExposed = offset + highest;
        if (deliveryTag > highestExposed) {
            // never delivered here: the broker would close the channel (406 unknown delivery tag), multiple or not
            throw new IllegalArgumentException("delivery tag " + deliveryTag + " was never delivered on channel "
                    + number + " (the highest delivered is " + highestExposed + "): nothing is sent"
                    + (multiple ? "; 0 with multiple=true settles every outstanding delivery" : ""));
        }
        long brokerTag = deliveryTag == 0 ? 0 : deliveryTag - offset;
        if (isRequeued(brokerTag)) {
            throw requeuedTag(deliveryTag);
        }
        return brokerTag;
    }

    /** The refusal of a tag (the application's) that belongs to a channel lost with its connection. */
    StaleDeliveryException staleTag(long deliveryTag) {
        // on the recovered channel it would settle another message, or make the broker close the channel (406);
        // the broker requeued the message with the lost channel
        return new StaleDeliveryException(
                "delivery tag " + deliveryTag + " on channel " + number + " is from "
                        + "before its connection was lost"
                        + (stale ? "" : " and recovered (this channel's tags are above " + offset + " now)")
                        + ": it is stale and nothing is sent; the broker redelivers the message "
                        + "(flagged redelivered)",
                deliveryTag,
                number);
    }

    /** The refusal of a tag (the application's) whose delivery basic.recover requeued. Any thread. */
    StaleDeliveryException requeuedTag(long deliveryTag) {
        return new StaleDeliveryException(
                "delivery tag " + deliveryTag + " on channel " + number + " is from before basic.recover, which "
                        + "requeued it and made the broker forget its tag: it is stale and nothing is sent; the "
                        + "broker redelivers the message (flagged redelivered)",
                deliveryTag,
                number);
    }
}
