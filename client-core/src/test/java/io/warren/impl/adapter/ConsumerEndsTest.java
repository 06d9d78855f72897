package io.warren.impl.adapter;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.AmqpException;
import io.warren.ChannelClosedException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionLostException;
import io.warren.codec.base.ReplyCode;
import org.junit.jupiter.api.Test;

/** Which consumer ends both stream adapters treat as the stream's orderly end. */
class ConsumerEndsTest {

    private static ChannelClosedException channelClosed(int code, Throwable cause, boolean byBroker) {
        return new ChannelClosedException("channel 1 closed", cause, code, "text", 0, 0, 1, byBroker);
    }

    private static ConnectionClosedException connectionClosed(int code, Throwable cause, boolean byBroker) {
        return new ConnectionClosedException("connection closed", cause, code, "text", 0, 0, byBroker);
    }

    @Test
    void theApplicationsOwnCloseWithReplyCode200IsAnOrderlyEnd() {
        assertTrue(ConsumerEnds.closedByTheApplication(channelClosed(ReplyCode.REPLY_SUCCESS, null, false)));
        assertTrue(ConsumerEnds.closedByTheApplication(connectionClosed(ReplyCode.REPLY_SUCCESS, null, false)));
    }

    @Test
    void theBrokersClosesAnotherReplyCodeAnErrorBehindItOrALossAreNot() {
        assertFalse(ConsumerEnds.closedByTheApplication(channelClosed(ReplyCode.REPLY_SUCCESS, null, true)));
        assertFalse(ConsumerEnds.closedByTheApplication(connectionClosed(ReplyCode.REPLY_SUCCESS, null, true)));
        assertFalse(ConsumerEnds.closedByTheApplication(channelClosed(ReplyCode.PRECONDITION_FAILED, null, false)));
        assertFalse(ConsumerEnds.closedByTheApplication(
                channelClosed(ReplyCode.REPLY_SUCCESS, new IllegalStateException("behind it"), false)));
        assertFalse(ConsumerEnds.closedByTheApplication(connectionClosed(0, new java.io.IOException("reset"), false)));
        assertFalse(ConsumerEnds.closedByTheApplication(
                new ConnectionLostException("lost", connectionClosed(ReplyCode.REPLY_SUCCESS, null, false))));
        assertFalse(ConsumerEnds.closedByTheApplication(new AmqpException("other", null)));
    }
}
