package io.warren.perf;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * warren-perf: a PerfTest-compatible load tool that runs Warren and the official Java client side by
 * side. Option names and meanings follow RabbitMQ PerfTest where PerfTest has them (note that
 * {@code -h} is {@code --uri}, as in PerfTest; help is {@code --help}).
 *
 * <p>Exit codes: 0 done, 1 the run failed (no broker, a channel error, ...), 2 bad options.
 */
@Command(
        name = "warren-perf",
        sortOptions = false,
        usageHelpAutoWidth = true,
        description = {
            "Measures an AMQP 0-9-1 client (Warren or amqp-client) against RabbitMQ or the built-in loopback peer.",
            "Prints one progress line per second and a summary at the end (Ctrl-C prints the summary so far)."
        },
        footer = {
            "",
            "Examples:",
            "  java -jar warren-perf.jar                              1 producer, 1 consumer, 10 s, against localhost",
            "  java -jar warren-perf.jar -x 2 -y 2 -s 1024 -c 100 -z 30",
            "  java -jar warren-perf.jar --compare --json out.json --report out.html",
            "                                                         3 runs per client, alternating, at 10,000 msg/s",
            "  java -jar warren-perf.jar --compare -r -1 --runs 5    the same unthrottled, 5 runs per client",
            "  java -jar warren-perf.jar --peer sink -c 1000          the client's publishing alone, no broker",
            "  java -jar warren-perf.jar --peer source -a             the client's consuming alone, no broker"
        })
public final class WarrenPerf implements Callable<Integer> {

    static final String DEFAULT_URI = "amqp://guest:guest@localhost:5672";
    static final int DEFAULT_TIME_SECONDS = 10;
    /**
     * --compare's publishing rate per producer unless -r says otherwise: a single local RabbitMQ node drains
     * 10,000 msg/s from 1 producer to 1 consumer with no standing queue, so consumer latency is the clients'
     * and the broker's handling, not a backlog growing for as long as the run lasts.
     */
    static final int COMPARE_RATE = 10_000;
    /** --compare's runs per client unless --runs says otherwise: a median and a spread need three. */
    static final int COMPARE_RUNS = 3;
    /**
     * --compare's warm-up unless --warmup says otherwise or the run goes to a count, in seconds: without one the first
     * run of each client in the JVM measures its JIT compiling the paths (p50 1.3 ms against 169 us for a later run of
     * the same command).
     */
    static final long COMPARE_WARMUP_SECONDS = 5;

    @Spec
    private CommandSpec spec;

    @Option(
            names = {"-h", "--uri"},
            paramLabel = "URI",
            description = "Broker URI (default: " + DEFAULT_URI + ").")
    private String uri;

    @Option(
            names = {"-H", "--uris"},
            paramLabel = "URI[,URI...]",
            split = ",",
            description =
                    "Several brokers (a cluster's nodes), as in PerfTest: connections spread over them round-robin, "
                            + "each with the others as its failover addresses. Instead of --uri.")
    private List<String> uris;

    @Option(
            names = {"-x", "--producers"},
            paramLabel = "N",
            defaultValue = "1",
            description = "Producers, each with its own connection (default: ${DEFAULT-VALUE}; 0 with --peer source).")
    private int producers;

    @Option(
            names = {"-y", "--consumers"},
            paramLabel = "N",
            defaultValue = "1",
            description = "Consumers, each with its own connection (default: ${DEFAULT-VALUE}; 0 with --peer sink).")
    private int consumers;

    @Option(
            names = {"-s", "--size"},
            paramLabel = "BYTES",
            defaultValue = "12",
            description = "Message body size in bytes, at least 12 (default: ${DEFAULT-VALUE}).")
    private int size;

    @Option(
            names = {"-z", "--time"},
            paramLabel = "SECONDS",
            description = "Run duration in seconds; 0 = until the counts are reached or Ctrl-C " + "(default: "
                    + DEFAULT_TIME_SECONDS + " when neither -C nor -D is given, else 0).")
    private Long time;

