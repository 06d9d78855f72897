package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.warren.Channel;
import io.warren.Connection;
import io.warren.DeclaredQueue;
import io.warren.QueueSpec;
import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import io.warren.it.BrokerExtension.TestNames;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs the README's example against the broker, and checks what it declared through the broker. */
@ExtendWith(BrokerExtension.class)
class ConnectAndDeclareExampleIT {

    @Test
    void theExampleDeclaresAndBinds(Broker broker, Connection connection, TestNames names) throws Exception {
        String exchange = names.exchange("orders");
        String queue = names.queue("orders.eu");
        DeclaredQueue ok = ConnectAndDeclareExample.declare(BrokerExtension.client(), broker.uri(), exchange, queue)
                .toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        assertEquals(queue, ok.queue());
        assertEquals(0, ok.messageCount());
        Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(
                queue,
                ch.queueDeclare(QueueSpec.passive(queue))
                        .toCompletableFuture()
                        .get(30, TimeUnit.SECONDS)
                        .queue());
        ch.queueUnbind(queue, exchange, "eu.#").toCompletableFuture().get(30, TimeUnit.SECONDS);
        ch.queueDelete(queue).toCompletableFuture().get(30, TimeUnit.SECONDS);
        ch.exchangeDelete(exchange).toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void mainRuns(Broker broker, Connection connection) throws Exception {
        ConnectAndDeclareExample.main(new String[] {broker.uri()});
        Channel ch = connection.openChannel().toCompletableFuture().get(30, TimeUnit.SECONDS);
        ch.queueDelete("orders.eu").toCompletableFuture().get(30, TimeUnit.SECONDS);
        ch.exchangeDelete("orders").toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
}
