package io.warren.bench.consume;

import com.rabbitmq.client.ConnectionFactory;
import io.warren.perf.AmqpClientDriver;

/** Fills and deletes the broker queues the broker runs drain, with amqp-client (outside the measured window). */
final class BrokerQueue {

    private BrokerQueue() {}

    static void fill(String uri, String queue, int messages, int size) throws Exception {
        ConnectionFactory f = AmqpClientDriver.factory(uri); // a refused URI is named without its password
        try (com.rabbitmq.client.Connection c = f.newConnection("consume-bench-fill");
                com.rabbitmq.client.Channel ch = c.createChannel()) {
            ch.queueDeclare(queue, false, false, false, null);
            ch.confirmSelect();
            byte[] body = new byte[size];
            for (int i = 0; i < messages; i++) {
                ch.basicPublish("", queue, null, body);
                if (i % 5000 == 4999) {
                    ch.waitForConfirmsOrDie(60_000);
                }
            }
            ch.waitForConfirmsOrDie(60_000);
        }
    }

    static void delete(String uri, String queue) throws Exception {
        ConnectionFactory f = AmqpClientDriver.factory(uri); // a refused URI is named without its password
        try (com.rabbitmq.client.Connection c = f.newConnection("consume-bench-cleanup");
                com.rabbitmq.client.Channel ch = c.createChannel()) {
            ch.queueDelete(queue);
        }
    }
}
