package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.IoEventLoop;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The client's own event loops: handed out in turn, and their termination told without Netty's global executor. */
class ClientLoopGroupTest {

    private static ClientLoopGroup group(int threads) {
        return new ClientLoopGroup(
                threads, new DefaultThreadFactory("loop-group-test", true), NioIoHandler.newFactory());
    }

    @Test
    void nextHandsOutEachLoopInTurnAndEachLoopsParentIsTheGroup() throws Exception {
        ClientLoopGroup group = group(3);
        try {
            List<EventExecutor> loops = new ArrayList<>();
            group.iterator().forEachRemaining(loops::add);
            assertEquals(3, loops.size());
            for (int i = 0; i < 6; i++) {
                IoEventLoop loop = group.next();
                assertSame(loops.get(i % 3), loop);
                assertSame(group, loop.parent());
            }
            assertNotSame(loops.get(0), loops.get(1));
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void zeroThreadsIsNettysDefault() throws Exception {
        ClientLoopGroup group = group(0);
        try {
            List<EventExecutor> loops = new ArrayList<>();
            group.iterator().forEachRemaining(loops::add);
            assertEquals(ClientLoopGroup.defaultThreads(), loops.size());
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /**
     * Terminated means every loop terminated, started or not; the group's listeners run on the loop thread that
     * ended last (no other thread: Netty's group would have told them on its global executor's thread).
     */
    @Test
    void theTerminationCompletesOnALoopThreadOnceEveryLoopHasTerminated() throws Exception {
        ClientLoopGroup group = group(2);
        // one loop started (it ran a task), the other never used: its shutdown starts it to terminate
        IoEventLoop started = group.next();
        Thread first = started.submit(Thread::currentThread).get(10, TimeUnit.SECONDS);
        // what Netty's name resolver group adds at a loop's first connect: told on the loop's own thread
        CompletableFuture<Thread> loopToldOn = new CompletableFuture<>();
        started.terminationFuture().addListener(f -> loopToldOn.complete(Thread.currentThread()));
        CompletableFuture<String> toldOn = new CompletableFuture<>();
        CompletableFuture<Boolean> allTerminatedWhenTold = new CompletableFuture<>();
        group.terminationFuture().addListener(f -> {
            allTerminatedWhenTold.complete(group.isTerminated());
            toldOn.complete(Thread.currentThread().getName());
        });
        assertFalse(group.isShuttingDown());
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        assertTrue(group.isTerminated() && group.isShutdown() && group.isShuttingDown());
        assertTrue(group.awaitTermination(0, TimeUnit.SECONDS));
        for (EventExecutor loop : group) {
            assertTrue(loop.isTerminated());
        }
        assertTrue(allTerminatedWhenTold.get(10, TimeUnit.SECONDS));
        assertTrue(toldOn.get().startsWith("loop-group-test"), toldOn.get());
        assertSame(first, loopToldOn.get(10, TimeUnit.SECONDS));
        first.join(10_000); // its thread ends right after the loop: nothing keeps it
        assertFalse(first.isAlive());
        // a listener added afterwards is told too (on this thread, or on the loop thread still telling the first)
        CompletableFuture<Boolean> late = new CompletableFuture<>();
        group.terminationFuture().addListener(f -> late.complete(f.isSuccess()));
        assertTrue(late.get(10, TimeUnit.SECONDS));
    }

    /**
     * An application's factory of plain threads ({@code ClientOptions.threadFactory}): the loop runs with Netty's fast
     * thread-locals all the same, so its own buffers come from Warren's pool as on Netty's threads (not the unpooled
     * heap an application thread gets), and the thread ends with the loop.
     */
    @Test
    void aLoopOnAPlainThreadOfTheApplicationsFactoryRunsAsOnNettysThreads() throws Exception {
        ThreadFactory plain = r -> {
            Thread t = new Thread(r, "plain-loop");
            t.setDaemon(true);
            return t;
        };
        ClientLoopGroup group = new ClientLoopGroup(1, plain, NioIoHandler.newFactory());
        Thread loopThread;
        try {
            IoEventLoop loop = group.next();
            loopThread = loop.submit(Thread::currentThread).get(10, TimeUnit.SECONDS);
            assertFalse(loopThread instanceof FastThreadLocalThread);
            assertEquals("plain-loop", loopThread.getName());
            assertTrue(loop.submit(FastThreadLocalThread::currentThreadHasFastThreadLocal)
                    .get(10, TimeUnit.SECONDS));
            ByteBuf buffer =
                    loop.submit(() -> ConnectionAllocator.INSTANCE.buffer(64)).get(10, TimeUnit.SECONDS);
            try {
                assertTrue(buffer.isDirect());
                assertInstanceOf(PooledByteBufAllocator.class, buffer.alloc());
            } finally {
                buffer.release();
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
        loopThread.join(10_000);
        assertFalse(loopThread.isAlive());
        assertFalse(FastThreadLocalThread.currentThreadHasFastThreadLocal(), "the test thread is no loop");
    }

    /**
     * A loop whose thread cannot start when its shutdown starts it to terminate: Netty fails the loop's own future and
     * rethrows an {@link Error} (a thread the JVM could not create is an {@link OutOfMemoryError}). The loop's
     * termination is told all the same, every loop is asked to shut down, and the group's termination completes.
     */
    @Test
    void loopsWhoseThreadsCannotStartAtTheirShutdownStillTerminateTheGroup() {
        ThreadFactory noThreads = r -> new Thread(r) {
            @Override
            public synchronized void start() {
                throw new OutOfMemoryError("unable to create native thread (test)");
            }
        };
        ClientLoopGroup group = new ClientLoopGroup(2, noThreads, NioIoHandler.newFactory());
        assertThrows(OutOfMemoryError.class, () -> group.shutdownGracefully(0, 1, TimeUnit.SECONDS));
        for (EventExecutor loop : group) {
            assertTrue(loop.isTerminated());
            assertTrue(loop.terminationFuture().isDone(), "the loop's termination is told");
            assertTrue(loop.terminationFuture().cause() instanceof OutOfMemoryError);
        }
        assertTrue(group.terminationFuture().isDone(), "the group's termination is told");
        assertTrue(group.isTerminated());
    }

    /**
     * The JVM may throw one preallocated {@link OutOfMemoryError} again and again: two loops failing with the same
     * instance must not end the shutdown with {@code addSuppressed}'s "Self-suppression not permitted" before the
     * other loops are asked, which left the group's termination pending for ever.
     */
    @Test
    void theSameErrorFromEveryLoopIsThrownOnceAndEveryLoopIsShutDown() {
        OutOfMemoryError preallocated = new OutOfMemoryError("unable to create native thread (test)");
        ThreadFactory noThreads = r -> new Thread(r) {
            @Override
            public synchronized void start() {
                throw preallocated;
            }
        };
        ClientLoopGroup group = new ClientLoopGroup(3, noThreads, NioIoHandler.newFactory());
        OutOfMemoryError thrown =
                assertThrows(OutOfMemoryError.class, () -> group.shutdownGracefully(0, 1, TimeUnit.SECONDS));
        assertSame(preallocated, thrown);
        assertEquals(0, thrown.getSuppressed().length);
        for (EventExecutor loop : group) {
            assertTrue(loop.isTerminated());
        }
        assertTrue(group.terminationFuture().isDone(), "the group's termination is told");
    }
}
