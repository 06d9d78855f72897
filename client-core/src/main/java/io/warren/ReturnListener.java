package io.warren;

/**
 * Receives the messages the broker returns (basic.return): mandatory publishes no queue took. Runs on the
 * connection's event loop and must not block. The message and its body are valid only during the call
 * (see {@link ReturnedMessage}).
 */
@FunctionalInterface
public interface ReturnListener {

    void onReturn(ReturnedMessage message);
}
