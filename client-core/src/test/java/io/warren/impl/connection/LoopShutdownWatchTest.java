package io.warren.impl.connection;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.channel.DefaultEventLoop;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The watch on real loops: told once, on the loop, when the loop shuts down under it; not after stop(). */
class LoopShutdownWatchTest {

    private static final java.util.concurrent.ThreadFactory LOOP_THREADS = r -> new Thread(r, "watched-loop");

    /** What the watch told, as the names of the threads it told on. */
    private final List<String> told = new CopyOnWriteArrayList<>();

    private LoopShutdownWatch watchOn(DefaultEventLoop loop) {
        return new LoopShutdownWatch(loop, () -> told.add(Thread.currentThread().getName()));
    }

    @Test
    void aLoopThatShutsDownUnderTheWatchTellsItOnceOnTheLoop() throws Exception {
        DefaultEventLoop loop = new DefaultEventLoop(LOOP_THREADS);
        LoopShutdownWatch watch = watchOn(loop);
        loop.submit(watch::start).get(10, TimeUnit.SECONDS);
        assertEquals(List.of(), told, "armed, not told");
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        assertEquals(List.of("watched-loop"), told);
    }

    @Test
    void aStoppedWatchIsNotToldOfTheShutdown() throws Exception {
        DefaultEventLoop loop = new DefaultEventLoop(LOOP_THREADS);
        LoopShutdownWatch watch = watchOn(loop);
        loop.submit(() -> {
                    watch.start();
                    watch.stop(); // the connection closed: its own cancel, not the loop's
                })
                .get(10, TimeUnit.SECONDS);
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        assertEquals(List.of(), told);
    }

    /** A connection that becomes active on a loop already shutting down (its quiet period) is told at once. */
    @Test
    void aLoopAlreadyShuttingDownTellsTheWatchAtStart() throws Exception {
        DefaultEventLoop loop = new DefaultEventLoop(LOOP_THREADS);
        java.util.concurrent.CountDownLatch busy = new java.util.concurrent.CountDownLatch(1);
        loop.execute(() -> {
            try {
                busy.await(10, TimeUnit.SECONDS); // the loop is inside a task while its shutdown begins
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        loop.shutdownGracefully(1, 10, TimeUnit.SECONDS); // it still runs the tasks queued before its quiet period
        LoopShutdownWatch watch = watchOn(loop);
        io.netty.util.concurrent.Future<?> started = loop.submit(watch::start);
        busy.countDown();
        started.get(10, TimeUnit.SECONDS);
        assertEquals(List.of("watched-loop"), told);
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        assertEquals(List.of("watched-loop"), told, "once");
    }
}
