package io.warren;

/**
 * A connection attempt (TCP connect, TLS handshake and AMQP handshake together) did not finish within
 * the connection timeout. The message names the address and the stage the attempt had reached.
 */
public class ConnectionTimeoutException extends AmqpException {

    private static final long serialVersionUID = 1L;

    public ConnectionTimeoutException(String message) {
        super(message);
    }
}
