package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** The probe that decides between the broker and the loopback peer before a run. */
class BrokerProbeTest {

    @Test
    void aPasswordHoldingAnAtIsNeitherLookedUpNorNamed() {
        // java.net.URI would end the user info at the first '@' and probe the host "ss.word"
        String refusal = BrokerProbe.refusal("amqp://u:p@ss.word:1/z@127.0.0.1:1");
        assertFalse(refusal != null && refusal.contains("ss.word"), "a piece of the password in: " + refusal);
        assertNull(refusal, "a URI Warren refuses is left to the run to report");
    }

    @Test
    void aClosedPortIsRefusedAndAnOpenOneIsNot() throws IOException {
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        assertNotNull(BrokerProbe.refusal("amqp://guest:guest@127.0.0.1:" + closed));
        try (ServerSocket open = new ServerSocket(0)) {
            assertNull(BrokerProbe.refusal("amqp://guest:guest@127.0.0.1:" + open.getLocalPort()));
        }
    }
}
