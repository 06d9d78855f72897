package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.util.concurrent.FastThreadLocalThread;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import org.junit.jupiter.api.Test;

/**
 * Every options type has the same shape: a no-arg constructor with the defaults, a copy constructor, fluent setters
 * that validate at once, plain getters. A copy shares nothing mutable with its original, so what the client keeps
 * (the connection's options, a consumer's) does not change when the application reuses its object.
 */
class OptionsCopyTest {

    @Test
    void aConsumeOptionsCopyIsIndependentOfItsOriginal() {
        Executor executor = Runnable::run;
        ConsumeOptions original = new ConsumeOptions()
                .consumerTag("c")
                .prefetch(10)
                .priority(3)
                .executor(executor)
                .concurrency(2)
                .waterMarks(5, 50)
                .initialDemand(7)
                .dropOverflow(true);
        ConsumeOptions copy = new ConsumeOptions(original);
        original.consumerTag("x")
                .prefetch(99)
                .priority(9)
                .argument("x-other", 1)
                .noAck(true)
                .exclusive(true)
                .executor(null)
                .concurrency(1)
                .waterMarks(1, 2)
                .initialDemand(0)
                .dropOverflow(false);
        assertEquals("c", copy.consumerTag());
        assertEquals(10, copy.prefetch());
        assertEquals(Map.of("x-priority", 3), copy.arguments());
        assertSame(executor, copy.executor());
        assertEquals(2, copy.concurrency());
        assertEquals(List.of(5, 50), List.of(copy.lowWaterMark(), copy.highWaterMark()));
        assertEquals(7, copy.initialDemand());
        assertTrue(copy.dropOverflow());
        assertFalse(copy.noAck());
        assertFalse(copy.exclusive());
    }

