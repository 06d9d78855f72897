package io.warren.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.warren.Channel;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import org.junit.jupiter.api.Test;

/**
 * The publisher's signals when its consumer cannot start, against a {@link Channel} whose consume fails: the
 * subscriber gets {@code onSubscribe}, then {@code onError} (Reactive Streams rule 1.9: subscribe itself never
 * throws). The rest of the contract runs against the broker (the TCK, {@code FlowIT}).
 */
class DeliveryPublisherTest {

    /** A channel whose consume answers {@code consume}'s way; any other method is not expected. */
    private interface Consume {
        Object consume() throws Throwable;
    }

    private static Channel channel(Consume consume) {
        return (Channel) Proxy.newProxyInstance(
                Channel.class.getClassLoader(), new Class<?>[] {Channel.class}, (proxy, method, args) -> {
                    if (method.getName().equals("consume")) {
                        return consume.consume();
                    }
                    if (method.getName().equals("toString")) {
                        return "test channel";
                    }
                    throw new AssertionError("unexpected call: " + method);
                });
    }

    /** Records the signals in order; everything here runs on the test thread. */
    private static final class Recorder implements Flow.Subscriber<Delivery> {
        final List<String> signals = new ArrayList<>();
        Throwable error;

        @Override
        public void onSubscribe(Flow.Subscription subscription) {
            signals.add("onSubscribe");
            subscription.request(1);
        }

        @Override
        public void onNext(Delivery item) {
            signals.add("onNext");
        }

        @Override
        public void onError(Throwable throwable) {
            signals.add("onError");
            error = throwable;
        }

        @Override
        public void onComplete() {
            signals.add("onComplete");
        }
    }

    @Test
    void aConsumeThatThrowsIsOnSubscribeThenOnError() {
        IllegalStateException refused = new IllegalStateException("the channel refuses");
        Recorder subscriber = new Recorder();
        DeliveryPublisher.of(
                        channel(() -> {
                            throw refused;
                        }),
                        "q")
                .subscribe(subscriber);
        assertEquals(List.of("onSubscribe", "onError"), subscriber.signals);
        assertSame(refused, subscriber.error);
    }

    @Test
    void aConsumeWhoseStageFailsIsOnSubscribeThenOnErrorWithTheCause() {
        IllegalArgumentException refused = new IllegalArgumentException("bad argument");
        Recorder subscriber = new Recorder();
        DeliveryPublisher.of(channel(() -> CompletableFuture.<ConsumerHandle>failedFuture(refused)), "q")
                .subscribe(subscriber);
        assertEquals(List.of("onSubscribe", "onError"), subscriber.signals);
        assertSame(refused, subscriber.error);
    }
}
