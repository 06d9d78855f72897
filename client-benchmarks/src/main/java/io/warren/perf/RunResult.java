package io.warren.perf;

import io.warren.AmqpUri;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * Everything one client run measured, and its JSON form. Rates are over {@link #durationSeconds}: from
 * the moment the consumers start (then the producers) to the moment the run decided to stop
 * (connecting, declaring and closing are not in it). Latencies are kept in nanoseconds and reported in microseconds.
 *
 * @param id the test's name ({@code --id}), or null
 * @param client the driver's name
 * @param transport the transport its I/O ran on ({@link ClientDriver#transport()})
 * @param run the run's number for this client, from 1 (several with {@code --runs} or {@code --compare})
 * @param options what the run did
 * @param target where it ran: the URI without its password, or {@code peer:sink} / {@code peer:source}
 * @param warmupSeconds how long traffic flowed before the measured interval (not in any figure)
 * @param durationSeconds the measured interval
 * @param totals counts over the interval
 * @param confirmLatency confirm latencies (ns) over the interval
 * @param consumerLatency consumer latencies (ns) over the interval
 * @param peerReceiptLatency against the loopback peer in a paced run: from the publish call to the peer's handling
 *     of the publish's first body frame (ns); empty otherwise
 * @param timeline one point per second
 * @param usage CPU, allocation and memory over the interval
 * @param peer the loopback peer's own counts over the interval, or null against a broker
 * @param stoppedBy why the run ended: {@code time}, {@code counts}, {@code interrupted}, {@code failure}
 * @param failure what failed, or null
 */
record RunResult(
        String id,
        String client,
        String transport,
        int run,
        RunOptions options,
        String target,
        long warmupSeconds,
        double durationSeconds,
        Metrics.Counters totals,
        Histogram confirmLatency,
        Histogram consumerLatency,
        Histogram peerReceiptLatency,
        List<ProgressTicker.TimelinePoint> timeline,
        ResourceMeter.Usage usage,
        PeerStats peer,
        String stoppedBy,
        String failure) {

    /** The percentiles written for the latency distribution charts. */
    static final double[] PERCENTILES = {50, 75, 90, 95, 99, 99.9, 99.99, 100};

    double sentRate() {
        return totals.published() / durationSeconds;
    }

    double confirmedRate() {
        return totals.confirmed() / durationSeconds;
    }

    double receivedRate() {
        return totals.received() / durationSeconds;
    }

    /** Body megabytes (10^6 bytes) per second published. */
    double sentMegabytesPerSecond() {
        return sentRate() * options.size() / 1e6;
    }

    /** Body megabytes (10^6 bytes) per second received. */
    double receivedMegabytesPerSecond() {
        return receivedRate() * options.size() / 1e6;
    }

    /** Publishes plus deliveries: the client operations CPU and allocation are divided by. */
    long messageOperations() {
        return totals.published() + totals.received();
    }

    Double cpuNanosPerMessage() {
        return perMessage(usage.cpuNanos());
    }

    /**
     * The producer threads' part of {@link #cpuNanosPerMessage()}, over the same publishes + deliveries; null without
     * producers, or when one ended before the run did (its CPU is then not told apart).
     */
    Double producerCpuNanosPerMessage() {
        Long producers = producerCpuNanos(usage, options.producers());
        return producers == null ? null : perMessage(producers);
    }

    /** The rest of the client's CPU: its own threads (I/O, dispatch), the JIT and GC, per publish or delivery. */
    Double otherCpuNanosPerMessage() {
        Long producers = producerCpuNanos(usage, options.producers());
        return producers == null || usage.cpuNanos() == null ? null : perMessage(usage.cpuNanos() - producers);
    }

    /** The JIT compiler threads' part of {@link #cpuNanosPerMessage()}; null without /proc. */
    Double jitCpuNanosPerMessage() {
        return usage.vmCpu() == null ? null : perMessage(usage.vmCpu().jitNanos());
    }

    /** The garbage collector's threads' part of {@link #cpuNanosPerMessage()}; null without /proc. */
    Double gcCpuNanosPerMessage() {
        return usage.vmCpu() == null ? null : perMessage(usage.vmCpu().gcNanos());
    }

    /**
     * The CPU time of the run's RabbitMQ nodes over the run, per publish or delivery as the client's; null when they
     * are elsewhere or not readable ({@link BrokerCpu}).
     */
    Double brokerCpuNanosPerMessage() {
        return perMessage(usage.brokerCpuNanos());
    }

    /** The producer threads' CPU when every one of {@code producers} was alive at the end; else null. */
    static Long producerCpuNanos(ResourceMeter.Usage usage, int producers) {
        return producers == 0 || usage.producerThreadsAtEnd() < producers ? null : usage.producerCpuNanos();
    }

    Double allocatedBytesPerMessage() {
        return perMessage(usage.allocatedBytes());
    }

    /** Context switches (voluntary and involuntary) of the client's threads per publish or delivery. */
    Double contextSwitchesPerMessage() {
        if (usage.voluntarySwitches() == null || usage.involuntarySwitches() == null) {
            return null;
        }
        return perMessage(usage.voluntarySwitches() + usage.involuntarySwitches());
    }

    /**
     * Published but not received at the end (each consumer's copy counted, the warmup's publishes too: the timeline's
     * last point); null unless the run both publishes and consumes.
     */
    Long backlogAtEnd() {
        if (options.deliveriesPerPublish() == 0
                || timeline.isEmpty()
                || Double.isNaN(timeline.get(timeline.size() - 1).backlog())) {
            return null;
        }
        return (long) timeline.get(timeline.size() - 1).backlog();
    }

    /**
     * A warning when the consumers did not keep up: the backlog at the end is more than half a second of
     * deliveries (each publish's copies, one per consumer's own queue, counted) and more than 1,000 messages, so
     * consumer latency measured mostly time spent in a queue.
     * Null when there is nothing to warn about.
     */
    String backlogWarning() {
        Long end = backlogAtEnd();
        // the backlog counts every copy: so does the half second it is held against
        if (end == null || end <= Math.max(1000, sentRate() * options.deliveriesPerPublish() / 2)) {
            return null;
        }
        double mid = Double.NaN;
        if (timeline.size() >= 2) {
            mid = timeline.get((timeline.size() - 1) / 2).backlog();
        }
        String how = !Double.isNaN(mid) && end > 1.5 * mid
                ? String.format(
                        java.util.Locale.ROOT,
                        "the backlog grew from %s mid-run to %s at the end",
                        Format.count((long) mid),
                        Format.count(end))
                : "a backlog of " + Format.count(end) + " stood at the end";
        return how + " (sent " + Format.count(totals.published()) + ", received " + Format.count(totals.received())
                + "): the consumers or the broker did not keep up at this rate, so consumer latency includes the wait "
                + "in that queue; lower the rate (-r) to measure the clients";
    }

    /**
     * Stolen time from which a run is warned about: a quiet host takes under 1 %, and on a 2-core machine runs with
     * 2.5-5 % already had p99.9 tails twice those of their neighbours.
     */
    static final int STEAL_WARNING_PERCENT = 2;

    /** The machine's CPU time the hypervisor took during the run, in per cent; null where it is not measured. */
    Double stolenPercent() {
        return usage.stolenPercent();
    }

    /**
     * A warning when the hypervisor took {@link #STEAL_WARNING_PERCENT} or more of the machine's CPU time during the
     * run: the client's and the broker's threads then wait for CPUs the guest does not get, and the latency tails
     * (and, where the guest does not subtract stolen time from its threads, CPU per message) measure the host. Null
     * when there is nothing to warn about.
     */
    String stealWarning() {
        Double stolen = stolenPercent();
        if (stolen == null || stolen < STEAL_WARNING_PERCENT) {
            return null;
        }
        return String.format(
                java.util.Locale.ROOT,
                "the hypervisor took %.1f %% of this machine's CPU time during the run (steal, /proc/stat): its latency "
                        + "tails measure the host as much as the clients; compare runs without it",
                stolen);
    }

    private Double perMessage(Long total) {
        long n = messageOperations();
        return total == null || n == 0 ? null : (double) total / n;
    }

    /** The confirm latency at {@code percentile} in microseconds, null without samples. */
    Double confirmLatencyMicros(double percentile) {
        return micros(confirmLatency, percentile);
    }

    /** The consumer latency at {@code percentile} in microseconds, null without samples. */
    Double consumerLatencyMicros(double percentile) {
        return micros(consumerLatency, percentile);
    }

    private static Double micros(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? null : h.getValueAtPercentile(percentile) / 1000.0;
    }

    /** The JSON object of this run (field names in the issue's spelling, units in their suffix). */
    Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("client", client);
        m.put("transport", transport);
        m.put("run", run);
        m.put("target", target);
        m.put("producers", options.producers());
        m.put("consumers", options.consumers());
        m.put("size", options.size());
        m.put("confirm", options.confirms() ? options.confirm() : null);
        m.put("rate", options.rate() > 0 ? options.rate() : null);
        m.put("qos", options.qos());
        m.put("multi_ack_every", options.multiAckEvery());
        m.put("autoack", options.autoAck());
        m.put("persistent", options.persistent());
        m.put("mandatory", options.mandatory());
        m.put("pmessages", options.producerMessages());
        m.put("cmessages", options.consumerMessages());
        m.put("warmup_s", warmupSeconds);
        m.put("duration_s", durationSeconds);
        m.put("stopped_by", stoppedBy);
        m.put("sent", totals.published());
        m.put("confirmed", totals.confirmed());
        m.put("nacked", totals.nacked());
        m.put("returned", totals.returned());
        m.put("received", totals.received());
        m.put("sent_rate", sentRate());
        m.put("confirmed_rate", confirmedRate());
        m.put("received_rate", receivedRate());
        m.put("sent_mb_s", sentMegabytesPerSecond());
        m.put("received_mb_s", receivedMegabytesPerSecond());
        m.put("confirm_latency_p50_us", confirmLatencyMicros(50));
        m.put("confirm_latency_p99_us", confirmLatencyMicros(99));
        m.put("confirm_latency_p999_us", confirmLatencyMicros(99.9));
        m.put("confirm_latency_max_us", confirmLatencyMicros(100));
        m.put("consumer_latency_p50_us", consumerLatencyMicros(50));
        m.put("consumer_latency_p99_us", consumerLatencyMicros(99));
        m.put("consumer_latency_p999_us", consumerLatencyMicros(99.9));
        m.put("consumer_latency_max_us", consumerLatencyMicros(100));
        m.put("peer_receipt_latency_p50_us", micros(peerReceiptLatency, 50));
        m.put("peer_receipt_latency_p99_us", micros(peerReceiptLatency, 99));
        m.put("peer_receipt_latency_p999_us", micros(peerReceiptLatency, 99.9));
        m.put("peer_receipt_latency_max_us", micros(peerReceiptLatency, 100));
        m.put("cpu_ns_per_msg", cpuNanosPerMessage());
        m.put("producer_cpu_ns_per_msg", producerCpuNanosPerMessage());
        m.put("other_cpu_ns_per_msg", otherCpuNanosPerMessage());
        m.put("jit_cpu_ns_per_msg", jitCpuNanosPerMessage());
        m.put("gc_cpu_ns_per_msg", gcCpuNanosPerMessage());
        m.put("broker_cpu_ns_per_msg", brokerCpuNanosPerMessage());
        m.put("broker_nodes", usage.brokerCpuNanos() == null ? null : usage.brokerNodes());
        m.put("ctx_switches_per_msg", contextSwitchesPerMessage());
        m.put("voluntary_ctx_switches", usage.voluntarySwitches());
        m.put("involuntary_ctx_switches", usage.involuntarySwitches());
        m.put("backlog_end", backlogAtEnd());
        m.put("backlog_warning", backlogWarning());
        m.put("steal_percent", stolenPercent());
        m.put("steal_warning", stealWarning());
        m.put("alloc_bytes_per_msg", allocatedBytesPerMessage());
        m.put("peak_heap_bytes", usage.peakHeapBytes());
        m.put("live_heap_peak_bytes", usage.liveHeapPeakBytes());
        m.put("peak_direct_bytes", usage.peakDirectBytes());
        m.put("cpu_ns", usage.cpuNanos());
        m.put("alloc_bytes", usage.allocatedBytes());
        m.put("gc_count", usage.gcCount());
        m.put("gc_time_ms", usage.gcMillis());
        m.put("peer", peer == null ? null : peer.toJson(durationSeconds, usage));
        m.put("failure", failure);
        m.put("confirm_latency_percentiles_us", percentiles(confirmLatency));
        m.put("consumer_latency_percentiles_us", percentiles(consumerLatency));
        m.put("peer_receipt_latency_percentiles_us", percentiles(peerReceiptLatency));
        List<Object> points = new ArrayList<>(timeline.size());
        for (ProgressTicker.TimelinePoint p : timeline) {
            // [t_s, sent_rate, confirmed_rate, received_rate, confirm p50, p99, consumer p50, p99 (us), backlog,
            // process CPU (% of one core), heap in use (MiB)]
            points.add(List.of(
                    p.seconds(),
                    p.sentRate(),
                    p.confirmedRate(),
                    p.receivedRate(),
                    p.confirmP50Micros(),
                    p.confirmP99Micros(),
                    p.consumerP50Micros(),
                    p.consumerP99Micros(),
                    p.backlog(),
                    p.cpuPercent(),
                    p.heapMebibytes()));
        }
        m.put(
                "timeline_fields",
                List.of(
                        "t_s",
                        "sent_rate",
                        "confirmed_rate",
                        "received_rate",
                        "confirm_p50_us",
                        "confirm_p99_us",
                        "consumer_p50_us",
                        "consumer_p99_us",
                        "backlog",
                        "cpu_pct",
                        "heap_mib"));
        m.put("timeline", points);
        return m;
    }

    private static List<Object> percentiles(Histogram h) {
        List<Object> pairs = new ArrayList<>();
        if (h.getTotalCount() == 0) {
            return pairs;
        }
        for (double p : PERCENTILES) {
            pairs.add(List.of(p, h.getValueAtPercentile(p) / 1000.0));
        }
        return pairs;
    }

    /**
     * {@code uri} without its password, for printing and for the JSON: as {@link AmqpUri#redact} hides it, with the
     * user name put back when the URI parses (its user info is then all that comes before its last '@').
     */
    static String redact(String uri) {
        String hidden = AmqpUri.redact(uri);
        String user;
        try {
            user = AmqpUri.parse(uri).username();
        } catch (IllegalArgumentException e) {
            return hidden;
        }
        return user == null
                ? hidden
                : hidden.replace("//***@", "//" + URLEncoder.encode(user, StandardCharsets.UTF_8) + "@");
    }

    /**
     * What the loopback peer itself counted over the run: the instrument's side of the figures.
     *
     * @param publishes complete publishes (method, header, body) the peer read
     * @param confirms publishes the peer confirmed (counted per publish, sent as multiple acks)
     * @param deliveries deliveries the peer wrote
     */
    record PeerStats(long publishes, long confirms, long deliveries) {
        Map<String, Object> toJson(double seconds, ResourceMeter.Usage usage) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("publishes", publishes);
            m.put("confirms", confirms);
            m.put("deliveries", deliveries);
            m.put("publish_rate", publishes / seconds);
            m.put("delivery_rate", deliveries / seconds);
            m.put("cpu_ns_per_msg", perMessage(usage.peerCpuNanos()));
            m.put("alloc_bytes_per_msg", perMessage(usage.peerAllocatedBytes()));
            return m;
        }

        /** A peer total divided by the messages the peer handled (publishes read plus deliveries written). */
        Double perMessage(long total) {
            long n = publishes + deliveries;
            return n == 0 ? null : (double) total / n;
        }
    }
}
