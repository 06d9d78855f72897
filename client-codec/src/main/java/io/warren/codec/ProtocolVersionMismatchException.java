package io.warren.codec;

import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;

/**
 * The server answered the client's protocol header with its own: it does not speak AMQP 0-9-1 and
 * tells which protocol it would accept ({@code "AMQP" 0 0 9 1} would be 0-9-1 itself). The server
 * closes the socket right after it.
 */
public final class ProtocolVersionMismatchException extends AmqpProtocolException {

    private static final long serialVersionUID = 1L;

    private final int protocolId;
    private final int major;
    private final int minor;
    private final int revision;

    public ProtocolVersionMismatchException(int protocolId, int major, int minor, int revision) {
        super(
                ReplyCode.FRAME_ERROR,
                "the server does not accept AMQP 0-9-1; it offered protocol header AMQP " + protocolId + "-" + major
                        + "-" + minor + "-" + revision,
                null,
                -1,
                -1,
                -1,
                -1);
        this.protocolId = protocolId;
        this.major = major;
        this.minor = minor;
        this.revision = revision;
    }

    /** The protocol id octet the server sent (0 for AMQP; RabbitMQ's 0-8 header used 1). */
    public int protocolId() {
        return protocolId;
    }

    /** The major version the server offered. */
    public int major() {
        return major;
    }

    /** The minor version the server offered. */
    public int minor() {
        return minor;
    }

    /** The revision the server offered. */
    public int revision() {
        return revision;
    }
}
