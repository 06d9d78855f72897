package io.warren.impl.queue;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/** Consumer on a Vert.x event-loop context, handed tasks through {@code runOnContext}. */
class VertxContextInboundMessageQueueTest extends AbstractCrossThreadInboundMessageQueueTest {

    private Vertx vertx;
    private Context context;

    @Override
    Executor createConsumer() {
        vertx = Vertx.vertx();
        context = vertx.getOrCreateContext();
        return task -> context.runOnContext(ignored -> task.run());
    }

    @Override
    void shutdownConsumer() throws Exception {
        if (vertx != null) {
            vertx.close().await(30, TimeUnit.SECONDS);
        }
    }

    @Override
    boolean onConsumerThread() {
        return Vertx.currentContext() == context && Context.isOnEventLoopThread();
    }

    @Override
    boolean expectSameThread() {
        return false;
    }
}
