package io.warren.it.provision;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code build/provision} (run by {@code ./mvnw}) decides on machines this one is not: a copy of the script
 * runs in a temporary tree with a PATH of stand-in commands (a fake {@code id}, {@code mvn}, {@code apt-get}, ...)
 * and in its dry-run mode, so nothing is installed. No broker needed: a closed or a throwaway listening port stands
 * for it through {@code AMQP_URI}.
 */
class ProvisionScriptTest {

    /** The real tools the script itself uses; everything else on the fake PATH is a stand-in. */
    private static final List<String> TOOLS = List.of("bash", "sed", "sort", "timeout", "cat", "dirname");

    @TempDir
    Path tree;

    private Path bin;

    @BeforeEach
    void copyTheScriptAndLinkTheTools() throws IOException {
        Path script = tree.resolve("build/provision");
        Files.createDirectories(script.getParent());
        Files.copy(Path.of("../build/provision"), script);
        script.toFile().setExecutable(true);
        bin = Files.createDirectories(tree.resolve("bin"));
        for (String tool : TOOLS) {
            stub(tool, "exec " + which(tool) + " \"$@\""); // a script, not a link: @TempDir warns on links out
        }
    }

    @Test
    void aBareMachineGetsOneMessageNamingEveryPieceAndItsCommand() throws Exception {
        stub("id", "echo 1000");
        Result r = provision(closedPortUri(), "-B", "verify");
        assertEquals(1, r.exit, r.err);
        assertTrue(r.err.contains("a JDK 17+") && r.err.contains("apt-get install -y openjdk-17-jdk-headless"), r.err);
        assertTrue(r.err.contains("Apache Maven 3.8.7+") && r.err.contains("apt-get install -y maven"), r.err);
        assertTrue(r.err.contains("does not answer"), r.err);
        assertTrue(r.err.contains("Chromium") && r.err.contains("apt-get install -y chromium"), r.err);
        assertEquals(1, count(r.err, "missing:"), "one message: " + r.err);
        assertFalse(r.err.contains("s3cret"), "AMQP_URI's password stays out of the message: " + r.err);
    }

    @Test
    void goalsThatRunNoTestNeedOnlyTheJdkAndMaven() throws Exception {
        stub("id", "echo 1000");
        for (List<String> args : List.of(
                List.of("-B", "-DskipTests", "package"),
                List.of("compile"),
                List.of("verify", "-Dmaven.test.skip=true"))) {
            Result r = provision(closedPortUri(), args.toArray(String[]::new));
            assertEquals(1, r.exit, r.err);
            assertTrue(r.err.contains("Apache Maven"), r.err);
            assertFalse(r.err.contains("Chromium") || r.err.contains("RabbitMQ"), args + ": " + r.err);
        }
    }

    @Test
    void anEquippedMachinePassesSilently() throws Exception {
        stub("id", "echo 1000");
        equip();
        try (ServerSocket broker = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Result r = provision("amqp://guest:guest@127.0.0.1:" + broker.getLocalPort() + "/%2F", "-B", "verify");
            assertEquals(0, r.exit, r.err);
            assertEquals("", r.err);
        }
    }

    @Test
    void anOldMavenIsNamedWithItsVersion() throws Exception {
        stub("id", "echo 1000");
        equip();
        stub("mvn", "echo 'Apache Maven 3.6.3 (cecedd343002696d0abb50b32b541b8a6ba2883f)'");
        Result r = provision(closedPortUri(), "-DskipTests", "install");
        assertEquals(1, r.exit, r.err);
        assertTrue(r.err.contains("found 3.6.3"), r.err);
    }

    @Test
    void rootWithAptGetInstallsEveryMissingPackageInOneCall() throws Exception {
        stub("id", "echo 0");
        stub("apt-get", "exit 0");
        stub("java", "exit 0");
        stub("rabbitmqctl", "exit 0");
        try (ServerSocket broker = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Result r = provision("amqp://127.0.0.1:" + broker.getLocalPort(), "-B", "verify");
            assertEquals(0, r.exit, r.err);
            assertTrue(r.err.contains("would run: apt-get update"), r.err);
            assertTrue(r.err.contains("apt-get install -y -qq maven chromium\n"), r.err);
            assertFalse(r.err.contains("missing:") || r.err.contains("rabbitmq-server"), r.err);
        }
    }

    @Test
    void withoutRootOrAptGetNothingIsInstalled() throws Exception {
        stub("id", "echo 0"); // root, but no apt-get: not a Debian-family machine
        Result r = provision(closedPortUri(), "verify");
        assertEquals(1, r.exit, r.err);
        assertFalse(r.err.contains("would run"), r.err);
        assertTrue(r.err.contains("missing:"), r.err);
    }

    @Test
    void theTestClusterIsStartedWhenItsScriptIsInTheTree() throws Exception {
        Path cluster = tree.resolve("scripts/rabbitmq-cluster.sh");
        Files.createDirectories(cluster.getParent());
        Files.writeString(cluster, "#!/usr/bin/env bash\n[ \"$1\" = start ]\n"); // status: not up
        stub("id", "echo 1000");
        equip();
        try (ServerSocket broker = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String uri = "amqp://127.0.0.1:" + broker.getLocalPort();
            Result asUser = provision(uri, "verify");
            assertEquals(1, asUser.exit, asUser.err);
            assertTrue(asUser.err.contains("scripts/rabbitmq-cluster.sh start"), asUser.err);

            stub("id", "echo 0");
            stub("apt-get", "exit 0");
            Result asRoot = provision(uri, "verify");
            assertEquals(0, asRoot.exit, asRoot.err);
            assertTrue(asRoot.err.contains("would run: bash " + cluster.toRealPath() + " start"), asRoot.err);
        }
    }