    @Option(
            names = {"-C", "--pmessages"},
            paramLabel = "N",
            defaultValue = "0",
            description = "Messages each producer publishes; 0 = no limit (default: ${DEFAULT-VALUE}).")
    private long producerMessages;

    @Option(
            names = {"-D", "--cmessages"},
            paramLabel = "N",
            defaultValue = "0",
            description = "Messages each consumer takes; 0 = no limit (default: ${DEFAULT-VALUE}).")
    private long consumerMessages;

    @Option(
            names = {"-r", "--rate"},
            paramLabel = "MSG/S",
            description = "Publishing rate limit per producer, msg/s; -1 (or 0) = none, as fast as the client goes "
                    + "(default: none; with --compare " + COMPARE_RATE
                    + ", a rate a broker drains without a queue building up).")
    private Double rate;

    @Option(
            names = {"-c", "--confirm"},
            paramLabel = "N",
            defaultValue = "-1",
            description = "Publisher confirms with at most this many outstanding per producer; -1 = no confirms "
                    + "(default: ${DEFAULT-VALUE}).")
    private int confirm;

    @Option(
            names = {"-q", "--qos"},
            paramLabel = "N",
            defaultValue = "0",
            description = "Consumer prefetch count; 0 = unlimited (default: ${DEFAULT-VALUE}).")
    private int qos;

    @Option(
            names = {"-A", "--multi-ack-every"},
            paramLabel = "N",
            defaultValue = "0",
            description =
                    "Acknowledge with multiple=true every this many messages; 0 = each one (default: ${DEFAULT-VALUE}).")
    private int multiAckEvery;

    @Option(
            names = {"-a", "--autoack"},
            description = "Consume with automatic acknowledgement (no-ack).")
    private boolean autoAck;

    @Option(
            names = {"-u", "--queue"},
            paramLabel = "NAME",
            defaultValue = "",
            description = "Queue name, shared by every consumer; default: one server-named queue per consumer.")
    private String queue;

    @Option(
            names = {"-f", "--flag"},
            paramLabel = "FLAG",
            description = "Message flag, repeatable: persistent, mandatory.")
    private List<String> flags = new ArrayList<>();

    @Option(
            names = {"-k", "--routing-key"},
            paramLabel = "KEY",
            description = "Routing key (default: a random UUID).")
    private String routingKey;

    @Option(
            names = {"-e", "--exchange"},
            paramLabel = "NAME",
            defaultValue = "direct",
            description = "Exchange name; \"\" is the default exchange (default: ${DEFAULT-VALUE}).")
    private String exchange;

    @Option(
            names = {"-t", "--type"},
            paramLabel = "TYPE",
            defaultValue = "direct",
            description = "Exchange type (default: ${DEFAULT-VALUE}).")
    private String exchangeType;

    @Option(
            names = {"-qa", "--queue-args"},
            paramLabel = "K=V[,K=V...]",
            description = "Arguments of a named queue, e.g. x-queue-type=quorum,x-max-length=1000 "
                    + "(integers and true/false are typed, the rest are strings).")
    private String queueArgs;

    @Option(
            names = {"-ad", "--auto-delete"},
            paramLabel = "true|false",
            defaultValue = "true",
            arity = "1",
            description = "Declare a named queue auto-delete (default: ${DEFAULT-VALUE}).")
    private boolean autoDelete;

    @Option(
            names = "--client",
            paramLabel = "warren|amqp-client|raw",
            description = "The client to run (default: warren when its driver is in this build, else amqp-client). "
                    + "raw is no client but the reference point: pre-encoded frames written straight to the socket, "
                    + "to show what the peer or broker takes when the client costs nothing.")
    private String client;

    @Option(
            names = "--compare",
            arity = "0..1",
            paramLabel = "CLIENT,CLIENT",
            fallbackValue = Clients.AMQP_CLIENT + "," + Clients.WARREN,
            description = "Run both clients, alternating, and print a side-by-side table with ratios to the first "
                    + "(default pair: amqp-client,warren).")
    private String compare;

