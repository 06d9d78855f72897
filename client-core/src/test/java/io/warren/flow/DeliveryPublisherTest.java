package io.warren.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.warren.Channel;
import io.warren.ConsumerHandle;
import io.warren.Delivery;
import io.warren.DeliveryHandler;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import org.junit.jupiter.api.Test;

/**
 * The publisher's signals when its consumer cannot start, against a {@link Channel} whose consume fails: the
 * subscriber gets {@code onSubscribe}, then {@code onError} (Reactive Streams rule 1.9: subscribe itself never
 * throws); and what becomes of the consumer and its delivery when a subscriber breaks rule 2.13 (a signal method
 * throws), against a channel whose consume succeeds at once. The rest of the contract runs against the broker
 * (the TCK, {@code FlowIT}).
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
    private static class Recorder implements Flow.Subscriber<Delivery> {
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

    /**
     * A subscriber whose onSubscribe throws breaks rule 2.13: its subscription is cancelled, no consumer is made and
     * nothing more is signalled, and subscribe returns normally (rule 1.9; before, the exception came out of it).
     */
    @Test
    void aSubscriberWhoseOnSubscribeThrowsIsCancelledAndSubscribeReturns() {
        List<String> calls = new ArrayList<>();
        Recorder subscriber = new Recorder() {
            @Override
            public void onSubscribe(Flow.Subscription subscription) {
                super.onSubscribe(subscription); // requests 1
                throw new IllegalStateException("broken subscriber");
            }
        };
        DeliveryPublisher.of(
                        channel(() -> {
                            calls.add("consume");
                            return CompletableFuture.completedFuture(handle(calls));
                        }),
                        "q")
                .subscribe(subscriber);
        assertEquals(List.of("onSubscribe"), subscriber.signals);
        assertEquals(List.of(), calls, "no consumer");
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

    /** A consumer handle that records the calls made on it; its consumer never ends. */
    private static ConsumerHandle handle(List<String> calls) {
        CompletableFuture<Object> neverEnds = new CompletableFuture<>();
        return (ConsumerHandle) Proxy.newProxyInstance(
                ConsumerHandle.class.getClassLoader(), new Class<?>[] {ConsumerHandle.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "endFuture":
                            return neverEnds;
                        case "cancel":
                            calls.add("cancel");
                            return CompletableFuture.completedFuture(null);
                        case "toString":
                            return "test consumer";
                        default:
                            calls.add(method.getName() + (args == null ? "" : " " + args[0]));
                            return null;
                    }
                });
    }

    /** A manual-ack delivery that records its settlements. */
    private static Delivery delivery(List<String> settlements) {
        return (Delivery) Proxy.newProxyInstance(
                Delivery.class.getClassLoader(), new Class<?>[] {Delivery.class}, (proxy, method, args) -> {
                    if (method.getName().equals("toString")) {
                        return "test delivery";
                    }
                    settlements.add(method.getName() + (args == null ? "" : " " + args[0]));
                    return null;
                });
    }

    /**
     * A subscriber whose onNext throws is treated as cancelled (rule 2.13), and the delivery it was given goes
     * back to the queue: its consumer is cancelled, and a broker keeps a cancelled consumer's unacknowledged
     * deliveries until the channel closes.
     */
    @Test
    void aDeliveryWhoseOnNextThrowsIsRejectedWithRequeueAndTheConsumerCancelled() {
        List<String> calls = new ArrayList<>();
        DeliveryHandler[] handler = new DeliveryHandler[1];
        IllegalStateException broken = new IllegalStateException("onNext fails");
        Recorder subscriber = new Recorder() {
            @Override
            public void onNext(Delivery item) {
                super.onNext(item);
                throw broken;
            }
        };
        DeliveryPublisher.of(consumingChannel(handler, calls), "q").subscribe(subscriber);
        assertEquals(List.of("fetch 1"), calls);
        List<String> settlements = new ArrayList<>();
        assertSame(broken, assertThrows(IllegalStateException.class, () -> handler[0].handle(delivery(settlements))));
        assertEquals(List.of("reject true"), settlements);
        assertEquals(List.of("fetch 1", "pause", "cancel"), calls);
        assertEquals(List.of("onSubscribe", "onNext"), subscriber.signals);
    }

    /**
     * A {@code request(0)} whose onError throws (rule 2.13 broken) still cancels the consumer: the failure
     * reaches the caller of request, and the consumer does not go on taking messages nobody asked for.
     */
    @Test
    void aRequestOfZeroCancelsTheConsumerEvenWhenOnErrorThrows() {
        List<String> calls = new ArrayList<>();
        IllegalStateException broken = new IllegalStateException("onError fails");
        Flow.Subscription[] subscription = new Flow.Subscription[1];
        Recorder subscriber = new Recorder() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscription[0] = s;
                super.onSubscribe(s);
            }

            @Override
            public void onError(Throwable throwable) {
                super.onError(throwable);
                throw broken;
            }
        };
        DeliveryPublisher.of(consumingChannel(new DeliveryHandler[1], calls), "q")
                .subscribe(subscriber);
        assertSame(broken, assertThrows(IllegalStateException.class, () -> subscription[0].request(0)));
        assertEquals(List.of("fetch 1", "pause", "cancel"), calls);
        assertEquals(List.of("onSubscribe", "onError"), subscriber.signals);
        assertInstanceOf(IllegalArgumentException.class, subscriber.error);
    }

    /** A channel whose consume succeeds at once, with {@link #handle}, and keeps the handler it was given. */
    private static Channel consumingChannel(DeliveryHandler[] handler, List<String> calls) {
        return (Channel) Proxy.newProxyInstance(
                Channel.class.getClassLoader(), new Class<?>[] {Channel.class}, (proxy, method, args) -> {
                    if (method.getName().equals("consume")) {
                        handler[0] = (DeliveryHandler) args[2];
                        return CompletableFuture.completedFuture(handle(calls));
                    }
                    if (method.getName().equals("toString")) {
                        return "test channel";
                    }
                    throw new AssertionError("unexpected call: " + method);
                });
    }
}
