package io.warren.impl.connection.sasl;

/**
 * EXTERNAL: the broker takes the identity from outside AMQP, with RabbitMQ from the TLS client
 * certificate (rabbitmq_auth_mechanism_ssl). The response is empty.
 */
public final class ExternalMechanism implements SaslMechanism {

    private static final byte[] EMPTY = new byte[0];

    @Override
    public String name() {
        return "EXTERNAL";
    }

    @Override
    public byte[] initialResponse() {
        return EMPTY;
    }

    @Override
    public byte[] respond(byte[] challenge) {
        return EMPTY;
    }

    @Override
    public String toString() {
        return "EXTERNAL";
    }
}
