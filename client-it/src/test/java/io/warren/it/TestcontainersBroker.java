package io.warren.it;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.rabbitmq.RabbitMQContainer;
import org.testcontainers.utility.DockerImageName;

/** The last resort of {@link BrokerExtension}: a broker in a container, where a Docker engine runs. */
final class TestcontainersBroker {

    private static RabbitMQContainer container;

    private TestcontainersBroker() {}

    /** Returns the container's AMQP URI, or the reason there is none. */
    static synchronized String tryStart() {
        try {
            if (!DockerClientFactory.instance().isDockerAvailable()) {
                return "no Docker engine available";
            }
            container = new RabbitMQContainer(DockerImageName.parse("rabbitmq:4-management"));
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "rabbitmq-container-stop"));
            return container.getAmqpUrl();
        } catch (Throwable t) {
            return "could not start a RabbitMQ container: " + t;
        }
    }
}
