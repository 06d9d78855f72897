package io.warren;

/**
 * A synchronous method got no reply within the configured RPC timeout. The channel stays usable: the
 * late reply, when it comes, is matched to the request it answers and dropped.
 */
public class RpcTimeoutException extends AmqpException {

    private static final long serialVersionUID = 1L;

    public RpcTimeoutException(String message, int classId, int methodId, int channelNumber) {
        super(message, null, 0, null, classId, methodId, channelNumber);
    }
}
