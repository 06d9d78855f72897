package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.Channel;
import io.warren.ChannelClosedException;
import io.warren.Connection;
import io.warren.DeclaredQueue;
import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import io.warren.it.BrokerExtension.TestNames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Declare, bind, unbind, purge and delete round trips, checked through the broker's own answers: message
 * counts, passive declares, and the channel errors (404, 406) that leave the connection working.
 */
@ExtendWith(BrokerExtension.class)
class TopologyIT {

    static <T> T await(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    static Throwable failure(CompletionStage<?> stage) throws Exception {
        ExecutionException e = assertThrows(
                ExecutionException.class, () -> stage.toCompletableFuture().get(30, TimeUnit.SECONDS));
        return e.getCause();
    }

    @Test
    void declarePassiveDeclareAndDeleteAQueue(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        DeclaredQueue ok =
                await(ch.queueDeclare(QueueSpec.named(q).durable(false).autoDelete(false)));
        assertEquals(q, ok.queue());
        assertEquals(0, ok.messageCount());
        assertEquals(0, ok.consumerCount());
        DeclaredQueue passive = await(ch.queueDeclare(QueueSpec.passive(q)));
        assertEquals(q, passive.queue());
        assertEquals(0L, await(ch.queueDelete(q)));
        Throwable gone = failure(ch.queueDeclare(QueueSpec.passive(q)));
        ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, gone);
        assertEquals(404, e.replyCode());
        assertEquals(50, e.classId());
        assertEquals(10, e.methodId());
        assertTrue(e.replyText().contains(q), e.replyText());
        assertFalse(ch.isOpen());
        assertTrue(connection.isOpen());
        await(ch.closeFuture());
    }

    @Test
    void serverNamedQueue(Connection connection) throws Exception {
        Channel ch = await(connection.openChannel());
        DeclaredQueue ok = await(ch.queueDeclare(QueueSpec.serverNamed()));
        assertTrue(ok.queue().startsWith("amq.gen-"), ok.queue());
        assertEquals(
                ok.queue(),
                await(ch.queueDeclare(QueueSpec.passive(ok.queue()))).queue());
        await(ch.close());
        assertFalse(ch.isOpen());
    }

    @Test
    void queueArgumentsAndTypes(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String quorum = names.queue("quorum");
        String stream = names.queue("stream");
        String classic = names.queue("classic");
        assertEquals(
                quorum, await(ch.queueDeclare(QueueSpec.named(quorum).quorum())).queue());
        assertEquals(
                stream, await(ch.queueDeclare(QueueSpec.named(stream).stream())).queue());
        assertEquals(
                classic,
                await(ch.queueDeclare(QueueSpec.named(classic)
                                .messageTtl(Duration.ofMinutes(5))
                                .maxLength(10)
                                .exclusive(true)))
                        .queue());
        // the same arguments again: idempotent
        await(ch.queueDeclare(QueueSpec.named(quorum).quorum()));
        await(ch.queueDelete(quorum));
        await(ch.queueDelete(stream));
        await(ch.queueDelete(classic));
        await(ch.close());
    }

