package io.warren;

/**
 * The broker refused the credentials (RabbitMQ closes with 403 ACCESS_REFUSED during the handshake), or
 * the requested SASL mechanism is not offered by the broker.
 */
public class AuthenticationException extends ConnectionClosedException {

    private static final long serialVersionUID = 1L;

    public AuthenticationException(
            String message, Throwable cause, int replyCode, String replyText, int classId, int methodId) {
        super(message, cause, replyCode, replyText, classId, methodId, true);
    }
}
