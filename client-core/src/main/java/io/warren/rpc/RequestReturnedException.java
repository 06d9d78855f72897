package io.warren.rpc;

import io.warren.AmqpException;

/**
 * An RPC request no queue took: the broker returned it (basic.return, 312 NO_ROUTE), so no server will ever
 * answer. {@link #replyCode()} and {@link #replyText()} are the return's.
 */
public class RequestReturnedException extends AmqpException {

    private static final long serialVersionUID = 1L;

    public RequestReturnedException(String message, int replyCode, String replyText, int channelNumber) {
        super(message, null, replyCode, replyText, 60, 50, channelNumber);
    }
}
