package io.warren.impl.connection;

import io.netty.channel.socket.nio.NioSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * Netty's NIO socket channel, with its JDK socket open to {@link OutboundPath}: a publishing thread that holds the
 * path's writer token writes a message to it directly instead of handing it to the event loop (see the path's class
 * comment for why that is safe). Nothing else is changed.
 */
public final class DirectNioSocketChannel extends NioSocketChannel {

    /** The JDK channel under this one. */
    SocketChannel socket() {
        return javaChannel();
    }
}
