package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** The command line: PerfTest's option names and meanings, the tool's own options, and exit code 2 for bad ones. */
class OptionsTest {

    @Test
    void defaultsRunOneProducerAndOneConsumerForTenSecondsAgainstLocalhost() {
        WarrenPerf.Plan plan = WarrenPerf.plan();
        RunOptions o = plan.options();
        assertEquals("amqp://guest:guest@localhost:5672", o.uri());
        assertEquals(1, o.producers());
        assertEquals(1, o.consumers());
        assertEquals(12, o.size());
        assertEquals(10, plan.timeSeconds());
        assertFalse(o.confirms());
        assertEquals("direct", o.exchange());
        assertEquals("direct", o.exchangeType());
        assertTrue(o.serverNamedQueues());
        assertEquals(36, o.routingKey().length(), "a random UUID by default: " + o.routingKey());
        assertEquals(List.of(Clients.defaultClient()), plan.clients());
        assertEquals(1, plan.runs());
        assertNull(plan.peer());
        assertFalse(o.nativeTransport(), "NIO: an idle connection's publish is written by its caller only there");
    }

    @Test
    void transportIsNioUnlessNativeIsAskedFor() {
        assertTrue(WarrenPerf.plan("--transport", "native").options().nativeTransport());
        assertFalse(WarrenPerf.plan("--transport", "nio").options().nativeTransport());
    }

    @Test
    void compareIsPacedAtARateTheBrokerDrainsAndRunsEachClientThreeTimes() {
        WarrenPerf.Plan plan = WarrenPerf.plan("--compare");
        assertEquals(WarrenPerf.COMPARE_RATE, plan.options().rate(), "paced, so latency is not a growing queue's");
        assertEquals(10_000, WarrenPerf.COMPARE_RATE);
        assertEquals(3, plan.runs(), "a median and a spread per figure");
        String said = WarrenPerf.comparisonSettings(plan);
        assertTrue(said.contains("3 run(s) per client, alternating, each producer paced at 10,000 msg/s"), said);
        assertEquals(5, plan.warmupSeconds(), "the first run of each client does not measure its JIT");
        assertTrue(said.contains("each run measured after 5 s of warm-up"), said);
        assertTrue(said.contains("queueing in the client and the broker included"), said);
    }

    @Test
    void compareKeepsAnExplicitRateRunsOrTheUnthrottledMode() {
        assertEquals(2000, WarrenPerf.plan("--compare", "-r", "2000").options().rate());
        assertEquals(5, WarrenPerf.plan("--compare", "--runs", "5").runs());
        assertEquals(0, WarrenPerf.plan("--compare", "--warmup", "0").warmupSeconds());
        assertEquals(0, WarrenPerf.plan("--compare", "-C", "3000").warmupSeconds(), "a count is not warmed up");
        WarrenPerf.Plan unthrottled = WarrenPerf.plan("--compare", "-r", "-1");
        assertTrue(unthrottled.options().rate() <= 0, "-r -1: as fast as the client goes");
        assertTrue(
                WarrenPerf.comparisonSettings(unthrottled).contains("unthrottled"),
                WarrenPerf.comparisonSettings(unthrottled));
        assertTrue(WarrenPerf.plan("--compare", "-r", "0").options().rate() <= 0);
        assertTrue(WarrenPerf.plan().options().rate() <= 0, "a single client's run stays unthrottled by default");
        assertEquals(1, WarrenPerf.plan("--client", "warren").runs());
    }

    @Test
    void perfTestShortNames() {
        WarrenPerf.Plan plan = WarrenPerf.plan(
                "-h",
                "amqp://u:p@broker:5673/vh",
                "-x",
                "3",
                "-y",
                "4",
                "-s",
                "1024",
                "-z",
                "7",
                "-C",
                "100",
                "-D",
                "200",
                "-r",
                "500.5",
                "-c",
                "50",
                "-q",
                "300",
                "-A",
                "10",
                "-a",
                "-u",
                "q1",
                "-f",
                "persistent",
                "-f",
                "mandatory",
                "-k",
                "rk",
                "-e",
                "ex",
                "-t",
                "topic",
                "-qa",
                "x-queue-type=quorum,x-max-length=1000,x-single-active-consumer=true",
                "-ad",
                "false");
        RunOptions o = plan.options();
        assertEquals("amqp://u:p@broker:5673/vh", o.uri());
        assertEquals(3, o.producers());
        assertEquals(4, o.consumers());
        assertEquals(1024, o.size());
        assertEquals(7, plan.timeSeconds());
        assertEquals(100, o.producerMessages());
        assertEquals(200, o.consumerMessages());
        assertEquals(500.5, o.rate());
        assertEquals(50, o.confirm());
        assertTrue(o.confirms());
        assertEquals(300, o.qos());
        assertEquals(10, o.multiAckEvery());
        assertTrue(o.autoAck());
        assertEquals("q1", o.queue());
        assertFalse(o.serverNamedQueues());
        assertTrue(o.persistent());
        assertTrue(o.mandatory());
        assertEquals("rk", o.routingKey());
        assertEquals("ex", o.exchange());
        assertEquals("topic", o.exchangeType());
        assertEquals(
                Map.of("x-queue-type", "quorum", "x-max-length", 1000L, "x-single-active-consumer", true),
                o.queueArgs());
        assertFalse(o.autoDelete());
    }

