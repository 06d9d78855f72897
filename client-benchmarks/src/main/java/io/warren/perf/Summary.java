package io.warren.perf;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The text the tool prints at the end of a run, and the side-by-side table of a comparison. */
final class Summary {

    /** The figures compared side by side: JSON key, label, decimals, which way is better. */
    static final List<Row> COMPARED = List.of(
            new Row("sent_rate", "sent msg/s", 0, 1),
            new Row("confirmed_rate", "confirmed msg/s", 0, 1),
            new Row("received_rate", "received msg/s", 0, 1),
            new Row("sent_mb_s", "sent MB/s", 1, 1),
            new Row("received_mb_s", "received MB/s", 1, 1),
            new Row("confirm_latency_p50_us", "confirm latency p50 (us)", 0, -1),
            new Row("confirm_latency_p99_us", "confirm latency p99 (us)", 0, -1),
            new Row("confirm_latency_p999_us", "confirm latency p99.9 (us)", 0, -1),
            new Row("consumer_latency_p50_us", "consumer latency p50 (us)", 0, -1),
            new Row("consumer_latency_p99_us", "consumer latency p99 (us)", 0, -1),
            new Row("consumer_latency_p999_us", "consumer latency p99.9 (us)", 0, -1),
            new Row("consumer_latency_max_us", "consumer latency max (us)", 0, -1),
            new Row("peer_receipt_latency_p50_us", "publish to peer receipt p50 (us)", 0, -1),
            new Row("peer_receipt_latency_p99_us", "publish to peer receipt p99 (us)", 0, -1),
            new Row("peer_receipt_latency_p999_us", "publish to peer receipt p99.9 (us)", 0, -1),
            new Row("peer_receipt_latency_max_us", "publish to peer receipt max (us)", 0, -1),
            new Row("cpu_ns_per_msg", "client CPU ns/msg", 0, -1),
            new Row("producer_cpu_ns_per_msg", "client CPU, producer threads ns/msg", 0, -1),
            new Row("other_cpu_ns_per_msg", "client CPU, other threads ns/msg", 0, -1),
            new Row("jit_cpu_ns_per_msg", "client CPU, of which JIT compiler threads (at least) ns/msg", 0, -1),
            new Row("gc_cpu_ns_per_msg", "client CPU, of which GC threads ns/msg", 0, -1),
            new Row("broker_cpu_ns_per_msg", "broker CPU ns/msg (its nodes, on this machine)", 0, -1),
            new Row("ctx_switches_per_msg", "context switches/msg", 2, -1),
            new Row("alloc_bytes_per_msg", "allocated B/msg", 0, -1),
            new Row("backlog_end", "backlog at the end (msgs)", 0, -1),
            new Row("steal_percent", "CPU time stolen by the hypervisor (%, the machine's)", 1, 0),
            new Row("peak_heap_bytes", "peak heap (MiB)", -1, -1),
            new Row("live_heap_peak_bytes", "live heap after GC peak (MiB)", -1, -1),
            new Row("peak_direct_bytes", "peak direct memory (MiB)", -1, -1));

    /** The figures the headline names, when both clients have them: the ones a reader decides on. */
    private static final List<String> HEADLINE = List.of(
            "sent_rate",
            "received_rate",
            "confirm_latency_p50_us",
            "confirm_latency_p99_us",
            "consumer_latency_p50_us",
            "consumer_latency_p99_us",
            "peer_receipt_latency_p50_us",
            "peer_receipt_latency_p99_us",
            "peer_receipt_latency_p999_us",
            "cpu_ns_per_msg",
            "ctx_switches_per_msg",
            "alloc_bytes_per_msg");

    private Summary() {}

    /** One line of a run's summary: {@code label} in a column of 17, then {@code format} with {@code args}. */
    private static void field(PrintStream out, String format, String label, Object... args) {
        Object[] all = new Object[args.length + 1];
        all[0] = label;
        System.arraycopy(args, 0, all, 1, args.length);
        out.printf(Locale.ROOT, "  %-17s " + format, all);
    }

