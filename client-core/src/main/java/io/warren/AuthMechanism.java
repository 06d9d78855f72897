package io.warren;

/** The SASL mechanisms Warren speaks in connection.start-ok / secure-ok. */
public enum AuthMechanism {
    /** RFC 4616: {@code \0user\0password}. RabbitMQ's default. */
    PLAIN,
    /** RabbitMQ's legacy mechanism: a field table with LOGIN and PASSWORD, without its size prefix. */
    AMQPLAIN,
    /** The identity comes from the TLS client certificate; the response is empty. Needs amqps. */
    EXTERNAL;

    /** The name the broker lists in connection.start's {@code mechanisms}. */
    public String saslName() {
        return name();
    }
}
