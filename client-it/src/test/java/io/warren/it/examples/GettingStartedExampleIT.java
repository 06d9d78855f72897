package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.it.Broker;
import io.warren.it.BrokerExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs the README's whole program, GettingStartedExample.main, against the broker and reads what it printed. */
@ExtendWith(BrokerExtension.class)
class GettingStartedExampleIT {

    @Test
    void mainPublishesTenConfirmedMessagesAndConsumesAndAcksThem(Broker broker) throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        PrintStream console = System.out;
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            GettingStartedExample.main(new String[] {broker.uri()});
        } finally {
            System.setOut(console);
        }
        List<String> lines = printed.toString(StandardCharsets.UTF_8).lines().toList();
        assertTrue(lines.contains("10 messages confirmed by the broker"), lines.toString());
        List<String> received =
                lines.stream().filter(l -> l.startsWith("received ")).toList();
        assertEquals(10, received.size(), lines.toString());
        assertEquals("received hello 0", received.get(0));
        assertEquals("received hello 9", received.get(9));
    }
}