    @Option(
            names = "--warmup",
            paramLabel = "SECONDS",
            description = "Let traffic flow this long before each run's measuring (not in PerfTest; default: 0; with "
                    + "--compare " + COMPARE_WARMUP_SECONDS + " unless -C or -D sets a count).")
    private Long warmup;

    @Option(
            names = "--runs",
            paramLabel = "N",
            description =
                    "Runs per client; with --compare their order alternates A B B A ... (default: 1; with --compare "
                            + COMPARE_RUNS + ", so each figure has a median and a spread).")
    private Integer runs;

    @Option(
            names = "--rerun-stolen",
            paramLabel = "N",
            defaultValue = "0",
            description = "A run during which the hypervisor took " + RunResult.STEAL_WARNING_PERCENT
                    + " %% or more of the machine's CPU time (steal) is set aside and"
                    + " run again, at most N times per run; the set-aside runs are printed, not counted"
                    + " (default: ${DEFAULT-VALUE}).")
    private int rerunStolen;

    @Option(
            names = "--peer",
            paramLabel = "sink|source",
            description = "Run against the built-in loopback AMQP peer instead of a broker: sink discards publishes "
                    + "(confirming them), source streams deliveries to every consumer. Measures the client alone.")
    private String peer;

    @Option(
            names = "--transport",
            paramLabel = "nio|native",
            description = "Warren's socket transport: nio (default), or native for io_uring or epoll when its library "
                    + "loads (this jar carries epoll for Linux x86-64), else NIO. An idle connection's publish is "
                    + "written by the publishing thread on NIO only; on a native transport every publish goes "
                    + "through the event loop.")
    private String transport = "nio";

    @Option(
            names = "--json",
            paramLabel = "FILE",
            description = "Write the results as JSON: one object per run, an array when there are several.")
    private Path json;

    @Option(
            names = "--report",
            paramLabel = "FILE.html",
            description = "Write a self-contained HTML report with charts.")
    private Path report;

    @Option(
            names = "--id",
            paramLabel = "NAME",
            description = "The test's name: it prefixes the progress lines and goes into the JSON (as in PerfTest).")
    private String id;

    @Option(names = "--help", usageHelp = true, description = "Show this help and exit.")
    private boolean help;

    private final PrintStream out;
    private final PrintStream err;
    /** The runs set aside for stolen time, by the run that replaced them (the thread running the legs). */
    private final Map<RunResult, List<RunResult>> setAsideFor = new IdentityHashMap<>();

    private WarrenPerf(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the tool with {@code args}; returns the exit code (0, 1 on failure, 2 for bad options). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        CommandLine commandLine = new CommandLine(new WarrenPerf(out, err));
        commandLine.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
        commandLine.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
        CommandLine.IParameterExceptionHandler usual = commandLine.getParameterExceptionHandler();
        commandLine.setParameterExceptionHandler((e, given) -> {
            // -h is PerfTest's URI option: a bare -h is most likely someone asking for help
            if (e instanceof CommandLine.MissingParameterException missing
                    && missing.getMissing().stream()
                            .anyMatch(arg -> arg instanceof CommandLine.Model.OptionSpec o
                                    && o.longestName().equals("--uri"))) {
                err.println("warren-perf: -h is the broker URI, as in PerfTest (-h amqp://guest:guest@localhost:5672); "
                        + "for help, use --help");
                return commandLine.getCommandSpec().exitCodeOnInvalidInput();
            }
            return usual.handleParseException(e, given);
        });
        return commandLine.execute(args);
    }

    /**
     * What the command line asks for, checked: the clients in run order, the run's options, the time
     * limit, the peer, the number of runs per client and the output files.
     */
    record Plan(
            String id,
            List<String> clients,
            RunOptions options,
            long timeSeconds,
            long warmupSeconds,
            LoopbackPeer.Mode peer,
            int runs,
            int rerunStolen,
            Path json,
            Path report) {}

