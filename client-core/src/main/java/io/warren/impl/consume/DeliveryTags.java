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
     */
    long toBroker(long deliveryTag, boolean multiple) {
        long highestExposed = offset + highest;
        if (deliveryTag > highestExposed) {
            // never delivered here: the broker would close the channel (406 unknown delivery tag), multiple or not
            throw new IllegalArgumentException("delivery tag " + deliveryTag + " was never delivered on channel "
                    + number + " (the highest delivered is " + highestExposed + "): nothing is sent"
                    + (multiple ? "; 0 with multiple=true settles every outstanding delivery" : ""));
        }
        return deliveryTag == 0 ? 0 : deliveryTag - offset;
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
}
