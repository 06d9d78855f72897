package io.warren.impl.connection;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandle;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.nio.NioIoHandler;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The socket transport: io_uring, then epoll, then NIO. The native ones are looked up by reflection
 * (Warren does not depend on them): a user who puts {@code netty-transport-native-io_uring} or
 * {@code -epoll} on the classpath gets it, others get NIO.
 */
public record Transport(
        String name,
        IoHandlerFactory ioHandlerFactory,
        Class<? extends Channel> channelClass,
        Class<? extends IoHandle> ioHandleClass) {

    private static final Logger LOG = LoggerFactory.getLogger(Transport.class);

    private static final String[][] NATIVE = {
        // name, availability class, io handler class, socket channel class, the channels' IoHandle class
        {
            "io_uring",
            "io.netty.channel.uring.IoUring",
            "io.netty.channel.uring.IoUringIoHandler",
            "io.netty.channel.uring.IoUringSocketChannel",
            "io.netty.channel.uring.AbstractIoUringChannel$AbstractUringUnsafe"
        },
        {
            "epoll",
            "io.netty.channel.epoll.Epoll",
            "io.netty.channel.epoll.EpollIoHandler",
            "io.netty.channel.epoll.EpollSocketChannel",
            "io.netty.channel.epoll.AbstractEpollChannel$AbstractEpollUnsafe"
        },
    };

    /** What Netty's NIO channels register with an IoEventLoop (see AbstractNioChannel#isCompatible). */
    private static final String NIO_HANDLE = "io.netty.channel.nio.AbstractNioChannel$AbstractNioUnsafe";

    public static Transport nio() {
        return new Transport("nio", NioIoHandler.newFactory(), DirectNioSocketChannel.class, handle(NIO_HANDLE));
    }

    private static Class<? extends IoHandle> handle(String name) {
        try {
            return Class.forName(name, false, Transport.class.getClassLoader()).asSubclass(IoHandle.class);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /** The best available transport for a group Warren creates. */
    public static Transport best(boolean preferNative) {
        if (preferNative) {
            List<Transport> found = natives();
            if (!found.isEmpty()) {
                return found.get(0);
            }
        }
        return nio();
    }

    /**
     * The socket channel class for a group the application gave: the first transport whose channel the
     * group's event loops accept.
     *
     * @throws IllegalArgumentException when the group's loops accept no socket channel: a loop without an
     *                                  {@link IoEventLoop}'s handler ({@code DefaultEventLoopGroup}'s) would
     *                                  fail every connect at registration
     */
    public static Class<? extends Channel> channelClassFor(EventLoopGroup group) {
        EventLoop loop = group.next();
        if (!(loop instanceof IoEventLoop io)) {
            // Netty 4.2's socket channels register an IoHandle, which only an IoEventLoop serves
            throw new IllegalArgumentException(
                    "the event loop group " + group.getClass().getName()
                            + " runs no IoEventLoop (a MultiThreadIoEventLoopGroup's loops), so no socket channel can "
                            + "register on it");
        }
        // The loop says which IoHandle types it serves; each transport's channels register one.
        for (Transport t : natives()) {
            if (t.ioHandleClass != null && io.isCompatible(t.ioHandleClass)) {
                return t.channelClass;
            }
        }
        Class<? extends IoHandle> nio = handle(NIO_HANDLE);
        if (nio != null && !io.isCompatible(nio)) {
            throw new IllegalArgumentException("the event loop group "
                    + group.getClass().getName() + " accepts none of the io_uring, epoll or NIO socket channels");
        }
        return DirectNioSocketChannel.class;
    }

    /**
     * Whether {@code channel} is one of the native transports' socket channels, which copy a heap buffer into direct
     * memory when it is written and hold the copy until the socket took it. By name: no class is loaded.
     */
    public static boolean isNative(Channel channel) {
        String name = channel.getClass().getName();
        for (String[] n : NATIVE) {
            if (n[3].equals(name)) {
                return true;
            }
        }
        return false;
    }

    private static List<Transport> natives() {
        List<Transport> found = new ArrayList<>(2);
        ClassLoader cl = Transport.class.getClassLoader();
        for (String[] n : NATIVE) {
            try {
                Class<?> availability = Class.forName(n[1], true, cl);
                Method isAvailable = availability.getMethod("isAvailable");
                if (!(Boolean) isAvailable.invoke(null)) {
                    continue;
                }
                IoHandlerFactory factory = (IoHandlerFactory)
                        Class.forName(n[2], true, cl).getMethod("newFactory").invoke(null);
                Class<? extends Channel> channelClass =
                        Class.forName(n[3], true, cl).asSubclass(Channel.class);
                found.add(new Transport(n[0], factory, channelClass, handle(n[4])));
            } catch (ClassNotFoundException | LinkageError e) {
                // not on the classpath: fine
            } catch (ReflectiveOperationException | RuntimeException e) {
                LOG.debug("transport {} present but not usable", n[0], e);
            }
        }
        return found;
    }
}
