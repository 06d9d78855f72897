package io.warren.it.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        return ConnectionOptions.fromUri(broker.uri())
                .address(proxy.host(), proxy.port())
                .automaticRecovery(false);
    }

    static <T> T await(java.util.concurrent.CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void relaysAndCuts(Broker broker) throws Exception {
        try (FaultProxy proxy = new FaultProxy(broker.host(), broker.port())) {
            Connection c = await(BrokerExtension.client().connect(through(proxy, broker)));
            Channel ch = await(c.openChannel());
            await(ch.queueDeclare(io.warren.QueueSpec.serverNamed()));
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
            Connection c = await(
                    BrokerExtension.client().connect(through(proxy, broker).requestedHeartbeat(1)));
            assertEquals(1, c.heartbeat(), "negotiated heartbeat interval (s)");
            proxy.stall(true);
            // The wait only keeps a broken build from hanging: how fast the stall is found is measured by
            // benchmarks, not asserted here. What is asserted is the cause: the heartbeat check closed the
            // connection after two 1 s intervals of silence (not the socket, not the broker, not a timeout).
            ConnectionClosedException reason =
                    c.closeFuture().toCompletableFuture().get(30, TimeUnit.SECONDS);
            assertFalse(reason.initiatedByBroker(), reason.toString());
            assertTrue(reason.getMessage().contains("missed heartbeats"), reason.getMessage());
            assertTrue(reason.getMessage().contains("two heartbeat intervals of 1 s"), reason.getMessage());
            assertFalse(c.isOpen());
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
            await(ch.queueDeclare(io.warren.QueueSpec.serverNamed()));
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(millis >= 380, "a round trip through a 200 ms delay each way took " + millis + " ms");
            proxy.delay(Duration.ZERO);
            await(c.close());
            proxy.refuseNew(true);
            assertThrows(
                    ExecutionException.class,
                    () -> BrokerExtension.client()
                            .connect(through(proxy, broker).connectionTimeout(Duration.ofSeconds(5)))
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS));
        }
    }
}
