package io.warren.perf;

import io.netty.util.internal.PlatformDependent;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;

/**
 * The process's direct memory: the JDK's direct buffer pool ({@link BufferPoolMXBean} "direct": every direct
 * {@code ByteBuffer}, Netty's pooled chunks and the JDK's temporary socket buffers among them) plus what Netty
 * allocated without a cleaner, which that pool does not see. Netty's own counter also counts what it allocated with a
 * cleaner (its chunks, in Netty 4.2), which the JDK's pool already holds: it is added only when Netty allocates
 * without one, or those chunks would count twice.
 */
public final class DirectMemory {

    private static final BufferPoolMXBean JDK = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
            .filter(b -> b.getName().equals("direct"))
            .findFirst()
            .orElse(null);
    private static final boolean NO_CLEANER = PlatformDependent.useDirectBufferNoCleaner();

    private DirectMemory() {}

    /** Whether this JVM reports direct memory at all. */
    public static boolean measured() {
        return JDK != null || PlatformDependent.usedDirectMemory() >= 0;
    }

    /** Bytes in the JDK's direct buffer pool. */
    public static long jdkUsed() {
        return JDK == null ? 0 : Math.max(0, JDK.getMemoryUsed());
    }

    /** Bytes Netty allocated without a cleaner (not in the JDK's pool); 0 when it uses cleaners. */
    public static long nettyNoCleanerUsed() {
        return NO_CLEANER ? Math.max(0, PlatformDependent.usedDirectMemory()) : 0;
    }

    /** All direct memory in use: {@link #jdkUsed()} + {@link #nettyNoCleanerUsed()}. */
    public static long used() {
        return jdkUsed() + nettyNoCleanerUsed();
    }

    /**
     * Direct memory in use outside Netty's allocators: the JDK's pool less the chunks Netty allocated with a cleaner
     * (which it also counts). What a client that does not run on Netty holds, when an earlier client's Netty pools
     * (kept for the JVM's life) share its process. Where Netty keeps no count (its counter reads -1) nothing can be
     * left out: all the JDK's pool.
     */
    public static long usedOutsideNetty() {
        return NO_CLEANER ? jdkUsed() : Math.max(0, jdkUsed() - Math.max(0, PlatformDependent.usedDirectMemory()));
    }
}