    /** The end-of-run summary of one run. */
    static void print(RunResult r, PrintStream out) {
        RunOptions o = r.options();
        out.printf(
                Locale.ROOT,
                "%n== %s%s run %d: %.1f s (stopped by %s) to %s, %d producer(s), %d consumer(s), %d B%s%s ==%n",
                r.id() == null ? "" : r.id() + ": ",
                r.client(),
                r.run(),
                r.durationSeconds(),
                r.stoppedBy(),
                r.target(),
                o.producers(),
                o.consumers(),
                o.size(),
                o.confirms() ? ", confirm " + o.confirm() : "",
                o.rate() > 0 ? ", rate " + o.rate() : "");
        if (r.failure() != null) {
            out.println("  FAILED: " + r.failure());
        }
        line(out, "sent", r.totals().published(), r.sentRate(), r.sentMegabytesPerSecond());
        if (o.confirms()) {
            line(out, "confirmed", r.totals().confirmed(), r.confirmedRate(), Double.NaN);
        }
        line(out, "received", r.totals().received(), r.receivedRate(), r.receivedMegabytesPerSecond());
        if (r.totals().nacked() > 0 || r.totals().returned() > 0) {
            field(
                    out,
                    "%s nacked, %s returned%n",
                    "",
                    Format.count(r.totals().nacked()),
                    Format.count(r.totals().returned()));
        }
        latency(out, "confirm latency", r.confirmLatency().getTotalCount(), r::confirmLatencyMicros);
        latency(out, "consumer latency", r.consumerLatency().getTotalCount(), r::consumerLatencyMicros);
        latency(
                out,
                "peer receipt",
                r.peerReceiptLatency().getTotalCount(),
                p -> r.peerReceiptLatency().getTotalCount() == 0
                        ? null
                        : r.peerReceiptLatency().getValueAtPercentile(p) / 1000.0);
        if (r.peerReceiptLatency().getTotalCount() > 0) {
            field(out, "from the publish call to the loopback peer handling the publish's body frame%n", "");
        }
        if (r.consumerLatency().getTotalCount() > 0) {
            field(
                    out,
                    "from the publish call to the consumer's handler, the client's back-pressure and queueing in"
                            + " the client and the broker included%n"
                            + "                    (timed from the call as made, once the confirm window has room,"
                            + " not from its slot in the pace: a producer behind its schedule is not counted late)%n",
                    "");
        }
        if (r.backlogAtEnd() != null) {
            field(out, "%s msg published and not yet received at the end%n", "backlog", Format.count(r.backlogAtEnd()));
        }
        if (r.backlogWarning() != null) {
            out.println("  WARNING: " + r.backlogWarning());
        }
        if (r.stolenPercent() != null) {
            field(
                    out,
                    "%s %% of the machine's CPU time went to other guests of its hypervisor%n",
                    "stolen",
                    Format.number(r.stolenPercent(), 1));
        }
        if (r.stealWarning() != null) {
            out.println("  WARNING: " + r.stealWarning());
        }
        ResourceMeter.Usage u = r.usage();
        field(
                out,
                "%s ns/msg (%s s CPU over %s publishes + deliveries; in-process peer excluded)%n",
                "client CPU",
                Format.number(r.cpuNanosPerMessage(), 0),
                u.cpuNanos() == null ? "-" : Format.number(u.cpuNanos() / 1e9, 2),
                Format.count(r.messageOperations()));
        if (r.producerCpuNanosPerMessage() != null) {
            field(
                    out,
                    "%s ns/msg in the producer threads (publish calls, and the pacer's sleeps between them),"
                            + " %s ns/msg in the client's other threads, JIT and GC%n",
                    "",
                    Format.number(r.producerCpuNanosPerMessage(), 0),
                    Format.number(r.otherCpuNanosPerMessage(), 0));
        }
        if (r.jitCpuNanosPerMessage() != null) {
            field(
                    out,
                    "of which at least %s ns/msg in the JIT compiler's threads and %s ns/msg in the garbage collector's%n",
                    "",
                    Format.number(r.jitCpuNanosPerMessage(), 0),
                    Format.number(r.gcCpuNanosPerMessage(), 0));
        }
        if (r.brokerCpuNanosPerMessage() != null) {
            field(
                    out,
                    "%s ns/msg (%s s CPU of the %s RabbitMQ node(s) serving the run, on this machine; not the client's)%n",
                    "broker CPU",
                    Format.number(r.brokerCpuNanosPerMessage(), 0),
                    Format.number(u.brokerCpuNanos() / 1e9, 2),
                    u.brokerNodes());
        }
        if (r.contextSwitchesPerMessage() != null) {
            field(
                    out,
                    "%s per msg (%s voluntary, %s involuntary; the client's threads)%n",
                    "context switches",
                    Format.number(r.contextSwitchesPerMessage(), 2),
                    Format.count(u.voluntarySwitches()),
                    Format.count(u.involuntarySwitches()));
        }
        field(
                out,
                "%s B/msg (%s on the heap in total)%n",
                "allocation",
                Format.number(r.allocatedBytesPerMessage(), 0),
                Format.bytes(u.allocatedBytes()));
        field(
                out,
                "peak %s (heap pools' peaks added up), live after GC peak %s, %d GC(s) %d ms%n",
                "heap",
                Format.bytes(u.peakHeapBytes()),
                Format.bytes(u.liveHeapPeakBytes()),
                u.gcCount(),
                u.gcMillis());
        field(
                out,
                "peak %s (sampled every 100 ms%s)%n",
                "direct memory",
                Format.bytes(u.peakDirectBytes()),
                Clients.AMQP_CLIENT.equals(r.client())
                        ? "; outside Netty's allocators, which are not this client's"
                        : "");
        if (r.peer() != null) {
            RunResult.PeerStats p = r.peer();
            field(
                    out,
                    "read %s publishes (%s), confirmed %s, wrote %s deliveries (%s); "
                            + "peer threads %s ns and %s B per message%n",
                    "peer",
                    Format.count(p.publishes()),
                    Format.rate(p.publishes() / r.durationSeconds()),
                    Format.count(p.confirms()),
                    Format.count(p.deliveries()),
                    Format.rate(p.deliveries() / r.durationSeconds()),
                    Format.number(p.perMessage(u.peerCpuNanos()), 0),
                    Format.number(p.perMessage(u.peerAllocatedBytes()), 0));
        }
        out.println();
    }

