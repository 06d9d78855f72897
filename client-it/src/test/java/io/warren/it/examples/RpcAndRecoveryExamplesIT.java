package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import io.warren.it.BrokerExtension.TestNames;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs the README's RPC and recovery-settings examples against the broker. */
@ExtendWith(BrokerExtension.class)
class RpcAndRecoveryExamplesIT {

    @Test
    void theRpcExampleAnswers(Connection connection, TestNames names) throws Exception {
        String queue = names.queue("upper-case");
        Channel serverChannel = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        RpcExample.serve(serverChannel, queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
        Channel clientChannel = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(
                "HELLO, WARREN",
                RpcExample.call(clientChannel, queue, "hello, Warren")
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS));
    }

    @Test
    void theRpcMainRuns(Broker broker) {
        RpcExample.main(new String[] {broker.uri()});
    }

    @Test
    void theRecoverySettingsConnect(Broker broker) throws Exception {
        Connection c = RecoverySettingsExample.connect(BrokerExtension.client(), broker.uri())
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        try {
            assertTrue(c.isOpen());
            assertEquals("orders-service", c.name());
        } finally {
            c.close().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        RecoverySettingsExample.main(new String[] {broker.uri()});
    }
}
