package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The side-by-side clients read the URI with their own parsers, whose messages quote it whole: never shown. */
class DriverUriSecretsTest {

    @ParameterizedTest
    @ValueSource(strings = {Clients.AMQP_CLIENT, Clients.RAW})
    void aUriTheClientCannotReadIsReportedWithoutItsPassword(String client) {
        // a space, which java.net.URI (amqp-client's parser) refuses, quoting the whole URI, and a bad escape, which
        // Warren's parser (the raw client's) refuses: either way the run stops before connecting
        RunOptions options = WarrenPerf.plan().options().withUri("amqp://guest:Sek%zz r1tXYZZY@127.0.0.1:5672/%2F");
        try (ClientDriver driver = Clients.create(client)) {
            Exception e = assertThrows(Exception.class, () -> driver.connect(options, new Metrics()));
            for (Throwable t = e; t != null; t = t.getCause()) {
                assertFalse(String.valueOf(t.getMessage()).contains("r1tXYZZY"), t.toString());
            }
            assertFalse(PerfRun.describe(e).contains("r1tXYZZY"), PerfRun.describe(e));
        }
    }

    @Test
    void theTargetInTheResultsKeepsTheUserAndNeverThePassword() {
        assertEquals("amqp://guest@127.0.0.1:5672", RunResult.redact("amqp://guest:guest@127.0.0.1:5672"));
        // a password with an unencoded '/': the URI does not parse, and everything before its last '@' is hidden
        assertEquals("amqp://***@h:5672/v", RunResult.redact("amqp://guest:Sek/r1t@h:5672/v"));
        assertEquals("amqp://***@h", RunResult.redact("amqp://guest:Sek@r1t/x@h"));
    }
}
