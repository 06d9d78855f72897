package io.warren.vertx;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.warren.AmqpException;
import io.warren.Channel;
import io.warren.ConsumerHandle;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The stream's end, on a Vert.x context, over a consumer whose end the test completes. */
class DeliveryStreamTest {

    private Vertx vertx;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /**
     * The application's exception handler throws at the consumer's failure: the end handler still runs, once. Before,
     * the throw skipped it, and with it whatever the application cleans up there.
     */
    @Test
    void anExceptionHandlerThatThrowsStillLetsTheEndHandlerRun() throws Exception {
        Context context = vertx.getOrCreateContext();
        EndingConsumer consumer = new EndingConsumer();
        List<String> events = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> ended = new CompletableFuture<>();
        CompletableFuture<Void> made = new CompletableFuture<>();
        context.runOnContext(v -> {
            DeliveryStream stream = new DeliveryStream(context);
            stream.exceptionHandler(e -> {
                events.add("exception: " + e.getMessage());
                throw new IllegalStateException("the application's exception handler fails");
            });
            stream.endHandler(end -> {
                events.add("end");
                ended.complete(null);
            });
            stream.handler(d -> {});
            stream.started(consumer);
            made.complete(null);
        });
        made.get(5, TimeUnit.SECONDS);

        consumer.end.complete(new AmqpException("the broker cancelled the consumer (queue deleted)"));

        ended.get(5, TimeUnit.SECONDS);
        assertEquals(List.of("exception: the broker cancelled the consumer (queue deleted)", "end"), events);
    }

    /** A consumer whose end the test completes; demand calls are taken and ignored. */
    private static final class EndingConsumer implements ConsumerHandle {
        final CompletableFuture<AmqpException> end = new CompletableFuture<>();

        @Override
        public String consumerTag() {
            return "ctag";
        }

        @Override
        public String queue() {
            return "q";
        }

        @Override
        public Channel channel() {
            return null;
        }

        @Override
        public boolean isActive() {
            return !end.isDone();
        }

        @Override
        public void pause() {}

        @Override
        public void resume() {}

        @Override
        public void fetch(long count) {}

        @Override
        public long queued() {
            return 0;
        }

        @Override
        public CompletionStage<Void> cancel() {
            end.complete(null);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<AmqpException> endFuture() {
            return end;
        }
    }
}
