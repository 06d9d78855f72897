package io.warren;

/**
 * A request got no reply in time: a synchronous AMQP method (queue.declare, basic.qos, ...) within the
 * connection's RPC timeout, or an {@link io.warren.rpc.RpcClient} call within its timeout. The channel (and the
 * RPC client) stays usable: the late reply, when it comes, is matched to the request it answers and dropped.
 * The class and method ids name the AMQP method that went unanswered; both are 0 for an RPC client call.
 */
public class RpcTimeoutException extends AmqpException {

    private static final long serialVersionUID = 1L;

    public RpcTimeoutException(String message, int classId, int methodId, int channelNumber) {
        super(message, null, 0, null, classId, methodId, channelNumber);
    }
}
