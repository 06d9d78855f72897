package io.warren.perf;

import java.io.PrintStream;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * One measured run of one {@link ClientDriver}: connect, declare, consume, publish, watch the stop
 * conditions, take the final readings, stop, close.
 *
 * <p>The run stops at the first of:
 * <ul>
 *   <li>{@code --time} seconds after the consumers and producers started (after the {@code --warmup},
 *       when one is given: the counts of the warmup are not kept);</li>
 *   <li>the counts: every producer published its {@code --pmessages} (and saw them confirmed), and every
 *       consumer took its {@code --cmessages}; consumers without a count are done when they received
 *       every copy of what was published, or received nothing for {@value #IDLE_SECONDS} s once the
 *       producers were done; producers without a count are stopped once the consumers are done;</li>
 *   <li>a failure reported to {@link Metrics#fail};</li>
 *   <li>a {@link StopSignal} (Ctrl-C).</li>
 * </ul>
 */
final class PerfRun {

    /** The run's own thread: 15 characters, all Linux keeps of a thread's name, for the meter to leave it out. */
    static final String RUN_THREAD = "warren-perf-run";

    static final int IDLE_SECONDS = 3;

    private final RunOptions options;
    private final long timeSeconds;
    private final long warmupSeconds;
    private final String target;
    private final String id;
    private final PrintStream out;
    private final StopSignal stop;
    private final LoopbackPeer peer;
    /** The brokers' ports when they are on this machine ({@link BrokerCpu}), else null. */
    private final Set<Integer> brokerPorts;

    /**
     * @param timeSeconds the time limit, 0 for none
     * @param warmupSeconds how long traffic flows before the measured interval starts, 0 for none
     * @param target where the run goes, as printed and written ({@link RunResult#target})
     * @param id the test's name ({@code --id}), or null
     * @param peer the in-process peer (its counts and receipt latency are read), or null against a broker
     */
    PerfRun(
            RunOptions options,
            long timeSeconds,
            long warmupSeconds,
            String target,
            String id,
            PrintStream out,
            StopSignal stop,
            LoopbackPeer peer) {
        this.id = id;
        this.options = options;
        this.timeSeconds = timeSeconds;
        this.warmupSeconds = warmupSeconds;
        this.target = target;
        this.out = out;
        this.stop = stop;
        this.peer = peer;
        this.brokerPorts = peer == null ? BrokerCpu.localPorts(options.uris()) : null;
    }

    /** Runs {@code driver} once and closes it. Exceptions from connecting or declaring propagate. */
    /**
     * Runs {@code driver} once on a thread of its own ({@link #RUN_THREAD}), which the meter counts as the tool's: it
     * waits for the run's end, polling its stop conditions every 20 ms, and those wake-ups are not the client's.
     * (The JVM's main thread keeps its native name "main" whatever it is renamed to, so it could not be told apart.)
     */
    RunResult run(ClientDriver driver, int runNumber) throws Exception {
        RunResult[] result = new RunResult[1];
        Throwable[] failure = new Throwable[1];
        Thread t = new Thread(
                () -> {
                    try {
                        result[0] = runHere(driver, runNumber);
                    } catch (Throwable e) {
                        failure[0] = e;
                    }
                },
                RUN_THREAD);
        t.start();
        try {
            t.join();
        } catch (InterruptedException e) {
            stop.request();
            t.join();
            throw e;
        }
        if (failure[0] instanceof Exception e) {
            throw e;
        }
        if (failure[0] instanceof Error e) {
            throw e;
        }
        return result[0];
    }

    private RunResult runHere(ClientDriver driver, int runNumber) throws Exception {
        Metrics metrics = new Metrics();
        try {
            out.printf(
                    "%s run %d: %d producer(s), %d consumer(s), %d B messages, to %s%n",
                    driver.name(), runNumber, options.producers(), options.consumers(), options.size(), target);
            driver.connect(options, metrics);
            String queuedBefore = queuedBeforeWarning(options, driver.declare());
            if (queuedBefore != null) {
                out.println("  WARNING: " + queuedBefore);
            }

            // every run starts from a collected heap, so earlier runs' garbage is not billed to this one
            System.gc();
            // per run: a restarted node is a new process
            ResourceMeter meter = new ResourceMeter(BrokerCpu.find(brokerPorts), driver.onNetty(), peer != null);
            if (warmupSeconds > 0) {
                // traffic flows, progress is printed, nothing is kept: the JIT compiles the hot paths first
                ProgressTicker warmup = new ProgressTicker(
                        metrics, meter, out, label(driver) + " warmup", options.deliveriesPerPublish());
                long warmupStart = System.nanoTime();
                warmup.start(warmupStart);
                driver.startConsumers();
                driver.startProducers();
                long warmupEnd = warmupStart + TimeUnit.SECONDS.toNanos(warmupSeconds);
                while (System.nanoTime() - warmupEnd < 0 && metrics.failure() == null && !stop.await(20)) {
                    // warming up
                }
                warmup.finish(System.nanoTime());
            }
            ProgressTicker ticker =
                    new ProgressTicker(metrics, meter, out, label(driver), options.deliveriesPerPublish());
            RunResult.PeerStats peerBefore = peer == null ? null : peer.stats();
            if (peer != null) {
                peer.recordReceiptLatency(options.rate() > 0);
                peer.intervalReceiptLatency(null); // what the warmup recorded belongs to no run
            }
            // the measured interval starts before the consumers do: a source (the loopback peer, a full
            // queue) starts delivering at basic.consume, and those deliveries belong to the run
            meter.start();
            long start = System.nanoTime();
            ticker.start(start);
            if (warmupSeconds == 0) {
                driver.startConsumers();
                driver.startProducers();
            }

            String stoppedBy = awaitEnd(metrics, ticker, start);
            long end = System.nanoTime();
            // the counts first, at the end: the resource readings after them take milliseconds (/proc for every
            // thread), and what the clients do meanwhile is not the run's
            ResourceMeter.Usage usage;
            RunResult.PeerStats peerAfter;
            Histogram receipt;
            try {
                ticker.finish(end);
                peerAfter = peer == null ? null : peer.stats();
                receipt = peer == null ? new Histogram(3) : peer.intervalReceiptLatency(null);
                usage = meter.stop();
            } finally {
                ticker.close();
            }
            Throwable failure = metrics.failure();
            driver.stop();

            RunResult.PeerStats peerStats = peer == null
                    ? null
                    : new RunResult.PeerStats(
                            peerAfter.publishes() - peerBefore.publishes(),
                            peerAfter.confirms() - peerBefore.confirms(),
                            peerAfter.deliveries() - peerBefore.deliveries());
            return new RunResult(
                    id,
                    driver.name(),
                    driver.transport(),
                    runNumber,
                    options,
                    target,
                    warmupSeconds,
                    (end - start) / 1e9,
                    ticker.totals(),
                    ticker.confirmLatency(),
                    ticker.consumerLatency(),
                    receipt,
                    ticker.timeline(),
                    usage,
                    peerStats,
                    stoppedBy,
                    failure == null ? null : describe(failure));
        } finally {
            driver.close();
        }
    }

    private String label(ClientDriver driver) {
        return id == null ? driver.name() : id + " " + driver.name();
    }

    private String awaitEnd(Metrics metrics, ProgressTicker ticker, long start) throws InterruptedException {
        long deadline = timeSeconds > 0 ? start + TimeUnit.SECONDS.toNanos(timeSeconds) : Long.MAX_VALUE;
        long lastReceived = -1;
        long lastReceivedChange = System.nanoTime();
        while (true) {
            if (stop.await(20)) {
                return "interrupted";
            }
            if (metrics.failure() != null) {
                return "failure";
            }
            long now = System.nanoTime();
            if (deadline != Long.MAX_VALUE && now - deadline >= 0) {
                return "time";
            }
            Metrics.Counters c = ticker.current();
            if (c.received() != lastReceived) {
                lastReceived = c.received();
                lastReceivedChange = now;
            }
            boolean idle = now - lastReceivedChange > TimeUnit.SECONDS.toNanos(IDLE_SECONDS);
            if (countsReached(c, idle)) {
                return "counts";
            }
        }
    }

    /** The count-based stop condition (see the class comment); false when no count was given. */
    boolean countsReached(Metrics.Counters c, boolean consumersIdle) {
        long pmessages = options.producerMessages();
        long cmessages = options.consumerMessages();
        if (pmessages == 0 && cmessages == 0) {
            return false;
        }
        boolean producersDone = options.producers() == 0 || c.producersDone() >= options.producers();
        if (pmessages > 0 && !producersDone) {
            return false;
        }
        if (options.consumers() == 0) {
            return true;
        }
        if (cmessages > 0) {
            return c.consumersDone() >= options.consumers()
                    || (pmessages > 0 && consumersIdle); // producers sent less than the consumers wait for
        }
        long copies = options.serverNamedQueues() ? options.consumers() : 1;
        return c.received() >= c.published() * copies || consumersIdle;
    }

    /** "what failed: why", walking the causes for the most telling message. */
    /**
     * A warning when the named queue the consumers read held {@code queued} messages before the run (a queue not
     * auto-deleted, left by an earlier run or another publisher): the consumers take them first, and their stamps are
     * not this run's, so latency counts them wrongly until they are gone. Null when there is nothing to warn about.
     */
    static String queuedBeforeWarning(RunOptions options, long queued) {
        if (queued <= 0 || options.consumers() == 0 || options.serverNamedQueues()) {
            return null;
        }
        return "queue '" + options.queue() + "' held " + Format.count(queued) + " message(s) before this run: the "
                + "consumers take them first, and their latency is not this run's (stamped by an earlier run or "
                + "another publisher) until they are gone; purge the queue or name another (-u)";
    }

    static String describe(Throwable failure) {
        StringBuilder s = new StringBuilder(failure.toString());
        for (Throwable cause = failure.getCause(); cause != null && cause != failure; cause = cause.getCause()) {
            s.append("; caused by ").append(cause);
            if (cause.getCause() == cause) {
                break;
            }
        }
        return s.toString();
    }

    /** Ctrl-C, as the shutdown hook tells the running run. */
    static final class StopSignal {
        private final CountDownLatch requested = new CountDownLatch(1);

        void request() {
            requested.countDown();
        }

        boolean requested() {
            return requested.getCount() == 0;
        }

        /** Waits up to {@code millis} for a stop request; returns whether one came. */
        boolean await(long millis) throws InterruptedException {
            return requested.await(millis, TimeUnit.MILLISECONDS);
        }
    }
}
