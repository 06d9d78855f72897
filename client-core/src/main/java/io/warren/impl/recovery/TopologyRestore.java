package io.warren.impl.recovery;

import io.netty.channel.EventLoop;
import io.warren.ChannelClosedException;
import io.warren.DeclaredQueue;
import io.warren.QueueSpec;
import io.warren.codec.base.ReplyCode;
import io.warren.impl.connection.ConnectionHandler;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Declares the recorded topology again on a channel of recovery's own (not recorded again): exchanges, queues,
 * then bindings, one at a time; a refusal is reported and skipped.
 *
 * <p>A named exclusive queue can still belong to the connection the loss left behind: after a partition, or a reset the
 * broker never saw, the broker keeps that connection until its heartbeat check gives up on it (two to three heartbeat
 * intervals of silence), and refuses the declaration with 405 RESOURCE_LOCKED until then. With {@link
 * io.warren.RecoveryOptions#awaitExclusiveRelease} on, such a refusal is retried, after 100 ms and then twice as long
 * each time up to a second, until a deadline shared by the whole restore (three heartbeat intervals and a second after
 * the loss; the last try is at the deadline); the rest of the restore waits for it, since the queue's bindings and
 * consumers come after it. The same goes for the lost connection's exclusive consumers: before such a consumer starts
 * again, recovery waits for its queue to have no consumer ({@link #consumersGone}). Event loop.
 */
final class TopologyRestore {

    private static final Logger LOG = LoggerFactory.getLogger(TopologyRestore.class);

    static final long FIRST_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    static final long LONGEST_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final ConnectionRecovery owner;
    private final TopologyRecorder topology;
    private final RecoverableConnection connection;
    private final ConnectionHandler handler;
    private final EventLoop loop;

    /** Until when (the loop's clock) what the lost connection held exclusively is waited for; 0: not at all. */
    private final long deadline;

    // event loop only
    private RecoverableChannel channel;

    TopologyRestore(
            ConnectionRecovery owner,
            TopologyRecorder topology,
            RecoverableConnection connection,
            ConnectionHandler handler,
            EventLoop loop,
            long deadline) {
        this.owner = owner;
        this.topology = topology;
        this.connection = connection;
        this.handler = handler;
        this.loop = loop;
        this.deadline = deadline;
    }

    CompletionStage<Void> run() {
        TopologyRecorder t = topology;
        if (t.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        CompletionStage<Void> done = CompletableFuture.completedFuture(null);
        for (TopologyRecorder.Exchange x : t.exchanges()) {
            done = done.thenCompose(v -> each("exchange '" + x.name() + "'", ch -> ch.exchangeDeclare(x.toDeclare())));
        }
        for (TopologyRecorder.Queue q : t.queues()) {
            done = done.thenCompose(v -> queue(q, FIRST_RETRY_NANOS));
        }
        // bindings after every queue: their destinations' new names are known by then
        done = done.thenCompose(v -> {
            CompletionStage<Void> b = CompletableFuture.completedFuture(null);
            for (TopologyRecorder.Binding x : t.bindings()) {
                b = b.thenCompose(w -> bind(x));
            }
            return b;
        });
        return closingChannel(done);
    }

    /** One recorded binding, made again; a refusal is reported and skipped. */
    private CompletionStage<Void> bind(TopologyRecorder.Binding x) {
        String what = (x.toExchange() ? "exchange" : "queue") + " binding " + x.source() + " -> " + x.destination()
                + " (" + x.routingKey() + ")";
        return each(
                what,
                ch -> x.toExchange()
                        ? ch.exchangeBind(x.destination(), x.source(), x.routingKey(), x.arguments(), false)
                        : ch.queueBind(x.destination(), x.source(), x.routingKey(), x.arguments(), false));
    }

    /** {@code done}, which then closes the channel the restore opened, if any. */
    private CompletionStage<Void> closingChannel(CompletionStage<Void> done) {
        return done.whenComplete((v, e) -> {
            if (channel != null) {
                channel.close();
            }
        });
    }

    /** Declares {@code q}; a 405 is retried until the deadline, the next try after {@code delay} nanoseconds. */
    private CompletionStage<Void> queue(TopologyRecorder.Queue q, long delay) {
        String what = "queue '" + q.name() + "'";
        return attempt(ch -> ch.queueDeclare(q.toDeclare()).thenAccept((DeclaredQueue ok) -> {
                    if (q.serverNamed() && !ok.queue().equals(q.name())) {
                        LOG.debug("recovery: server-named queue {} is now {}", q.name(), ok.queue());
                        topology.renameQueue(q.name(), ok.queue());
                        owner.queueRenamed(q.name(), ok.queue());
                    }
                }))
                .thenCompose(failure -> {
                    if (failure == null) {
                        return CompletableFuture.completedFuture(null);
                    }
                    long wait = nextTry(delay);
                    if (!q.exclusive() || !isLocked(failure) || wait < 0) {
                        owner.topologyFailed(what, failure);
                        return CompletableFuture.completedFuture(null);
                    }
                    LOG.debug(
                            "recovery: {} is still locked by the connection before the loss; trying again in {} ms",
                            what,
                            TimeUnit.NANOSECONDS.toMillis(wait));
                    return later(wait, () -> queue(q, Math.min(delay * 2, LONGEST_RETRY_NANOS)));
                });
    }

    /**
     * After the broker closed one channel (the acknowledgement timeout, a refused basic.consume): declares again those
     * of {@code queues} (as named before: the queues its consumers read) that are recorded auto-delete and that the
     * close deleted, as the broker does with an auto-delete queue whose last consumer goes, then closes its channel. A
     * passive declare tells which are gone (404). Before each queue, and again before it is declared, {@code settle}
     * ends the consumers the application cancelled meanwhile: a queue left without one is forgotten by the recorder
     * and not declared. A queue gone is declared as recorded (a server-named one gets a new name) after the
     * auto-delete exchanges upstream of it (gone with their last binding, perhaps), then its bindings and the
     * exchange-to-exchange bindings into those exchanges. A refusal is reported and skipped.
     */
    CompletionStage<Void> declareIfGone(Collection<String> queues, Runnable settle) {
        CompletionStage<Void> done = CompletableFuture.completedFuture(null);
        for (String name : queues) {
            done = done.thenCompose(v -> declareIfGone(name, settle));
        }
        return closingChannel(done);
    }

    private CompletionStage<Void> declareIfGone(String name, Runnable settle) {
        settle.run();
        TopologyRecorder.Queue q = topology.queue(name); // by its name now: another restore may have renamed it
        if (q == null || !q.autoDelete()) {
            return CompletableFuture.completedFuture(null);
        }
        return attempt(ch -> ch.queueDeclare(QueueSpec.passive(q.name()))).thenCompose(failure -> {
            if (!isNotFound(failure)) {
                if (failure != null) { // not told apart: left to the consume, which reports what it meets
                    owner.topologyFailed("queue '" + q.name() + "' (passive)", failure);
                }
                return CompletableFuture.completedFuture(null);
            }
            settle.run();
            TopologyRecorder.Queue still = topology.queue(name);
            return still == null ? CompletableFuture.completedFuture(null) : declareAgain(still);
        });
    }

    private CompletionStage<Void> declareAgain(TopologyRecorder.Queue q) {
        LOG.debug("recovery: queue '{}' went with its consumers' channel; declaring it again", q.name());
        TopologyRecorder.Upstream up = topology.upstreamOf(q.name());
        CompletionStage<Void> done = CompletableFuture.completedFuture(null);
        for (TopologyRecorder.Exchange x : up.exchanges()) {
            done = done.thenCompose(v -> each("exchange '" + x.name() + "'", ch -> ch.exchangeDeclare(x.toDeclare())));
        }
        done = done.thenCompose(v -> queue(q, FIRST_RETRY_NANOS));
        // the queue's bindings as recorded once it is declared (a server-named one's are under its new name), then
        // those into the exchanges above
        done = done.thenCompose(v -> {
            CompletionStage<Void> b = CompletableFuture.completedFuture(null);
            for (TopologyRecorder.Binding x : topology.bindingsTo(topology.currentName(q.name()))) {
                b = b.thenCompose(w -> bind(x));
            }
            return b;
        });
        for (TopologyRecorder.Binding x : up.bindings()) {
            done = done.thenCompose(v -> bind(x));
        }
        return done;
    }

    /**
     * Waits until none of {@code queues} has a consumer, at most until the deadline, then closes its channel. The
     * lost connection's exclusive consumers are still attached to them when the broker did not see the loss, and a
     * basic.consume with the exclusive flag meanwhile is refused with 403 ACCESS_REFUSED, which ends that consumer
     * (its channel is opened again without it). Never fails but with the connection: a queue that cannot be read, or
     * keeps its consumers, is left to the consume, which reports it.
     */
    CompletionStage<Void> consumersGone(List<String> queues) {
        CompletionStage<Void> done = CompletableFuture.completedFuture(null);
        for (String q : queues) {
            done = done.thenCompose(v -> consumersGone(q, FIRST_RETRY_NANOS));
        }
        return closingChannel(done);
    }

    private CompletionStage<Void> consumersGone(String queue, long delay) {
        return channel()
                .thenCompose(ch -> ch.queueDeclare(QueueSpec.passive(queue)))
                .handle((ok, e) -> {
                    if (e != null && !handler.isOpen()) {
                        throw new CompletionException(e); // the connection is gone: stop
                    }
                    return e != null ? 0L : ok.consumerCount(); // not there: the consume says so
                })
                .thenCompose(consumers -> {
                    long wait = nextTry(delay);
                    if (consumers == 0 || wait < 0) {
                        return CompletableFuture.completedFuture(null);
                    }
                    LOG.debug(
                            "recovery: queue '{}' still has {} consumer(s), the lost connection's exclusive one among"
                                    + " them; looking again in {} ms",
                            queue,
                            consumers,
                            TimeUnit.NANOSECONDS.toMillis(wait));
                    return later(wait, () -> consumersGone(queue, Math.min(delay * 2, LONGEST_RETRY_NANOS)));
                });
    }

    /** Runs {@code next} on the event loop after {@code delayNanos}; the stage completes as its stage does. */
    private CompletionStage<Void> later(long delayNanos, java.util.function.Supplier<CompletionStage<Void>> next) {
        return CompletableFuture.runAsync(() -> {}, task -> loop.schedule(task, delayNanos, TimeUnit.NANOSECONDS))
                .thenCompose(v -> next.get());
    }

    /**
     * How long to wait for the next try, {@code delay} unless the deadline comes first: then the last try is made at
     * the deadline itself, the margin it leaves after the broker's heartbeat check. -1: no more tries.
     */
    private long nextTry(long delay) {
        if (deadline == 0) {
            return -1;
        }
        long left = deadline - loop.ticker().nanoTime();
        return left <= 0 ? -1 : Math.min(delay, left);
    }

    /** A passive declaration the broker answered with 404 NOT_FOUND (it closed the channel). */
    private static boolean isNotFound(Throwable refusal) {
        return isRefused(refusal, ReplyCode.NOT_FOUND);
    }

    /** A declaration the broker refused with 405 RESOURCE_LOCKED (it closed the channel). */
    private static boolean isLocked(Throwable refusal) {
        return isRefused(refusal, ReplyCode.RESOURCE_LOCKED);
    }

    private static boolean isRefused(Throwable refusal, int replyCode) {
        return refusal instanceof ChannelClosedException closed
                && closed.initiatedByBroker()
                && closed.replyCode() == replyCode;
    }

    /** One declaration; a refusal is reported and skipped (the refused channel is replaced). */
    private <T> CompletionStage<Void> each(String what, Function<RecoverableChannel, CompletionStage<T>> op) {
        return attempt(op).thenAccept(failure -> {
            if (failure != null) {
                owner.topologyFailed(what, failure);
            }
        });
    }

    /**
     * One declaration: completes with null when it was made, with the broker's refusal when it was refused, and
     * exceptionally when the connection is gone (the restore stops).
     */
    private <T> CompletionStage<Throwable> attempt(Function<RecoverableChannel, CompletionStage<T>> op) {
        return channel().thenCompose(op::apply).handle((v, e) -> {
            if (e != null && !handler.isOpen()) {
                throw new CompletionException(e); // the connection is gone: stop
            }
            // the broker's refusal itself, as the listeners are told it, not the stage's wrapper
            return e == null ? null : ConnectionRecovery.cause(e);
        });
    }

    private CompletionStage<RecoverableChannel> channel() {
        if (channel != null && channel.isOpen()) {
            return CompletableFuture.completedFuture(channel);
        }
        return connection.openChannel(handler).thenApply(c -> {
            channel = c;
            channel.recoverysOwn();
            return channel;
        });
    }
}
