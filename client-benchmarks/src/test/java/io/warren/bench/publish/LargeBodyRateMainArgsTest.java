package io.warren.bench.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.bench.publish.LargeBodyRateMain.Args;
import org.junit.jupiter.api.Test;

/** LargeBodyRateMain's command line: what it measures is what was asked for, or it says why not. */
class LargeBodyRateMainArgsTest {

    @Test
    void theFourCountsAloneMeasureOneRunAgainstTheLocalBroker() {
        Args a = Args.parse(new String[] {"warren-array", "1048576", "16", "100"});
        assertEquals(new Args("warren-array", 1048576, 16, 100, 1, "amqp://guest:guest@127.0.0.1:5672"), a);
    }

    @Test
    void runsAndAUriMayFollowAndAUriAloneIsNotTakenForRuns() {
        assertEquals(
                new Args("amqp-client", 65536, 1, 10, 4, "amqps://h:5671"),
                Args.parse(new String[] {"amqp-client", "65536", "1", "10", "4", "amqps://h:5671"}));
        assertEquals(
                new Args("warren", 65536, 1, 10, 1, "AMQP://h"),
                Args.parse(new String[] {"warren", "65536", "1", "10", "AMQP://h"}));
    }

    @Test
    void aMistypedClientIsRefusedInsteadOfMeasuringAnother() {
        // before: anything starting with "warren" ran the pooled-copy publisher, anything else amqp-client
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> Args.parse(new String[] {"warren-arary", "65536", "1", "10"}));
        assertTrue(e.getMessage().startsWith("usage: LargeBodyRateMain"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Args.parse(new String[] {"amqp", "65536", "1", "10"}));
    }

    @Test
    void countsBelowOneOrMissingArgumentsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> Args.parse(new String[] {"warren", "65536", "1"}));
        assertThrows(IllegalArgumentException.class, () -> Args.parse(new String[] {"warren", "0", "1", "10"}));
        assertThrows(
                IllegalArgumentException.class, () -> Args.parse(new String[] {"warren", "65536", "1", "10", "0"}));
        assertThrows(
                IllegalArgumentException.class,
                () -> Args.parse(new String[] {"warren", "65536", "1", "10", "2", "amqp://h", "extra"}));
    }

    @Test
    void aRefusedValueIsNotRepeatedSoAMisplacedUrisPasswordStaysOut() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Args.parse(new String[] {"warren", "65536", "1", "10", "user:s3cret@host"}));
        assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
        assertTrue(e.getMessage().startsWith("RUNS must be a whole number"), e.getMessage());
    }
}