    private static void line(PrintStream out, String what, long count, double rate, double megabytes) {
        field(
                out,
                "%15s msg  %18s%s%n",
                what,
                Format.count(count),
                Format.rate(rate),
                Double.isNaN(megabytes) ? "" : String.format(Locale.ROOT, "  %.2f MB/s", megabytes));
    }

    private interface Percentile {
        Double at(double percentile);
    }

    private static void latency(PrintStream out, String what, long samples, Percentile p) {
        if (samples == 0) {
            return;
        }
        field(
                out,
                "p50 %s  p75 %s  p95 %s  p99 %s  p99.9 %s  max %s  (%s samples)%n",
                what,
                Format.micros(p.at(50)),
                Format.micros(p.at(75)),
                Format.micros(p.at(95)),
                Format.micros(p.at(99)),
                Format.micros(p.at(99.9)),
                Format.micros(p.at(100)),
                Format.count(samples));
    }

    /**
     * The Markdown table of a comparison: per client the median over its runs of each figure, and the
     * ratio of every other client's median to the first client's.
     */
    static List<String> comparisonTable(List<Map<String, Object>> runs, List<String> clients) {
        List<List<String>> rows = comparison(runs, clients);
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            lines.add("| " + String.join(" | ", rows.get(i)) + " |");
            if (i == 0) {
                StringBuilder rule = new StringBuilder("|---|");
                rule.append("---:|".repeat(rows.get(0).size() - 1));
                lines.add(rule.toString());
            }
        }
        return lines;
    }

    /**
     * The comparison as rows of cells, the first row being the header: figure, one cell per client (the
     * median over its runs, and with several runs their range, min to max), then one ratio per client after
     * the first ({@code other / first}). Left out: figures no client has, figures that are 0 for every
     * client; a ratio over a first client's 0, or of a figure of the conditions ({@link Row#better()} 0), is shown
     * as "-".
     */
    static List<List<String>> comparison(List<Map<String, Object>> runs, List<String> clients) {
        List<List<String>> rows = new ArrayList<>();
        List<String> head = new ArrayList<>();
        head.add("figure (median of runs, min-max)");
        head.addAll(clients);
        for (int i = 1; i < clients.size(); i++) {
            head.add(clients.get(i) + " / " + clients.get(0));
        }
        rows.add(head);
        for (Row row : COMPARED) {
            List<Double> medians = new ArrayList<>();
            for (String c : clients) {
                medians.add(median(runs, c, row.key()));
            }
            if (medians.stream().allMatch(m -> m == null || row.isZero(m))) {
                continue;
            }
            List<String> cells = new ArrayList<>();
            cells.add(row.label());
            for (String c : clients) {
                cells.add(row.formatSpread(values(runs, c, row.key())));
            }
            for (int i = 1; i < clients.size(); i++) {
                Double base = medians.get(0);
                Double other = medians.get(i);
                cells.add(
                        row.better() == 0 || base == null || other == null || row.isZero(base)
                                ? "-"
                                : String.format(Locale.ROOT, "%.2f", other / base));
            }
            rows.add(cells);
        }
        return rows;
    }

    /**
     * One sentence per figure the reader decides on ({@link #HEADLINE}), each client after the first against the
     * first: who did better, by what factor, each median with its runs' range, and, with at least two runs of each
     * client, whether the ranges overlap (then the runs do not separate the clients). Throughput is named only for
     * unpaced runs: at a fixed rate both clients send the same (and receive it); runs without producers have
     * nothing to pace, so their received rate is named. Empty with fewer than two clients.
     */
    static List<String> headline(List<Map<String, Object>> runs, List<String> clients) {
        List<String> lines = new ArrayList<>();
        if (clients.size() < 2) {
            return lines;
        }
        boolean paced = runs.stream().allMatch(Summary::pacesPublishing);
        String first = clients.get(0);
        for (String key : HEADLINE) {
            if (paced && key.endsWith("_rate")) {
                continue;
            }
            Row row = COMPARED.stream()
                    .filter(r -> r.key().equals(key))
                    .findFirst()
                    .orElseThrow();
            List<Double> a = values(runs, first, key);
            for (String other : clients.subList(1, clients.size())) {
                List<Double> b = values(runs, other, key);
                if (a.isEmpty() || b.isEmpty()) {
                    continue;
                }
                double ma = median(a);
                double mb = median(b);
                if (row.isZero(ma) && row.isZero(mb)) {
                    continue;
                }
                String figure = row.label();
                StringBuilder line = new StringBuilder(figure)
                        .append(": ")
                        .append(other)
                        .append(' ')
                        .append(row.formatSpread(b))
                        .append(" vs ")
                        .append(first)
                        .append(' ')
                        .append(row.formatSpread(a))
                        .append(": ");
                boolean overlap = Collections.min(a) <= Collections.max(b) && Collections.min(b) <= Collections.max(a);
                // one run has no range: with it, overlapping or not says nothing about the spread of runs
                boolean ranges = a.size() >= 2 && b.size() >= 2;
                if (row.isZero(ma) || row.isZero(mb) || ma == mb) {
                    line.append(ma == mb ? "the same" : "no ratio (one is 0)");
                } else {
                    boolean otherBetter = row.better() > 0 ? mb > ma : mb < ma;
                    String winner = otherBetter ? other : first;
                    double factor = Math.max(ma, mb) / Math.min(ma, mb);
                    line.append(winner)
                            .append(' ')
                            .append(row.better() > 0 ? "higher" : "lower")
                            .append(String.format(Locale.ROOT, " by %.2fx", factor));
                }
                if (ranges) {
                    line.append(
                            overlap
                                    ? " (the runs' ranges overlap: not a clear difference)"
                                    : " (the runs' ranges do not overlap)");
                } else {
                    line.append(" (one run of a client: no ranges to compare)");
                }
                lines.add(line.toString());
            }
        }
        return lines;
    }

    /**
     * Whether {@code run} (its JSON) had a fixed rate that paced publishes: a rate, and producers (a run that does
     * not say how many is taken to have some).
     */
    private static boolean pacesPublishing(Map<String, Object> run) {
        return run.get("rate") instanceof Number && !(run.get("producers") instanceof Number p && p.intValue() == 0);
    }

    /** Every value of {@code key} in {@code client}'s runs. */
    static List<Double> values(List<Map<String, Object>> runs, String client, String key) {
        List<Double> values = new ArrayList<>();
        for (Map<String, Object> run : runs) {
            if (client.equals(run.get("client")) && counted(run) && run.get(key) instanceof Number n) {
                values.add(n.doubleValue());
            }
        }
        return values;
    }

    /**
     * Whether a run's figures count in medians, ranges and ratios: not one that failed or was interrupted (a
     * measurement cut short, of a different length than the others; its own summary still shows it).
     */
    static boolean counted(Map<String, Object> run) {
        return run.get("failure") == null && !"interrupted".equals(run.get("stopped_by"));
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /** The median of {@code key} over {@code client}'s runs, null when none has it. */
    static Double median(List<Map<String, Object>> runs, String client, String key) {
        List<Double> values = values(runs, client, key);
        return values.isEmpty() ? null : median(values);
    }

    /**
     * One compared figure.
     *
     * @param key its JSON field
     * @param label what the table calls it
     * @param decimals decimals to show; -1 = bytes shown in MiB with one decimal
     * @param better 1 when higher is better, -1 when lower is, 0 for a figure of the run's conditions, not of
     *     the client (no ratio)
     */
    record Row(String key, String label, int decimals, int better) {
        /** Whether {@code value} shows as zero (then a ratio over it means nothing). */
        boolean isZero(double value) {
            double unit = decimals < 0 ? 1024 * 1024 / 10.0 : Math.pow(10, -decimals);
            return Math.abs(value) < unit / 2;
        }

        /** The median of {@code values}, and with more than one their range: {@code 312 (290-340)}; "-" for none. */
        String formatSpread(List<Double> values) {
            if (values.isEmpty()) {
                return "-";
            }
            String median = format(median(values));
            if (values.size() == 1) {
                return median;
            }
            return median + " (" + format(Collections.min(values)) + "-" + format(Collections.max(values)) + ")";
        }

        String format(Double value) {
            if (value == null) {
                return "-";
            }
            if (decimals < 0) {
                return String.format(Locale.ROOT, "%,.1f", value / (1024 * 1024));
            }
            return Format.number(value, decimals);
        }
    }
}