    /** Parses and checks {@code args} without running anything; bad options throw {@link ParameterException}. */
    static Plan plan(String... args) {
        CommandLine commandLine = new CommandLine(new WarrenPerf(System.out, System.err));
        commandLine.parseArgs(args);
        return ((WarrenPerf) commandLine.getCommand()).plan();
    }

    private Plan plan() {
        List<String> clients = clients();
        LoopbackPeer.Mode peerMode = peerMode();
        RunOptions options = options(peerMode);
        boolean counted = options.producerMessages() > 0 || options.consumerMessages() > 0;
        long timeLimit = time != null ? time : counted ? 0 : DEFAULT_TIME_SECONDS;
        // a run to a count (-C, -D) is not warmed up unless asked: the warm-up would take the messages it counts
        long warmupSeconds = warmup != null ? warmup : compare != null && !counted ? COMPARE_WARMUP_SECONDS : 0;
        if (warmupSeconds < 0) {
            throw usage("--warmup must be 0 or more");
        }
        // said now, not when the raw client's run starts (after the other clients' runs)
        if (clients.contains(Clients.RAW) && (options.rate() > 0 || options.mandatory())) {
            List<String> fixes = new ArrayList<>();
            if (options.rate() > 0) {
                fixes.add("give -r -1"
                        + (rate == null ? " (--compare paces at " + COMPARE_RATE + " msg/s by default)" : ""));
            }
            if (options.mandatory()) {
                fixes.add("leave out --flag mandatory");
            }
            throw usage("the raw client does not pace or take returns: " + String.join(" and ", fixes));
        }
        return new Plan(
                id, clients, options, timeLimit, warmupSeconds, peerMode, runsPerClient(), rerunStolen, json, report);
    }