    @Test
    void redeclareWithOtherArgumentsIs406AndTheConnectionSurvives(Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(QueueSpec.named(q).maxLength(10)));
        CompletionStage<DeclaredQueue> second =
                ch.queueDeclare(QueueSpec.named(q).maxLength(20));
        CompletionStage<Long> queuedBehind = ch.queuePurge(q);
        ChannelClosedException e = assertInstanceOf(ChannelClosedException.class, failure(second));
        assertEquals(406, e.replyCode());
        assertTrue(e.initiatedByBroker());
        assertEquals(ch.channelNumber(), e.channelNumber());
        assertEquals(50, e.classId());
        assertEquals(10, e.methodId());
        assertTrue(e.replyText().startsWith("PRECONDITION_FAILED"), e.replyText());
        // what was queued behind the failing declare fails with the same cause
        ChannelClosedException behind = assertInstanceOf(ChannelClosedException.class, failure(queuedBehind));
        assertEquals(406, behind.replyCode());
        Channel again = await(connection.openChannel());
        assertEquals(0L, await(again.queueDelete(q)));
        await(again.close());
    }

    @Test
    void exchangesBindUnbindPurgeThroughTheBrokersAnswers(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String x = names.exchange("x");
        String x2 = names.exchange("x2");
        String q = names.queue("q");
        await(ch.exchangeDeclare(ExchangeSpec.of(x, "topic").autoDelete(false)));
        await(ch.exchangeDeclare(x2, "fanout"));
        await(ch.exchangeDeclare(ExchangeSpec.passive(x)));
        await(ch.queueDeclare(q));
        await(ch.exchangeBind(x2, x, "a.#"));
        await(ch.queueBind(q, x2, ""));
        await(ch.exchangeUnbind(x2, x, "a.#"));
        await(ch.queueUnbind(q, x2, ""));
        assertEquals(0L, await(ch.queuePurge(q)));
        await(ch.exchangeBind(x2, x, "b.*", Map.of("x-note", "hi"), true));
        await(ch.queueBind(q, x, "c", Map.of(), true));
        await(ch.exchangeDelete(x2));
        await(ch.exchangeDelete(x, false, false));
        ChannelClosedException e =
                assertInstanceOf(ChannelClosedException.class, failure(ch.exchangeDeclare(ExchangeSpec.passive(x))));
        assertEquals(404, e.replyCode());
        assertEquals(40, e.classId());
        Channel ch2 = await(connection.openChannel());
        await(ch2.queueDelete(q, false, true));
        await(ch2.close());
    }

    @Test
    void manyRequestsInFlightFromManyThreadsGetTheirOwnReplies(Connection connection, TestNames names)
            throws Exception {
        List<Channel> channels = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            channels.add(await(connection.openChannel()));
        }
        int threads = 8;
        int perThread = 100;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<List<String>>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                results.add(pool.submit(() -> {
                    start.await();
                    List<CompletableFuture<DeclaredQueue>> mine = new ArrayList<>();
                    for (int i = 0; i < perThread; i++) {
                        String q = names.queue("t" + thread + "-" + i);
                        // exclusive: removed with the connection, no cleanup round trip needed
                        mine.add(channels.get(i % channels.size())
                                .queueDeclare(QueueSpec.named(q).exclusive(true))
                                .toCompletableFuture());
                    }
                    List<String> declared = new ArrayList<>();
                    for (CompletableFuture<DeclaredQueue> f : mine) {
                        declared.add(f.get(60, TimeUnit.SECONDS).queue());
                    }
                    return declared;
                }));
            }
            for (int t = 0; t < threads; t++) {
                List<String> got = results.get(t).get(120, TimeUnit.SECONDS);
                for (int i = 0; i < perThread; i++) {
                    assertEquals(names.queue("t" + t + "-" + i), got.get(i));
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void basicGetEmptyAndQosRecoverTxConfirm(Connection connection, TestNames names) throws Exception {
        Channel ch = await(connection.openChannel());
        String q = names.queue("q");
        await(ch.queueDeclare(q));
        assertNull(await(ch.basicGet(q, true)));
        await(ch.basicQos(10));
        await(ch.basicQos(0, 100, true));
        await(ch.basicRecover(true));
        await(ch.txSelect());
        await(ch.txCommit());
        await(ch.txRollback());
        Channel confirms = await(connection.openChannel());
        await(confirms.confirmSelect());
        await(ch.queueDelete(q));
        await(ch.close());
        await(confirms.close());
        assertNotNull(connection.serverProperties().get("product"));
    }

    /**
     * A transactional relay that commits without waiting: publish, ack, commit, for each message, on the event loop in
     * one pass. RabbitMQ closes the connection (504 CHANNEL_ERROR) over any command on a channel while it commits;
     * before, the next message's publish and ack were written right behind tx.commit. Each commit covers its own
     * message: the queue holds all of them, none left unacknowledged.
     */
    @Test
    void aTransactionalRelayThatCommitsWithoutWaitingKeepsItsConnection(Connection connection, TestNames names)
            throws Exception {
        Channel ch = await(connection.openChannel());
        String in = names.queue("in");
        String out = names.queue("out");
        await(ch.queueDeclare(in));
        await(ch.queueDeclare(out));
        for (int i = 0; i < 20; i++) {
            await(ch.publish("", in, false, null, new byte[] {(byte) i}));
        }
        await(ch.txSelect());
        CompletableFuture<Void> relayed = new CompletableFuture<>();
        java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
        List<CompletionStage<Void>> commits = java.util.Collections.synchronizedList(new ArrayList<>());
        await(ch.consume(in, new io.warren.ConsumeOptions().prefetch(20), d -> {
            // on the event loop: the three calls of each message go in one pass, the next message's behind them
            ch.publish(
                    "", out, false, null, new byte[] {d.body().getByte(d.body().readerIndex())});
            d.ack();
            commits.add(ch.txCommit());
            if (seen.incrementAndGet() == 20) {
                relayed.complete(null);
            }
        }));
        relayed.get(30, TimeUnit.SECONDS); // each message's commit was called before it counted
        for (CompletionStage<Void> commit : new ArrayList<>(commits)) {
            await(commit);
        }
        assertEquals(20, commits.size());
        assertTrue(connection.isOpen());
        assertEquals(20, await(ch.queueDeclare(QueueSpec.passive(out))).messageCount());
        Await.queueCounts(in, 0, 0, Duration.ofSeconds(10));
        await(ch.queueDelete(in));
        await(ch.queueDelete(out));
    }
}
