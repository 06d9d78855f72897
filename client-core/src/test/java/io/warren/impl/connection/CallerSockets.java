package io.warren.impl.connection;

import java.nio.channels.SocketChannel;

/** For tests: the JDK socket a caller writes to under the writer token (to make it refuse writes). */
public final class CallerSockets {

    private CallerSockets() {}

    /** The JDK socket under {@code path}'s channel; the channel must be Warren's NIO channel. */
    public static SocketChannel socket(OutboundPath path) {
        return ((DirectNioSocketChannel) path.channel()).socket();
    }
}