    @Override
    public Integer call() throws Exception {
        Plan plan = plan();
        List<String> clients = plan.clients();
        LoopbackPeer.Mode peerMode = plan.peer();
        RunOptions options = plan.options();
        long timeLimit = plan.timeSeconds();
        for (String c : clients) {
            if (!Clients.available(c)) {
                err.println("warren-perf: the Warren driver (" + Clients.WARREN_DRIVER + ") is not in this build yet: "
                        + "it needs Warren's publish and consume API. Use --client amqp-client.");
                return 1;
            }
        }

        if (clients.size() > 1) {
            out.println(comparisonSettings(plan));
        }

        PerfRun.StopSignal stop = new PerfRun.StopSignal();
        CountDownLatch finished = new CountDownLatch(1);
        Thread hook = new Thread(
                () -> {
                    stop.request();
                    try {
                        finished.await(15, TimeUnit.SECONDS); // let the run print its summary before the JVM goes
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "warren-perf-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        List<RunResult> results = new ArrayList<>();
        int exit = 0;
        try {
            List<Leg> legs = legs(peerMode, options, timeLimit);
            for (Leg leg : legs) {
                int before = results.size();
                exit = runLeg(leg, plan, results, stop);
                // one table per leg: the sink's and the source's figures are not runs of the same thing
                List<RunResult> legResults = results.subList(before, results.size());
                if (clients.size() > 1 && !legResults.isEmpty()) {
                    out.println(
                            legs.size() == 1
                                    ? "== comparison =="
                                    : "== comparison, peer:" + leg.peer().name().toLowerCase() + " ==");
                    List<Map<String, Object>> legJson = jsonOf(legResults);
                    Summary.comparisonTable(legJson, clients).forEach(out::println);
                    out.println();
                    Summary.headline(legJson, clients).forEach(line -> out.println("  " + line));
                    long uncounted =
                            legJson.stream().filter(r -> !Summary.counted(r)).count();
                    if (uncounted > 0) {
                        out.println("  " + uncounted + " of " + legJson.size() + " runs failed or were interrupted:"
                                + " left out of the medians, ranges and ratios above");
                    }
                    belowPace(leg.options(), legJson, clients).forEach(line -> out.println("  WARNING: " + line));
                    long backlogged = legResults.stream()
                            .filter(r -> r.backlogWarning() != null)
                            .count();
                    if (backlogged > 0) {
                        out.println(
                                "  WARNING: " + backlogged + " of " + legResults.size() + " runs ended with a backlog "
                                        + "(see their summaries): their consumer latency is mostly time in a queue, not the clients' work");
                    }
                    int setAsideInLeg = legResults.stream()
                            .mapToInt(
                                    r -> setAsideFor.getOrDefault(r, List.of()).size())
                            .sum();
                    if (setAsideInLeg > 0) {
                        out.println("  " + setAsideInLeg
                                + " run(s) set aside for stolen time and run again (--rerun-stolen "
                                + plan.rerunStolen() + "): the table holds the runs that replaced them");
                    }
                    long robbed = legResults.stream()
                            .filter(r -> r.stealWarning() != null)
                            .count();
                    if (robbed > 0) {
                        out.println("  WARNING: the hypervisor took "
                                + RunResult.STEAL_WARNING_PERCENT
                                + " % or more of the machine's CPU time in " + robbed + " of " + legResults.size()
                                + " runs (see their summaries): the medians' tails may be the host's; run again on a"
                                + " quiet machine");
                    }
                    out.println();
                }
                if (exit != 0 || stop.requested()) {
                    break;
                }
            }
        } catch (Exception e) {
            err.println("warren-perf: " + explain(e, options.uri()));
            exit = 1;
        } finally {
            try {
                writeFiles(results);
            } catch (IOException e) {
                err.println("warren-perf: cannot write results: " + e);
                exit = 1;
            }
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // Ctrl-C: the hook is running and waited for the summary above
            }
        }
        return exit;
    }

    /** One stretch of the run: against the broker ({@code peer} null) or one loopback peer. */
    private record Leg(LoopbackPeer.Mode peer, RunOptions options, long timeSeconds) {}

    /**
     * One line per client whose producers fell short of the pace (median sent rate under 95 % of it): the headline
     * leaves throughput out of paced runs, so it must say when the clients did not carry the same load.
     */
    static List<String> belowPace(RunOptions options, List<Map<String, Object>> runs, List<String> clients) {
        List<String> lines = new ArrayList<>();
        if (options.rate() <= 0 || options.producers() == 0) {
            return lines;
        }
        double pace = options.rate() * options.producers();
        for (String c : clients) {
            Double sent = Summary.median(runs, c, "sent_rate");
            if (sent != null && sent < 0.95 * pace) {
                lines.add(String.format(
                        Locale.ROOT,
                        "%s sent %,.0f msg/s, below the pace of %,.0f: its latency and CPU figures are at a lower load"
                                + " than the pace's",
                        c,
                        sent,
                        pace));
            }
        }
        return lines;
    }

    /**
     * What to run against: the peer asked for, the broker when one answers, and else the built-in loopback peer
     * (the producers against the sink, then the consumers against the source), said plainly, so a machine
     * without RabbitMQ still measures both clients.
     */
    private List<Leg> legs(LoopbackPeer.Mode peerMode, RunOptions options, long timeLimit) {
        if (peerMode != null) {
            return List.of(new Leg(peerMode, options, timeLimit));
        }
        String refused = BrokerProbe.refusal(options.uri());
        if (refused == null) {
            return List.of(new Leg(null, options, timeLimit));
        }
        out.println("warren-perf: no AMQP broker answers at " + RunResult.redact(options.uri()) + " (" + refused
                + "), so this run measures the client alone against the built-in loopback peer instead: "
                + (options.producers() > 0 ? "publishing against --peer sink" : "")
                + (options.producers() > 0 && options.consumers() > 0 ? ", then " : "")
                + (options.consumers() > 0 ? "consuming from --peer source" : "")
                + ". These figures leave the broker out; start RabbitMQ or point --uri/-h at one to include it.");
        List<Leg> legs = new ArrayList<>();
        if (options.producers() > 0) {
            RunOptions publishing = options.withProducersAndConsumers(options.producers(), 0);
            legs.add(new Leg(LoopbackPeer.Mode.SINK, publishing, legTime(timeLimit, publishing.producerMessages())));
        }
        if (options.consumers() > 0) {
            RunOptions consuming = options.withProducersAndConsumers(0, options.consumers());
            legs.add(new Leg(LoopbackPeer.Mode.SOURCE, consuming, legTime(timeLimit, consuming.consumerMessages())));
        }
        return legs;
    }

    /** A leg whose own side has no message count would otherwise run until Ctrl-C: give it the default time. */
    private static long legTime(long timeLimit, long messages) {
        return timeLimit == 0 && messages == 0 ? DEFAULT_TIME_SECONDS : timeLimit;
    }

    /** Runs every client on one leg, {@code runs} times each, alternating; returns the exit code so far. */
    private int runLeg(Leg leg, Plan plan, List<RunResult> results, PerfRun.StopSignal stop) throws Exception {
        RunOptions options = leg.options();
        String target = RunResult.redact(options.uri());
        LoopbackPeer loopback = null;
        try {
            if (leg.peer() != null) {
                loopback = LoopbackPeer.start(leg.peer(), options.size(), 0);
                options = options.withUri(loopback.uri());
                target = "peer:" + leg.peer().name().toLowerCase();
                // its URI as every other one printed: without the password, even the peer's own
                out.println("loopback peer (" + target + ") listening on " + RunResult.redact(loopback.uri()));
            }
            PerfRun perfRun = new PerfRun(
                    options, leg.timeSeconds(), plan.warmupSeconds(), target, plan.id(), out, stop, loopback);
            Map<String, Integer> runNumbers = new LinkedHashMap<>();
            for (int round = 0; round < plan.runs(); round++) {
                // A B, then B A, ...: neither client always runs first on a warmer JVM
                List<String> order = round % 2 == 0 ? plan.clients() : reversed(plan.clients());
                for (String c : order) {
                    if (stop.requested()) {
                        return 0;
                    }
                    int number = runNumbers.merge(c, 1, Integer::sum);
                    StolenReruns.Series series = StolenReruns.run(
                            () -> perfRun.run(Clients.create(c), number),
                            plan.rerunStolen(),
                            stop::requested,
                            new StolenReruns.Listener() {
                                @Override
                                public void ran(RunResult run) {
                                    Summary.print(run, out);
                                }

                                @Override
                                public void settingAside(RunResult run, int again, int reruns) {
                                    out.printf(
                                            Locale.ROOT,
                                            "%s run %d set aside (%.1f %% of the machine's CPU time stolen): run again,"
                                                    + " %d of %d%n",
                                            c,
                                            number,
                                            run.stolenPercent(),
                                            again,
                                            reruns);
                                }
                            });
                    results.add(series.kept());
                    if (!series.setAside().isEmpty()) {
                        setAsideFor.put(series.kept(), series.setAside());
                    }
                    if (series.thrown() != null) {
                        throw series.thrown(); // the run it would have replaced is in the results
                    }
                    if (series.failedRerun() != null) {
                        // in the results too, so the saved runs say what ended the leg
                        results.add(series.failedRerun());
                        err.println("warren-perf: " + c + " run " + number + " failed when run again: "
                                + series.failedRerun().failure());
                        return 1;
                    }
                    if (series.kept().failure() != null) {
                        err.println("warren-perf: " + c + " run " + number + " failed: "
                                + series.kept().failure());
                        return 1;
                    }
                }
            }
            return 0;
        } finally {
            if (loopback != null) {
                loopback.close();
            }
        }
    }

    private void writeFiles(List<RunResult> results) throws IOException {
        if (results.isEmpty()) {
            return;
        }
        List<Map<String, Object>> runsJson = jsonOf(results);
        if (json != null) {
            Object value = runsJson.size() == 1 ? runsJson.get(0) : runsJson;
            Files.writeString(json, Json.pretty(value), StandardCharsets.UTF_8);
            out.println("results written to " + json);
        }
        if (report != null) {
            Files.writeString(report, HtmlReport.render(runsJson), StandardCharsets.UTF_8);
            out.println("report written to " + report);
        }
    }

    /** The runs' JSON; a run that replaced runs set aside for stolen time lists their stolen percentages. */
    private List<Map<String, Object>> jsonOf(List<RunResult> results) {
        List<Map<String, Object>> list = new ArrayList<>();
        for (RunResult r : results) {
            Map<String, Object> json = r.toJson();
            json.put(
                    "set_aside_steal_percent",
                    setAsideFor.getOrDefault(r, List.of()).stream()
                            .map(RunResult::stolenPercent)
                            .toList());
            list.add(json);
        }
        return list;
    }

    private List<String> clients() {
        if (compare != null && client != null) {
            throw usage("--client and --compare exclude each other: --compare runs the clients it names");
        }
        List<String> names = compare != null
                ? List.of(compare.split(","))
                : List.of(client != null ? client : Clients.defaultClient());
        for (String name : names) {
            if (!Clients.NAMES.contains(name)) {
                throw usage("unknown client '" + name + "': expected one of " + String.join(", ", Clients.NAMES));
            }
        }
        if (compare != null && (names.size() < 2 || names.stream().distinct().count() != names.size())) {
            throw usage("--compare needs two or more different clients, e.g. --compare amqp-client,warren");
        }
        return names;
    }

    private LoopbackPeer.Mode peerMode() {
        if (peer == null) {
            return null;
        }
        if (uri != null || uris != null) {
            throw usage("--peer runs against the built-in loopback peer: leave out --uri/-h and --uris/-H");
        }
        return switch (peer) {
            case "sink" -> LoopbackPeer.Mode.SINK;
            case "source" -> LoopbackPeer.Mode.SOURCE;
            default -> throw usage("--peer must be sink or source, not '" + peer + "'");
        };
    }

    private RunOptions options(LoopbackPeer.Mode peerMode) {
        CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
        int p = producers;
        int c = consumers;
        // against the peer the other side has nothing to do unless asked for explicitly
        if (peerMode == LoopbackPeer.Mode.SOURCE && !parsed.hasMatchedOption("--producers")) {
            p = 0;
        }
        if (peerMode == LoopbackPeer.Mode.SINK && !parsed.hasMatchedOption("--consumers")) {
            c = 0;
        }
        if (p < 0 || c < 0) {
            throw usage("--producers and --consumers must be 0 or more");
        }
        if (p == 0 && c == 0) {
            throw usage("nothing to run: no producer and no consumer");
        }
        if (size < 0) {
            throw usage("--size must be 0 or more");
        }
        int bodySize = size;
        if (size < MessageBody.MIN_SIZE) {
            err.println("warren-perf: --size " + size + " raised to " + MessageBody.MIN_SIZE
                    + ": every body carries its publish time (PerfTest's minimum too)");
            bodySize = MessageBody.MIN_SIZE;
        }
        if (time != null && time < 0) {
            throw usage("--time must be 0 or more");
        }
        if (producerMessages < 0 || consumerMessages < 0) {
            throw usage("--pmessages and --cmessages must be 0 or more");
        }
        if (qos < 0 || qos > 65535) {
            throw usage("--qos must be within 0..65535");
        }
        if (multiAckEvery < 0) {
            throw usage("--multi-ack-every must be 0 or more");
        }
        if (runs != null && runs < 1) {
            throw usage("--runs must be 1 or more");
        }
        if (rerunStolen < 0) {
            throw usage("--rerun-stolen must be 0 or more");
        }
        boolean persistent = false;
        boolean mandatory = false;
        for (String flag : flags) {
            switch (flag) {
                case "persistent" -> persistent = true;
                case "mandatory" -> mandatory = true;
                default -> throw usage("unknown --flag '" + flag + "': expected persistent or mandatory");
            }
        }
        String key = routingKey != null ? routingKey : UUID.randomUUID().toString();
        if (uri != null && uris != null) {
            throw usage("give --uri/-h or --uris/-H, not both");
        }
        List<String> brokers = uris != null ? uris : List.of(uri != null ? uri : DEFAULT_URI);
        return new RunOptions(
                brokers,
                p,
                c,
                bodySize,
                producerMessages,
                consumerMessages,
                publishRate(),
                confirm,
                qos,
                multiAckEvery,
                autoAck,
                queue,
                persistent,
                mandatory,
                key,
                exchange,
                exchangeType,
                parseQueueArgs(queueArgs),
                autoDelete,
                nativeTransport());
    }

    /** --transport: nio (the default) or native. */
    private boolean nativeTransport() {
        return switch (transport) {
            case "nio" -> false;
            case "native" -> true;
            default -> throw usage("unknown --transport '" + transport + "': expected nio or native");
        };
    }

    /** What a comparison runs, said before it starts: the pace, the runs, what latency includes. */
    static String comparisonSettings(Plan plan) {
        RunOptions o = plan.options();
        String pace = o.rate() > 0
                ? String.format(Locale.ROOT, "each producer paced at %,.0f msg/s", o.rate())
                : "unthrottled producers (the queue may grow: consumer latency then measures the backlog)";
        String warmup =
                plan.warmupSeconds() > 0 ? ", each run measured after " + plan.warmupSeconds() + " s of warm-up" : "";
        return "warren-perf: comparing " + String.join(", ", plan.clients()) + ": " + plan.runs()
                + " run(s) per client, alternating, " + pace + warmup
                + ". Consumer latency is from the publish call (once the producer has its slot in the pace and room"
                + " in the confirm window, the same for every client) to the consumer's handler, the client's"
                + " back-pressure (amqp-client blocked in its socket write, Warren waiting to be writable) and"
                + " queueing in the client and the broker included.";
    }

    /** Messages per second per producer: -r when given (0 or less = unpaced), else --compare's pace, else unpaced. */
    private double publishRate() {
        if (rate != null) {
            return rate > 0 ? rate : -1;
        }
        return compare != null ? COMPARE_RATE : -1;
    }

    /** --runs when given, else {@value #COMPARE_RUNS} with --compare, else 1. */
    private int runsPerClient() {
        return runs != null ? runs : compare != null ? COMPARE_RUNS : 1;
    }

    /** {@code k=v,k2=v2}: integers become Long, true/false Boolean, the rest String. */
    private Map<String, Object> parseQueueArgs(String text) {
        Map<String, Object> args = new LinkedHashMap<>();
        if (text == null || text.isBlank()) {
            return args;
        }
        for (String pair : text.split(",")) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw usage("--queue-args expects key=value pairs separated by commas, not '" + pair + "'");
            }
            String key = pair.substring(0, eq).trim();
            String value = pair.substring(eq + 1).trim();
            Object typed;
            if (value.matches("-?\\d{1,18}")) {
                typed = Long.parseLong(value);
            } else if (value.equals("true") || value.equals("false")) {
                typed = Boolean.parseBoolean(value);
            } else {
                typed = value;
            }
            args.put(key, typed);
        }
        return args;
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    private static <T> List<T> reversed(List<T> list) {
        List<T> copy = new ArrayList<>(list);
        java.util.Collections.reverse(copy);
        return copy;
    }

    /** A message that says what failed and, when nothing answered, what to do about it. */
    static String explain(Exception e, String uri) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ConnectException
                    || t instanceof NoRouteToHostException
                    || t instanceof UnknownHostException
                    || t instanceof SocketTimeoutException) {
                return "no AMQP broker answers at " + RunResult.redact(uri) + " (" + t + "). Start RabbitMQ there, "
                        + "point --uri/-h at one, or measure the client alone against the built-in loopback peer: "
                        + "--peer sink (publishing) or --peer source (consuming).";
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return PerfRun.describe(e);
    }
}