    /** Refused when set, not after start-ok or tune-ok is on the wire (where it was an "I/O failure" each attempt). */
    @Test
    void connectionOptionsRefuseAVirtualHostOrClientPropertyTheHandshakeCannotCarry() {
        ConnectionOptions o = new ConnectionOptions();
        assertThrows(IllegalArgumentException.class, () -> o.virtualHost("v".repeat(256)));
        assertThrows(IllegalArgumentException.class, () -> o.virtualHost("\ud800"));
        assertEquals("/", o.virtualHost(), "a refused value leaves the options as they were");
        o.virtualHost("é".repeat(127));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> o.clientProperty("id", java.util.UUID.randomUUID()));
        assertTrue(e.getMessage().contains("id"), e.getMessage());
        assertFalse(o.clientProperties().containsKey("id"));
        o.clientProperty("id", "a string");
        o.clientProperty("nested", Map.of("n", 1L));
    }

    @Test
    void consumeOptionsHaveTheDefaultsAndRefuseBadValuesAtTheSetter() {
        ConsumeOptions o = new ConsumeOptions();
        assertEquals("", o.consumerTag());
        assertEquals(-1, o.prefetch(), "unset: the channel's qos or DEFAULT_PREFETCH applies");
        assertNull(o.executor());
        assertEquals(1, o.concurrency());
        assertEquals(
                List.of(ConsumeOptions.DEFAULT_LOW_WATER_MARK, ConsumeOptions.DEFAULT_HIGH_WATER_MARK),
                List.of(o.lowWaterMark(), o.highWaterMark()));
        assertEquals(Long.MAX_VALUE, o.initialDemand());
        assertThrows(IllegalArgumentException.class, () -> o.prefetch(-1));
        assertThrows(IllegalArgumentException.class, () -> o.prefetch(65_536));
        assertThrows(IllegalArgumentException.class, () -> o.concurrency(0));
        assertThrows(IllegalArgumentException.class, () -> o.waterMarks(0, 1));
        assertThrows(IllegalArgumentException.class, () -> o.waterMarks(3, 2));
        assertThrows(IllegalArgumentException.class, () -> o.initialDemand(-1));
        assertThrows(IllegalArgumentException.class, () -> o.streamOffset(-1L));
        assertThrows(NullPointerException.class, () -> o.consumerTag(null));
        assertEquals(-1, o.prefetch(), "a refused value leaves the options as they were");
        assertThrows(UnsupportedOperationException.class, () -> o.arguments().put("x", 1));
    }

    @Test
    void aConnectionOptionsCopyIsIndependentDownToItsNestedOptions() {
        TlsOptions tls = new TlsOptions().serverName("broker.example");
        ConnectionOptions original = new ConnectionOptions()
                .username("u")
                .tls(tls)
                .clientProperty("k", "v")
                .publishOptions(new PublishOptions().maxOutstandingConfirms(10))
                .recovery(new RecoveryOptions().maxAttempts(3));
        ConnectionOptions copy = new ConnectionOptions(original);
        original.username("changed").clientProperty("k", "changed").automaticRecovery(false);
        tls.serverName("changed").hostnameVerification(false);
        assertEquals("u", copy.username());
        assertEquals("v", copy.clientProperties().get("k"));
        assertTrue(copy.recovery().enabled());
        assertEquals(3, copy.recovery().maxAttempts());
        assertEquals("broker.example", copy.tls().serverName());
        assertTrue(copy.tls().hostnameVerification());
    }

    @Test
    void nestedOptionsAreCopiedWhenSetAndWhenRead() {
        PublishOptions publish = new PublishOptions().maxOutstandingConfirms(10);
        RecoveryOptions recovery = new RecoveryOptions().maxAttempts(3);
        ConnectionOptions options =
                new ConnectionOptions().publishOptions(publish).recovery(recovery);
        publish.maxOutstandingConfirms(20);
        recovery.maxAttempts(4).enabled(false);
        options.publishOptions().maxOutstandingConfirms(30);
        options.recovery().maxAttempts(5);
        assertEquals(10, options.publishOptions().maxOutstandingConfirms());
        assertEquals(3, options.recovery().maxAttempts());
        assertTrue(options.recovery().enabled());
    }

    @Test
    void theOtherOptionsCopiesAreIndependentToo() {
        PublishOptions publish = new PublishOptions().maxPendingBytes(1 << 20).callerWriteGap(Duration.ZERO);
        PublishOptions publishCopy = new PublishOptions(publish);
        publish.maxPendingBytes(1 << 21).callerWriteGap(Duration.ofMillis(1));
        assertEquals(1 << 20, publishCopy.maxPendingBytes());
        assertEquals(Duration.ZERO, publishCopy.callerWriteGap());

        RecoveryOptions recovery = new RecoveryOptions().maxDuration(Duration.ofMinutes(1));
        RecoveryOptions recoveryCopy = new RecoveryOptions(recovery);
        recovery.maxDuration(null).topologyRecovery(false);
        assertEquals(Duration.ofMinutes(1), recoveryCopy.maxDuration());
        assertTrue(recoveryCopy.topologyRecovery());

        TlsOptions tls = new TlsOptions().protocols(List.of("TLSv1.3"));
        TlsOptions tlsCopy = new TlsOptions(tls);
        tls.protocols(List.of("TLSv1.2")).serverName("x");
        assertEquals(List.of("TLSv1.3"), tlsCopy.protocols());
        assertNull(tlsCopy.serverName());

        ThreadFactory threads = Thread::new;
        ClientOptions client =
                new ClientOptions().ioThreads(2).metricsEnabled(true).threadFactory(threads);
        ClientOptions clientCopy = new ClientOptions(client);
        client.ioThreads(4).metricsEnabled(false).threadFactory(Thread::new);
        assertEquals(2, clientCopy.ioThreads());
        assertTrue(clientCopy.metricsEnabled());
        assertSame(threads, clientCopy.threadFactory());
    }

    @Test
    void clientOptionsHaveTheDefaultsAndRefuseBadValuesAtTheSetter() {
        ClientOptions o = new ClientOptions();
        assertNull(o.eventLoopGroup());
        assertEquals(0, o.ioThreads());
        assertTrue(o.preferNativeTransport());
        assertFalse(o.metricsEnabled());
        // the default loop threads: Netty's, daemons, named for Warren (made here, never started)
        Thread loopThread = o.threadFactory().newThread(() -> {});
        assertInstanceOf(FastThreadLocalThread.class, loopThread);
        assertTrue(loopThread.isDaemon());
        assertTrue(loopThread.getName().startsWith("warren-io-"), loopThread.getName());
        ThreadFactory before = o.threadFactory();
        assertThrows(NullPointerException.class, () -> o.threadFactory(null));
        assertThrows(IllegalArgumentException.class, () -> o.ioThreads(-1));
        assertSame(before, o.threadFactory(), "a refused value leaves the options as they were");
        assertEquals(0, o.ioThreads());
    }
}
