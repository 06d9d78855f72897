package io.warren.it.examples;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.streams.WriteStream;
import io.warren.AmqpClient;
import io.warren.ChannelClosedException;
import io.warren.ConsumeOptions;
import io.warren.Delivery;
import io.warren.StaleDeliveryException;
import io.warren.vertx.VertxAmqp;
import io.warren.vertx.VertxConnection;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code pipeTo} a write stream, the README's example: a queue piped into a file, one line per message, written
 * in batches; each message is acknowledged once its line is written, so a crash loses nothing (the broker
 * redelivers what was not acked). The file's back-pressure reaches the broker: the pipe pauses the stream while
 * the file's write queue is full, and the prefetch bounds what waits in the client.
 */
public final class VertxPipeExample {

    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "amqp://guest:guest@localhost:5672/%2F";
        Vertx vertx = Vertx.vertx();
        vertx.deployVerticle(new OrdersToFileVerticle(VertxAmqp.client(vertx), uri, "orders", "orders.txt"))
                .onFailure(Throwable::printStackTrace);
    }

    /** Pipes a queue into a file until the verticle is undeployed; {@link #piped()} completes when the pipe ends. */
    // [vertx-pipe]
    public static final class OrdersToFileVerticle extends VerticleBase {
        private final AmqpClient client;
        private final String uri;
        private final String queue;
        private final String file;
        private final Promise<Void> piped = Promise.promise();
        private VertxConnection connection;

        public OrdersToFileVerticle(AmqpClient client, String uri, String queue, String file) {
            this.client = client;
            this.uri = uri;
            this.queue = queue;
            this.file = file;
        }

        @Override
        public Future<?> start() {
            return VertxAmqp.create(vertx)
                    .connect(client, uri)
                    .compose(opened -> {
                        connection = opened;
                        return opened.openChannel();
                    })
                    .compose(channel -> channel.consume(queue, new ConsumeOptions().prefetch(200)))
                    .compose(orders -> vertx.fileSystem()
                            .open(file, new OpenOptions().setAppend(true))
                            .onSuccess(out -> orders.pipeTo(new AckingLineWriter(vertx, out, 50))
                                    .onComplete(piped)));
        }

        @Override
        public Future<?> stop() {
            // an orderly close: the stream ends, the pipe flushes and closes the file, and succeeds
            return connection == null
                    ? Future.succeededFuture()
                    : connection.close().compose(closed -> piped.future());
        }

        public Future<Void> piped() {
            return piped.future();
        }
    }
    // [/vertx-pipe]

    /**
     * Writes each delivery's body as a line to {@code out}, {@code batchSize} lines per write (or what came within
     * {@value #FLUSH_MILLIS} ms), and acknowledges the deliveries once their write succeeded (requeues them when it
     * failed). Runs on the pipe's context.
     */
    // [vertx-writer]
    public static final class AckingLineWriter implements WriteStream<Delivery> {
        static final long FLUSH_MILLIS = 20;
        private final Vertx vertx;
        private final WriteStream<Buffer> out;
        private final int batchSize;
        private List<Delivery> batch = new ArrayList<>();
        private long flushTimer = -1;

        public AckingLineWriter(Vertx vertx, WriteStream<Buffer> out, int batchSize) {
            this.vertx = vertx;
            this.out = out;
            this.batchSize = batchSize;
        }

        @Override
        public Future<Void> write(Delivery delivery) {
            batch.add(delivery.retain()); // its body is read after this call returns: keep it until then
            if (batch.size() >= batchSize) {
                return flush();
            }
            if (flushTimer < 0) {
                flushTimer = vertx.setTimer(FLUSH_MILLIS, id -> {
                    flushTimer = -1;
                    flush();
                });
            }
            return Future.succeededFuture();
        }

        private Future<Void> flush() {
            if (flushTimer >= 0) {
                vertx.cancelTimer(flushTimer);
                flushTimer = -1;
            }
            if (batch.isEmpty()) {
                return Future.succeededFuture();
            }
            List<Delivery> written = batch;
            batch = new ArrayList<>();
            Buffer lines = Buffer.buffer();
            for (Delivery d : written) {
                lines.appendBytes(d.bodyBytes()).appendString("\n");
                d.release(); // copied into the buffer: the bytes are no longer needed
            }
            return out.write(lines).andThen(result -> {
                try {
                    for (Delivery d : written) {
                        if (result.succeeded()) {
                            d.ack(); // settling needs only the tag: fine after the release
                        } else {
                            d.nack(true); // requeue: the broker delivers it again
                        }
                    }
                } catch (ChannelClosedException | StaleDeliveryException gone) {
                    // the channel closed (or was recovered) during the write: the broker requeued what is unsettled
                }
            });
        }

        @Override
        public Future<Void> end() {
            return flush().eventually(out::end); // the file is closed even when the last write failed
        }

        @Override
        public boolean writeQueueFull() {
            return out.writeQueueFull();
        }

        @Override
        public AckingLineWriter drainHandler(Handler<Void> handler) {
            out.drainHandler(handler);
            return this;
        }

        @Override
        public AckingLineWriter setWriteQueueMaxSize(int maxSize) {
            out.setWriteQueueMaxSize(maxSize);
            return this;
        }

        @Override
        public AckingLineWriter exceptionHandler(Handler<Throwable> handler) {
            out.exceptionHandler(handler);
            return this;
        }
    }
    // [/vertx-writer]

    private VertxPipeExample() {}
}
