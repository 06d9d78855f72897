package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.channel.epoll.Epoll;
import io.warren.AmqpClient;
import io.warren.ClientOptions;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * warren-perf's {@code --transport native}: the epoll library it carries (linux-x86_64, at the version of the epoll
 * classes and unix-common this module pins) loads on Linux x86-64, so Warren runs on it there; elsewhere Warren runs
 * on NIO. A version mismatch between the library and its classes fails here, not silently in a run.
 */
class NativeTransportTest {

    @Test
    void nativeMeansEpollOnLinuxX86AndNioElsewhere() throws Exception {
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch");
        boolean linuxX86 = os.contains("linux") && (arch.equals("amd64") || arch.equals("x86_64"));
        assertEquals(
                linuxX86,
                Epoll.isAvailable(),
                () -> "epoll on " + os + "/" + arch + ": " + Epoll.unavailabilityCause());
        AmqpClient client = AmqpClient.create(
                new ClientOptions().preferNativeTransport(true).ioThreads(1));
        try {
            assertEquals(linuxX86 ? "epoll" : "nio", client.transport());
        } finally {
            client.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        AmqpClient nio = AmqpClient.create(
                new ClientOptions().preferNativeTransport(false).ioThreads(1));
        try {
            assertEquals("nio", nio.transport(), "warren-perf's default");
        } finally {
            nio.close().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }
}
