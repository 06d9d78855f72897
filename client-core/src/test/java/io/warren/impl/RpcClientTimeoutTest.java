package io.warren.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.EventExecutor;
import io.warren.AmqpClient;
import io.warren.ClientOptions;
import io.warren.Connection;
import io.warren.ConnectionOptions;
import io.warren.RpcTimeoutException;
import io.warren.codec.Frames;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicDeliverEncoder;
import io.warren.rpc.RpcClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Where an RpcClient's timeout completes its call: on the connection's event loop, where a reply completes it, and
 * never on the JDK's one timer thread, where a caller's continuation that blocks would hold up every
 * completeOnTimeout and orTimeout in the JVM.
 */
class RpcClientTimeoutTest {

    private final List<AutoCloseable> cleanup = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        Exception first = null;
        for (int i = cleanup.size() - 1; i >= 0; i--) { // the last opened first
            try {
                cleanup.get(i).close();
            } catch (Exception e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * A broker that answers a request whose body is {@code "answer"} (once the test lets it, {@link #replies}) and
     * leaves any other unanswered.
     */
    private static final class Peer extends SocketPeer {
        final CountDownLatch replies = new CountDownLatch(1);

        Peer() throws IOException {
            super(0, false, "rpc-peer");
            start();
        }

        @Override
        protected boolean publish(int channel, Stream st) throws IOException {
            if (!st.body.toString(StandardCharsets.UTF_8).equals("answer")) {
                return true;
            }
            try {
                replies.await(10, TimeUnit.SECONDS); // the caller's continuation is attached first
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            String correlationId = new ContentHeader()
                    .wrap(Unpooled.wrappedBuffer(st.header), 0)
                    .correlationIdAsString();
            // the client's direct reply-to consumer asked for a server-generated tag: "" becomes "ctag-"
            send(
                    channel,
                    new BasicDeliverEncoder()
                            .consumerTag("ctag-")
                            .deliveryTag(1)
                            .exchange("")
                            .routingKey("rpc"));
            byte[] body = "reply".getBytes(StandardCharsets.UTF_8);
            write(Frames.contentHeader(
                    ByteBufAllocator.DEFAULT,
                    channel,
                    body.length,
                    BasicProperties.builder().correlationId(correlationId).build()));
            write(Frames.body(ByteBufAllocator.DEFAULT, channel, Unpooled.wrappedBuffer(body)));
            return true;
        }
    }

    /** A connection of its own client (its own event loop) to a peer of its own. */
    private Connection connect(Peer peer) throws Exception {
        AmqpClient client = AmqpClient.create(new ClientOptions().ioThreads(1).preferNativeTransport(false));
        cleanup.add(() -> client.close().toCompletableFuture().get(10, TimeUnit.SECONDS));
        cleanup.add(() -> {
            peer.close();
            assertEquals(List.of(), peer.errors);
        });
        Connection connection = client.connect(new ConnectionOptions()
                        .address("127.0.0.1", peer.port())
                        .automaticRecovery(false))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        cleanup.add(() -> connection.close().toCompletableFuture().get(10, TimeUnit.SECONDS));
        return connection;
    }

    private static RpcClient rpcClient(Connection connection) throws Exception {
        return RpcClient.create(connection.openChannel().toCompletableFuture().get(10, TimeUnit.SECONDS))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
    }

    private static EventExecutor loopOf(Connection connection) {
        return ((ConnectionImpl) connection).handler().outbound().eventLoop();
    }

    private static io.netty.buffer.ByteBuf body(String text) {
        return Unpooled.copiedBuffer(text, StandardCharsets.UTF_8);
    }

    @Test
    void aTimeoutCompletesTheCallOnTheEventLoopWhereAReplyCompletesIt() throws Exception {
        Peer peer = new Peer();
        Connection connection = connect(peer);
        EventExecutor loop = loopOf(connection);
        RpcClient rpc = rpcClient(connection);

        CompletableFuture<Thread> replied = rpc.call("", "rpc", null, body("answer"))
                .toCompletableFuture()
                .thenApply(reply -> {
                    reply.release();
                    assertTrue(loop.inEventLoop(), "a reply completes the call on the connection's event loop");
                    return Thread.currentThread();
                });
        peer.replies.countDown();
        Thread replyThread = replied.get(10, TimeUnit.SECONDS);

        CompletableFuture<Thread> timedOut = rpc.call("", "rpc", null, body("silence"), Duration.ofMillis(200))
                .toCompletableFuture()
                .handle((reply, error) -> {
                    assertInstanceOf(RpcTimeoutException.class, error);
                    return Thread.currentThread();
                });
        Thread timeoutThread = timedOut.get(10, TimeUnit.SECONDS);
        assertSame(replyThread, timeoutThread, "timed out on " + timeoutThread.getName());
        assertEquals(0, rpc.pendingCalls());
    }

    /**
     * A timed-out call's continuation that blocks holds up its own connection's event loop, as one on a reply does,
     * and nothing else: another client's call times out on time.
     */
    @Test
    void aTimedOutCallsContinuationThatBlocksHoldsUpNoOtherClientsTimeout() throws Exception {
        RpcClient blockedRpc = rpcClient(connect(new Peer()));
        RpcClient otherRpc = rpcClient(connect(new Peer()));
        CountDownLatch release = new CountDownLatch(1);
        cleanup.add(release::countDown); // before the connections close: the blocked loop must close its own
        CompletableFuture<String> blockedOn = new CompletableFuture<>();
        blockedRpc.call("", "rpc", null, body("silence"), Duration.ofMillis(50)).whenComplete((reply, error) -> {
            blockedOn.complete(Thread.currentThread().getName());
            try {
                release.await(10, TimeUnit.SECONDS); // blocks its thread, as an application's mistake would
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        String blockedThread = blockedOn.get(10, TimeUnit.SECONDS);

        CompletableFuture<?> other = otherRpc.call("", "rpc", null, body("silence"), Duration.ofMillis(100))
                .toCompletableFuture();
        // the wait is bounded under the 10 s the first continuation blocks its thread: a timeout held up behind it
        // does not come within it (no duration is measured: that is the bound's job, and the benchmarks')
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> other.get(5, TimeUnit.SECONDS),
                "a continuation blocking " + blockedThread + " held up another client's timeout");
        assertInstanceOf(RpcTimeoutException.class, e.getCause());
    }
}
