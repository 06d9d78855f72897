package io.warren.impl;

import static io.warren.impl.PublishFixture.expectPublish;
import static io.warren.impl.PublishFixture.failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.Unpooled;
import io.warren.Channel;
import io.warren.ConnectionOptions;
import io.warren.PublishOutcome;
import io.warren.codec.content.BasicProperties;
import io.warren.impl.PublishFixture.Published;
import io.warren.impl.PublishFixture.TrackedBody;
import io.warren.impl.metrics.CountingMetrics;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * A publish made while its channel is being recovered is checked and its names copied as on a channel that is
 * not: a bad argument fails with {@link IllegalArgumentException} at the call, its body released and nothing
 * held, and the route is the one the call named.
 */
class RecoveryPublishArgumentsTest {

    private static final BasicProperties PROPS = BasicProperties.EMPTY;
    private static final String LONG_NAME = "x".repeat(300);

    private final CountingMetrics metrics = new CountingMetrics();

    private static TrackedBody body() {
        return new TrackedBody("m".getBytes(StandardCharsets.UTF_8));
    }

    /** Recovers channel 1 and asserts nothing was held for it. */
    private static void recoveredWithNothingHeld(RecoveringBrokers brokers) {
        FakeBroker second = brokers.cutAndReconnectAfterLoss();
        RecoveringBrokers.reopen(second, 1);
        second.expectNothing();
    }

    @Test
    void namesAreCopiedWhenThePublishIsHeldNotReadAtTheReplay() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            StringBuilder exchange = new StringBuilder("e1");
            StringBuilder routingKey = new StringBuilder("q1");
            ch.publish(exchange, routingKey, false, PROPS, Unpooled.copiedBuffer("m1", StandardCharsets.UTF_8));
            exchange.setLength(0);
            exchange.append("e2");
            routingKey.setLength(0);
            routingKey.append("q2"); // the caller reuses its builders once publish returned
            FakeBroker second = brokers.cutAndReconnectAfterLoss();
            RecoveringBrokers.reopen(second, 1);
            Published p = expectPublish(second, 1);
            assertEquals("e1", p.exchange());
            assertEquals("q1", p.routingKey());
            second.expectNothing();
        }
    }

    @Test
    void publishNoOutcomeWithALongNameThrowsAtTheCall() {
        try (RecoveringBrokers brokers = new RecoveringBrokers(new ConnectionOptions(), metrics)) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            TrackedBody body = body();
            assertThrows(IllegalArgumentException.class, () -> ch.publishNoOutcome("", LONG_NAME, false, PROPS, body));
            body.assertReleasedOnce();
            assertEquals(1, metrics.failedToPublish(), "counted as the publisher counts a refusal");
            recoveredWithNothingHeld(brokers);
        }
    }

    @Test
    void publishWithALongNameFailsItsStageWithIllegalArgument() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            TrackedBody body = body();
            CompletionStage<PublishOutcome> publish = ch.publish(LONG_NAME, "q", false, PROPS, body);
            assertInstanceOf(IllegalArgumentException.class, failure(publish));
            body.assertReleasedOnce();
            recoveredWithNothingHeld(brokers);
        }
    }

    @Test
    void propertiesOverTheFrameMaxFailTheStageWithIllegalArgument() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            // a content header larger than the connection's frame-max of 131072
            BasicProperties large = BasicProperties.builder()
                    .headers(Map.of("big", "h".repeat(140_000)))
                    .build();
            TrackedBody body = body();
            CompletionStage<PublishOutcome> publish = ch.publish("", "q", false, large, body);
            assertInstanceOf(IllegalArgumentException.class, failure(publish));
            body.assertReleasedOnce();
            recoveredWithNothingHeld(brokers);
        }
    }

    @Test
    void aReleasedBodyFailsTheStageWithIllegalArgumentAndIsNotReleasedAgain() {
        try (RecoveringBrokers brokers = new RecoveringBrokers()) {
            Channel ch = brokers.first.openChannel(brokers.connection, 1);
            brokers.cut();
            TrackedBody body = body();
            body.release();
            CompletionStage<PublishOutcome> publish = ch.publish("", "q", false, PROPS, body);
            assertInstanceOf(IllegalArgumentException.class, failure(publish));
            body.assertReleasedOnce();
            recoveredWithNothingHeld(brokers);
        }
    }
}
