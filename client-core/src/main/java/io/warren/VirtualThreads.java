package io.warren;

import java.lang.reflect.Method;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;

/**
 * Virtual threads when the runtime has them (JDK 21+), found by reflection so that Warren compiles with
 * {@code --release 17} and runs on 17 without them.
 */
public final class VirtualThreads {

    private static final Executor EXECUTOR = create();

    private VirtualThreads() {}

    private static Executor create() {
        try {
            Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
            return (Executor) factory.invoke(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** Whether this runtime has virtual threads. */
    public static boolean available() {
        return EXECUTOR != null;
    }

    /**
     * A shared executor that runs each task on a new virtual thread. It is never shut down: virtual threads
     * hold no resources when idle.
     *
     * @throws UnsupportedOperationException on a runtime without virtual threads (before JDK 21)
     */
    public static Executor executor() {
        if (EXECUTOR == null) {
            throw new UnsupportedOperationException(
                    "this Java runtime (" + Runtime.version() + ") has no virtual threads; they need JDK 21 or later");
        }
        return EXECUTOR;
    }
}
