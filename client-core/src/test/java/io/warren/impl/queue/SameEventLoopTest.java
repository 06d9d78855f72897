package io.warren.impl.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.channel.DefaultEventLoop;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ImmediateEventExecutor;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Which consumer contexts get the same-thread queue: only the producer's own loop. */
class SameEventLoopTest {

    private final DefaultEventLoop loop = new DefaultEventLoop(new DefaultThreadFactory("producer", true));
    private final DefaultEventLoop other = new DefaultEventLoop(new DefaultThreadFactory("other", true));

    @AfterEach
    void shutdown() throws Exception {
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        other.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    private List<Boolean> onTheLoop(Executor... consumers) throws Exception {
        return loop.submit(() -> {
                    Boolean[] same = new Boolean[consumers.length];
                    for (int i = 0; i < consumers.length; i++) {
                        same[i] = InboundMessageQueue.sameEventLoop(loop, consumers[i]);
                    }
                    return List.of(same);
                })
                .get(5, TimeUnit.SECONDS);
    }

    @Test
    void theProducersLoopItselfIsTheSameLoop() throws Exception {
        assertEquals(List.of(true), onTheLoop(loop));
    }

    @Test
    void anotherLoopIsNot() throws Exception {
        assertEquals(List.of(false), onTheLoop(other));
    }

    /**
     * ImmediateEventExecutor says it is in its loop on any thread; an application thread's fetch would then drain the
     * same-thread queue (plain fields) while the loop writes to it.
     */
    @Test
    void anExecutorThatRunsTasksOnTheCallersThreadIsNot() throws Exception {
        assertEquals(List.of(false), onTheLoop(ImmediateEventExecutor.INSTANCE));
    }
}