    @Test
    void urisSpreadConnectionsRoundRobinWithTheOthersAsFailover() {
        RunOptions o = WarrenPerf.plan("--uris", "amqp://n1:5673,amqp://n2:5674,amqp://n3:5675", "-x", "2", "-y", "2")
                .options();
        assertEquals(List.of("amqp://n1:5673", "amqp://n2:5674", "amqp://n3:5675"), o.uris());
        assertEquals("amqp://n1:5673", o.uri());
        assertEquals(List.of("amqp://n1:5673", "amqp://n2:5674", "amqp://n3:5675"), o.urisFor(0));
        assertEquals(List.of("amqp://n2:5674", "amqp://n3:5675", "amqp://n1:5673"), o.urisFor(1));
        assertEquals(List.of("amqp://n1:5673", "amqp://n2:5674", "amqp://n3:5675"), o.urisFor(3));
        assertEquals(
                List.of("amqp://n1:5673", "amqp://n2:5674"),
                WarrenPerf.plan("-H", "amqp://n1:5673,amqp://n2:5674").options().uris(),
                "PerfTest's short name");
    }

    @Test
    void uriAndUrisTogetherAreRefused() {
        assertThrows(ParameterException.class, () -> WarrenPerf.plan("-h", "amqp://a", "--uris", "amqp://b,amqp://c"));
    }

    @Test
    void perfTestLongNames() {
        WarrenPerf.Plan plan = WarrenPerf.plan(
                "--uri",
                "amqp://localhost",
                "--producers",
                "2",
                "--consumers",
                "0",
                "--size",
                "64",
                "--time",
                "3",
                "--pmessages",
                "5",
                "--cmessages",
                "6",
                "--rate",
                "10",
                "--confirm",
                "8",
                "--qos",
                "9",
                "--multi-ack-every",
                "4",
                "--autoack",
                "--queue",
                "q",
                "--flag",
                "persistent",
                "--routing-key",
                "k",
                "--exchange",
                "",
                "--type",
                "fanout",
                "--queue-args",
                "a=b",
                "--auto-delete",
                "true");
        RunOptions o = plan.options();
        assertEquals("amqp://localhost", o.uri());
        assertEquals(2, o.producers());
        assertEquals(0, o.consumers());
        assertEquals(64, o.size());
        assertEquals(3, plan.timeSeconds());
        assertEquals(5, o.producerMessages());
        assertEquals(6, o.consumerMessages());
        assertEquals(10, o.rate());
        assertEquals(8, o.confirm());
        assertEquals(9, o.qos());
        assertEquals(4, o.multiAckEvery());
        assertTrue(o.autoAck());
        assertEquals("q", o.queue());
        assertTrue(o.persistent());
        assertFalse(o.mandatory());
        assertEquals("", o.exchange());
        assertFalse(o.declaresExchange());
        assertEquals("q", o.routingKeyFor("q"), "through the default exchange the queue name routes");
        assertEquals(Map.of("a", "b"), o.queueArgs());
    }

    @Test
    void countsWithoutTimeRunUntilTheCountsAreReached() {
        assertEquals(0, WarrenPerf.plan("-C", "1000").timeSeconds());
        assertEquals(0, WarrenPerf.plan("-D", "1000").timeSeconds());
        assertEquals(5, WarrenPerf.plan("-C", "1000", "-z", "5").timeSeconds());
    }

    @Test
    void toolOptions() {
        WarrenPerf.Plan plan = WarrenPerf.plan(
                "--client",
                "amqp-client",
                "--runs",
                "3",
                "--json",
                "out.json",
                "--report",
                "out.html",
                "--warmup",
                "2");
        assertEquals(List.of("amqp-client"), plan.clients());
        assertEquals(3, plan.runs());
        assertEquals(2, plan.warmupSeconds());
        assertEquals(0, WarrenPerf.plan().warmupSeconds());
        assertEquals(List.of("raw"), WarrenPerf.plan("--client", "raw").clients());
        assertEquals("out.json", plan.json().toString());
        assertEquals("out.html", plan.report().toString());

        assertEquals(
                List.of("amqp-client", "warren"), WarrenPerf.plan("--compare").clients());
        assertEquals(
                List.of("warren", "amqp-client"),
                WarrenPerf.plan("--compare=warren,amqp-client").clients());
    }

    @Test
    void peerModesLeaveTheIdleSideOutUnlessAskedFor() {
        WarrenPerf.Plan sink = WarrenPerf.plan("--peer", "sink");
        assertEquals(LoopbackPeer.Mode.SINK, sink.peer());
        assertEquals(1, sink.options().producers());
        assertEquals(0, sink.options().consumers());

        WarrenPerf.Plan source = WarrenPerf.plan("--peer", "source");
        assertEquals(LoopbackPeer.Mode.SOURCE, source.peer());
        assertEquals(0, source.options().producers());
        assertEquals(1, source.options().consumers());

        WarrenPerf.Plan both = WarrenPerf.plan("--peer", "source", "-x", "2");
        assertEquals(2, both.options().producers());
    }

