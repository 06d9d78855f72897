package io.warren.testing;

import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when Netty reports a buffer leak during it. Registered for every JUnit Jupiter
 * test by service loading ({@code junit.jupiter.extensions.autodetection.enabled=true} is set by the
 * build), so no test can forget it.
 *
 * <p>Leaks are found when the garbage collector clears an unreleased buffer, so the check runs after
 * each test class rather than after each test: a full collection per test would triple the suite's
 * time and find nothing more, only sooner.
 */
public final class LeakFailExtension implements BeforeAllCallback, AfterAllCallback {

    static {
        LeakRecorder.install();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        // Leaks from an earlier class are reported there (its afterAll), not blamed on this one.
        List<String> earlier = LeakRecorder.collect();
        if (!earlier.isEmpty()) {
            throw new AssertionError("LEAK: Netty reported " + earlier.size() + " buffer leak(s) before "
                    + context.getDisplayName() + " started:\n" + String.join("\n\n", earlier));
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        List<String> leaks = LeakRecorder.collect();
        if (!leaks.isEmpty()) {
            throw new AssertionError("LEAK: Netty reported " + leaks.size() + " buffer leak(s) in "
                    + context.getDisplayName() + ":\n" + String.join("\n\n", leaks));
        }
    }
}
