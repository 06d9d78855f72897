package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.warren.ConnectionOptions;
import org.junit.jupiter.api.Test;

/** The raw client logs in as the Warren driver does: the URI's user, password and virtual host decoded once. */
class RawDriverLoginTest {

    @Test
    void aPlusOrAnEscapeInThePasswordIsSentAsTheUriSpells() {
        // '+' is a '+' in a URI (not a space, as in a form) and %2B is decoded once, to '+', not again to a space
        ConnectionOptions uri = ConnectionOptions.fromUri("amqp://us+er:pa+ss%2Bw@127.0.0.1:5672/v%2Bh");
        assertEquals("\0us+er\0pa+ss+w", RawDriver.plainResponse(uri));
        assertEquals("v+h", uri.virtualHost());
    }

    @Test
    void noUserInfoLogsInAsWarrensDefaultUser() {
        assertEquals("\0guest\0guest", RawDriver.plainResponse(ConnectionOptions.fromUri("amqp://127.0.0.1")));
    }
}
