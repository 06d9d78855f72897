package io.warren.it.fault;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The fault proxy itself: it relays, and each of its faults does to a client what it says. */
@ExtendWith(BrokerExtension.class)
class FaultProxyIT {

    static ConnectionOptions through(FaultProxy proxy, Broker broker) {
        return ConnectionOptions.fromUri(broker.uri()).address(proxy.host(), proxy.port()).automaticRecovery(false);
    }

    static <T> T await(java.util.concurrent.CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void relaysAndCuts(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker)));
            Channel ch = await(c.openChannel());
            await(ch.queueDeclare(io.warren.QueueDeclare.serverNamed()));
            assertTrue(proxy.activeConnections() == 1);
            proxy.cutAll();
            ConnectionClosedException reason = await(c.closeFuture());
            assertFalse(reason.initiatedByBroker(), reason.toString());
            assertFalse(c.isOpen());
        }
    }

    @Test
    void aStallIsFoundByTheHeartbeatWithinTwoIntervals(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker).requestedHeartbeat(1)
                    ));
            proxy.stall(true);
            long start = System.nanoTime();
            ConnectionClosedException reason = c.closeFuture().toCompletableFuture().get(10, TimeUnit.SECONDS);
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(reason.getMessage().contains("missed heartbeats"), reason.getMessage());
            // Two intervals of silence, counted by a check that ticks every half interval: a frame is noticed
            // at the tick after it (up to half an interval late) and the silence is found at a tick (up to half
            // an interval late again): 3 intervals at worst, plus scheduling slack on a loaded machine.
            assertTrue(millis <= 3_800, "detected after " + millis + " ms");
            proxy.heal();
        }
    }

    @Test
    void delayAndRefusal(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker)));
            Channel ch = await(c.openChannel());
            proxy.delay(Duration.ofMillis(200));
            long start = System.nanoTime();
            await(ch.queueDeclare(io.warren.QueueDeclare.serverNamed()));
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(millis >= 380, "a round trip through a 200 ms delay each way took " + millis + " ms");
            proxy.delay(Duration.ZERO);
            await(c.close());
            proxy.refuseNew(true);
            assertThrows(ExecutionException.class, () -> BrokerExtension.client()
                    .connect(through(proxy, broker).connectionTimeout(Duration.ofSeconds(5)))
                    .toCompletableFuture().get(30, TimeUnit.SECONDS));
        }
    }
}
