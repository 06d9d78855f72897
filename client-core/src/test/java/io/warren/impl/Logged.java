package io.warren.impl;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** What the client logs while a test acts, for tests that assert a log line is written, or is not. */
final class Logged {

    private Logged() {}

    /**
     * What {@code action} logged. slf4j-simple, the tests' binding, writes to the {@code System.err} of the moment;
     * the lines are passed on to the real one.
     */
    static String during(Runnable action) {
        PrintStream err = System.err;
        ByteArrayOutputStream lines = new ByteArrayOutputStream();
        System.setErr(new PrintStream(lines, true, StandardCharsets.UTF_8));
        try {
            action.run();
        } finally {
            System.setErr(err);
        }
        String text = lines.toString(StandardCharsets.UTF_8);
        err.print(text);
        return text;
    }
}
