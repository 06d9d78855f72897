package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Warren as named modules: {@code io.warren.core} and {@code io.warren.codec} resolved on a module path made of
 * the real jars (Netty's, JCTools', SLF4J's modules; none of the optional ones), loaded in a module layer of
 * their own, and used to connect to the broker through the exported API only. The tests elsewhere run on the
 * class path, so this is where the module descriptors are proven.
 */
@ExtendWith(BrokerExtension.class)
class ModulePathIT {

    private static Path jarOf(String className) throws Exception {
        Class<?> c = Class.forName(className, false, ModulePathIT.class.getClassLoader());
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    private static ModuleLayer warrenLayer() throws Exception {
        Set<Path> modulePath = new LinkedHashSet<>();
        for (String c : List.of(
                "io.warren.AmqpClient",
                "io.warren.codec.Frame",
                "io.netty.buffer.ByteBuf",
                "io.netty.util.ReferenceCounted",
                "io.netty.channel.Channel",
                "io.netty.resolver.AddressResolver",
                "io.netty.handler.ssl.SslContext",
                "io.netty.handler.codec.ByteToMessageDecoder",
                "io.netty.channel.unix.Socket",
                "org.jctools.queues.MpscArrayQueue",
                "org.slf4j.Logger")) {
            modulePath.add(jarOf(c));
        }
        ModuleFinder finder = ModuleFinder.of(modulePath.toArray(Path[]::new));
        Configuration config =
                ModuleLayer.boot().configuration().resolve(finder, ModuleFinder.of(), Set.of("io.warren.core"));
        return ModuleLayer.boot().defineModulesWithOneLoader(config, ClassLoader.getPlatformClassLoader());
    }

    @Test
    void theModulesResolveWithoutTheOptionalOnesAndExportOnlyTheApi() throws Exception {
        ModuleLayer layer = warrenLayer();
        Module core = layer.findModule("io.warren.core").orElseThrow();
        Module codec = layer.findModule("io.warren.codec").orElseThrow();
        assertTrue(
                core.getDescriptor().isAutomatic() == false
                        && codec.getDescriptor().isAutomatic() == false,
                "real module descriptors, not automatic modules");
        for (String p : List.of(
                "io.warren",
                "io.warren.credentials",
                "io.warren.rpc",
                "io.warren.vertx",
                "io.warren.micrometer",
                "io.warren.otel")) {
            assertTrue(core.isExported(p), p + " exported");
        }
        for (String p : core.getPackages()) {
            if (p.startsWith("io.warren.impl")) {
                assertFalse(core.isExported(p), p + " must not be exported");
            }
        }
        assertTrue(codec.isExported("io.warren.codec.content"));
        assertTrue(codec.isExported("io.warren.codec.base"));
        assertFalse(codec.isExported("io.warren.codec.impl"), "raw memory reads stay inside the codec");
        assertFalse(layer.findModule("io.vertx.core").isPresent(), "Vert.x is optional");
        assertFalse(layer.findModule("micrometer.core").isPresent(), "Micrometer is optional");
    }

    @Test
    void aConnectionMadeFromTheModuleLayer(Broker broker) throws Exception {
        ClassLoader loader = warrenLayer().findLoader("io.warren.core");
        Class<?> clientClass = loader.loadClass("io.warren.AmqpClient");
        assertEquals("io.warren.core", clientClass.getModule().getName());
        Object client = clientClass.getMethod("create").invoke(null);
        try {
            Object connection = ((CompletionStage<?>)
                            clientClass.getMethod("connect", String.class).invoke(client, broker.uri()))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            Class<?> connectionApi = loader.loadClass("io.warren.Connection");
            assertEquals(Boolean.TRUE, connectionApi.getMethod("isOpen").invoke(connection));
            Object channel = ((CompletionStage<?>)
                            connectionApi.getMethod("openChannel").invoke(connection))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            Method declare = loader.loadClass("io.warren.Channel").getMethod("queueDeclare", String.class);
            Object ok = ((CompletionStage<?>) declare.invoke(channel, ""))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            assertTrue(ok.toString().contains("amq.gen-"), ok.toString());
            ((CompletionStage<?>) connectionApi.getMethod("close").invoke(connection))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
        } finally {
            ((CompletionStage<?>) clientClass.getMethod("close").invoke(client))
                    .toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
        }
    }
}
