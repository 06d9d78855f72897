package io.warren.impl.consume;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.StaleDeliveryException;
import org.junit.jupiter.api.Test;

/** A channel state's delivery tags on their own: the offset across recovery and the refusals. */
class DeliveryTagsTest {

    @Test
    void aRecoveredChannelsTagsAreTheBrokersPlusTheOffset() {
        DeliveryTags tags = new DeliveryTags(3, 100);
        tags.delivered(1);
        tags.delivered(2);
        assertEquals(102, tags.highestExposed());
        tags.checkCurrent(101, false);
        assertEquals(1, tags.toBroker(101, false));
        assertEquals(2, tags.toBroker(102, true));
        assertEquals(0, tags.toBroker(0, true), "0 with multiple stays 0: every outstanding delivery");
    }

    /** A tag going backwards (no broker does it) must not lower the highest: a later offset would reuse tags. */
    @Test
    void aTagGoingBackwardsDoesNotLowerTheHighest() {
        DeliveryTags tags = new DeliveryTags(3, 100);
        tags.delivered(5);
        tags.delivered(3);
        assertEquals(105, tags.highestExposed());
        assertEquals(5, tags.toBroker(105, false), "tag 5 was delivered: it may be settled");
    }

    @Test
    void aTagFromBeforeTheLossIsStale() {
        DeliveryTags tags = new DeliveryTags(3, 100);
        tags.delivered(5);
        StaleDeliveryException e = assertThrows(StaleDeliveryException.class, () -> tags.checkCurrent(100, false));
        assertEquals(100, e.deliveryTag());
        assertEquals(3, e.channelNumber());
        tags.checkCurrent(0, true); // every outstanding delivery: only the new channel's
    }

    @Test
    void everyTagOfALostStateIsStale() {
        DeliveryTags tags = new DeliveryTags(1, 0);
        tags.delivered(7);
        tags.markStale();
        assertThrows(StaleDeliveryException.class, () -> tags.checkCurrent(7, false));
        assertEquals(7, tags.highestExposed(), "the next state's offset");
    }

    /**
     * basic.recover: every tag is stale from the moment it is written until recover-ok (what comes meanwhile was sent
     * before the broker read it), then every tag up to the highest delivered by then; later ones are current.
     */
    @Test
    void theTagsBasicRecoverRequeuedAreStale() {
        DeliveryTags tags = new DeliveryTags(2, 100);
        tags.delivered(1);
        tags.delivered(2);
        assertFalse(tags.isRequeued(2));
        tags.recoverSent();
        tags.delivered(3); // sent before the broker read basic.recover
        assertTrue(tags.isRequeued(3));
        StaleDeliveryException during = assertThrows(StaleDeliveryException.class, () -> tags.toBroker(102, false));
        assertEquals(102, during.deliveryTag());
        assertEquals(2, during.channelNumber());
        tags.recoverOk();
        tags.delivered(4);
        assertTrue(tags.isRequeued(3));
        assertFalse(tags.isRequeued(4));
        assertFalse(tags.isRequeued(0), "0 names no delivery");
        assertThrows(StaleDeliveryException.class, () -> tags.toBroker(103, true), "a multiple one too");
        assertEquals(4, tags.toBroker(104, true));
        assertEquals(0, tags.toBroker(0, true), "every outstanding delivery");
    }

    @Test
    void tagsThatNameNoDeliveryAreRefused() {
        DeliveryTags tags = new DeliveryTags(1, 0);
        tags.delivered(4);
        assertThrows(IllegalArgumentException.class, () -> tags.checkCurrent(-1, true));
        assertThrows(IllegalArgumentException.class, () -> tags.checkCurrent(0, false));
        assertThrows(IllegalArgumentException.class, () -> tags.toBroker(5, false), "never delivered");
        assertEquals(4, tags.toBroker(4, false));
    }
}
