package io.warren.impl.connection.sasl;

import io.warren.AuthMechanism;

/**
 * A SASL mechanism as AMQP uses it: connection.start-ok carries the first response, and each
 * connection.secure challenge is answered by secure-ok. The responses hold credentials: never log them.
 */
public interface SaslMechanism {

    /** The mechanism's name as the broker lists it in connection.start. */
    String name();

    /** The response for start-ok. */
    byte[] initialResponse();

    /** The response for secure-ok to {@code challenge}. */
    byte[] respond(byte[] challenge);

    /** The mechanism for {@code mechanism} with these credentials. */
    static SaslMechanism of(AuthMechanism mechanism, String username, String password) {
        return switch (mechanism) {
            case PLAIN -> new PlainMechanism(username, password);
            case AMQPLAIN -> new AmqplainMechanism(username, password);
            case EXTERNAL -> new ExternalMechanism();
        };
    }
}