    @Test
    void aPasswordWithASlashNamesNeitherHostNorPortAndIsNeverPrinted() throws Exception {
        stub("id", "echo 1000");
        equip();
        Result r = provision("amqp://guest:ab/cd@127.0.0.1:1", "verify");
        assertEquals(1, r.exit, r.err);
        assertTrue(r.err.contains("AMQP_URI names (127.0.0.1:1) does not answer"), r.err);
        for (String secret : List.of("ab/cd", "guest", ":ab", "cd")) {
            assertFalse(r.err.contains(secret), secret + " printed: " + r.err);
        }
    }

    @Test
    void theQueryAndIpv6BracketsAreNotPartOfTheHostOrPort() throws Exception {
        stub("id", "echo 1000");
        equip();
        try (ServerSocket broker = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Result r = provision("amqp://127.0.0.1:" + broker.getLocalPort() + "?heartbeat=10", "verify");
            assertEquals(0, r.exit, r.err);
        }
        Result v6 = provision("amqp://guest:s3cret@[::1]:1/%2F", "verify");
        assertEquals(1, v6.exit, v6.err);
        assertTrue(v6.err.contains("([::1]:1) does not answer"), v6.err);
    }

    @Test
    void aPortThatIsNotANumberIsSaidSoWithoutPrintingTheUri() throws Exception {
        stub("id", "echo 1000");
        equip();
        Result r = provision("amqp://guest:s3cret@127.0.0.1:56x72/%2F", "verify");
        assertEquals(1, r.exit, r.err);
        assertTrue(r.err.contains("the port in AMQP_URI is not a number"), r.err);
        assertFalse(r.err.contains("s3cret") || r.err.contains("56x72"), r.err);
    }

    @Test
    void excludingTheClusterGroupLeavesTheClusterAlone() throws Exception {
        clusterScriptThatIsNotUp();
        stub("id", "echo 1000");
        equip();
        try (ServerSocket broker = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String uri = "amqp://127.0.0.1:" + broker.getLocalPort();
            for (String flag : List.of("-DexcludedGroups=cluster", "-DexcludedGroups=slow,cluster")) {
                Result r = provision(uri, "-B", flag, "verify");
                assertEquals(0, r.exit, flag + ": " + r.err);
                assertEquals("", r.err, flag);
            }
            Result other = provision(uri, "-B", "-DexcludedGroups=clusters", "verify");
            assertEquals(1, other.exit, other.err);
            assertTrue(other.err.contains("scripts/rabbitmq-cluster.sh start"), other.err);
        }
    }

    @Test
    void theClusterNeedsRabbitmqServerEvenWhenTheBrokerUnderTestIsElsewhere() throws Exception {
        Path cluster = clusterScriptThatIsNotUp();
        stub("id", "echo 0");
        stub("apt-get", "exit 0");
        equip(); // no rabbitmq-server on PATH
        try (ServerSocket broker = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Result r = provision("amqp://127.0.0.1:" + broker.getLocalPort(), "verify");
            assertEquals(0, r.exit, r.err);
            assertTrue(r.err.contains("apt-get install -y -qq rabbitmq-server\n"), r.err);
            assertTrue(
                    r.err.indexOf("apt-get install")
                            < r.err.indexOf("would run: bash " + cluster.toRealPath() + " start"),
                    r.err);
        }
    }

    /** A scripts/rabbitmq-cluster.sh whose status says the cluster is not up. */
    private Path clusterScriptThatIsNotUp() throws IOException {
        Path cluster = tree.resolve("scripts/rabbitmq-cluster.sh");
        Files.createDirectories(cluster.getParent());
        Files.writeString(cluster, "#!/usr/bin/env bash\n[ \"$1\" = start ]\n");
        return cluster;
    }

    /** Java, Maven 3.9, Chromium and a rabbitmqctl that reaches its node. */
    private void equip() throws IOException {
        stub("java", "exit 0");
        stub("mvn", "echo 'Apache Maven 3.9.9 (8e8579a9e76f7d015ee5ec7bfcdc97d260186937)'");
        stub("chromium", "exit 0");
        stub("rabbitmqctl", "exit 0");
    }

    private void stub(String name, String body) throws IOException {
        Path file = bin.resolve(name);
        Files.writeString(file, "#!" + which("bash") + "\n" + body + "\n", StandardCharsets.UTF_8);
        file.toFile().setExecutable(true);
    }

    /** A port nothing listens on: bound and closed again. */
    private static String closedPortUri() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        return "amqp://guest:s3cret@127.0.0.1:" + port + "/%2F";
    }

    private Result provision(String amqpUri, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(which("bash").toString());
        command.add(tree.resolve("build/provision").toString());
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        Map<String, String> env = pb.environment();
        env.clear();
        env.put("PATH", bin.toString());
        env.put("WARREN_PROVISION_DRY_RUN", "1");
        if (amqpUri != null) {
            env.put("AMQP_URI", amqpUri);
        }
        Process p = pb.start();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "provision ended");
        return new Result(p.exitValue(), err);
    }

    private static Path which(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path candidate = Path.of(dir, tool);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError(tool + " is not on PATH");
    }

    private static int count(String text, String part) {
        return text.split(java.util.regex.Pattern.quote(part), -1).length - 1;
    }

    private record Result(int exit, String err) {}
}