    @Test
    void sizeBelowTheTimestampIsRaisedToTwelveBytes() {
        assertEquals(12, WarrenPerf.plan("-s", "0").options().size());
    }

    @Test
    void badOptionsAreRefusedWithAMessage() {
        assertRefused("unknown --flag 'immediate'", "-f", "immediate");
        assertRefused("--peer must be sink or source", "--peer", "mirror");
        assertRefused("leave out --uri", "--peer", "sink", "-h", "amqp://localhost");
        assertRefused("exclude each other", "--client", "amqp-client", "--compare");
        assertRefused("unknown client 'rabbit'", "--client", "rabbit");
        assertRefused("two or more different clients", "--compare=amqp-client,amqp-client");
        assertRefused("nothing to run", "-x", "0", "-y", "0");
        assertRefused("--queue-args expects key=value", "-qa", "novalue");
        assertRefused("--qos must be within", "-q", "70000");
        assertRefused("--runs must be 1 or more", "--runs", "0");
        assertRefused("--warmup must be 0 or more", "--warmup", "-1");
        assertRefused("unknown --transport 'epoll': expected nio or native", "--transport", "epoll");
    }

    /** The raw client refused pacing only when its run started, after the other clients' runs: now at once. */
    @Test
    void theRawClientWithARateOrMandatoryIsAUsageError() {
        assertRefused(
                "the raw client does not pace or take returns: give -r -1 (--compare paces at "
                        + WarrenPerf.COMPARE_RATE + " msg/s by default)",
                "--compare",
                "warren,raw");
        assertRefused("give -r -1 and leave out --flag mandatory", "--client", "raw", "-r", "100", "-f", "mandatory");
        assertRefused("leave out --flag mandatory", "--client", "raw", "-f", "mandatory");
        assertEquals(
                List.of("warren", "raw"),
                WarrenPerf.plan("--compare", "warren,raw", "-r", "-1").clients(),
                "unpaced, raw compares");
    }

    @Test
    void runsThatMetStolenTimeAreRunAgainOnlyWhenAsked() {
        assertEquals(0, WarrenPerf.plan("--compare").rerunStolen(), "by default every run counts, with its warning");
        assertEquals(2, WarrenPerf.plan("--compare", "--rerun-stolen", "2").rerunStolen());
        assertRefused("--rerun-stolen must be 0 or more", "--rerun-stolen", "-1");
    }

    private static void assertRefused(String expected, String... args) {
        ParameterException e = assertThrows(ParameterException.class, () -> WarrenPerf.plan(args));
        assertTrue(e.getMessage().contains(expected), "'" + e.getMessage() + "' should say " + expected);
    }

    @Test
    void badOptionsExitWithTwoAndPrintTheUsage() {
        for (String[] args : List.of(
                new String[] {"--no-such-option"},
                new String[] {"-x", "many"},
                new String[] {"-f", "immediate"},
                new String[] {"--peer", "mirror"})) {
            Captured run = run(args);
            assertEquals(2, run.exit, String.join(" ", args) + "\n" + run.err);
            assertTrue(run.err.contains("Usage: warren-perf"), run.err);
        }
    }

    @Test
    void helpIsHelpBecauseMinusHIsTheUri() {
        Captured run = run("--help");
        assertEquals(0, run.exit, run.err);
        assertTrue(run.out.contains("Usage: warren-perf"), run.out);
        assertTrue(run.out.contains("-h, --uri=URI"), run.out);
        assertTrue(run.out.contains("--multi-ack-every"), run.out);
        assertTrue(run.out.contains("--peer=sink|source"), run.out);
    }

    @Test
    void everyDescriptionIsAFormatStringPicocliCanRender() {
        // picocli renders descriptions with String.format: a bare '%' makes it warn and print the raw text
        for (Field field : WarrenPerf.class.getDeclaredFields()) {
            Option option = field.getAnnotation(Option.class);
            if (option != null) {
                String description = String.join("", option.description());
                assertDoesNotThrow(() -> String.format(Locale.ROOT, description), field.getName());
            }
        }
        String help = run("--help").out.replaceAll("\\s+", " "); // wrapped to the terminal's width
        assertTrue(help.contains("took 2 % or more"), "the escaped percent sign renders as one");
    }

    @Test
    void aBareMinusHSaysItIsTheUriAndPointsAtHelp() {
        for (String[] args : List.of(new String[] {"-h"}, new String[] {"-x", "2", "-h"})) {
            Captured run = run(args);
            assertEquals(2, run.exit, String.join(" ", args) + "\n" + run.err);
            assertTrue(run.err.contains("-h is the broker URI, as in PerfTest"), run.err);
            assertTrue(run.err.contains("for help, use --help"), run.err);
            assertFalse(run.err.contains("Usage: warren-perf"), "the hint, not the whole usage: " + run.err);
        }
    }

    record Captured(int exit, String out, String err) {}

    static Captured run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            exit = WarrenPerf.run(args, o, e);
        }
        return new Captured(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
