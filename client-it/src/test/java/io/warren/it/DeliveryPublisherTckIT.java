package io.warren.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.testng.ITestResult;
import org.testng.TestListenerAdapter;
import org.testng.TestNG;

/**
 * Runs the Reactive Streams TCK ({@link DeliveryPublisherVerification}, TestNG) inside this JUnit build and
 * fails with every failed rule, its name and its stack trace. Rules the TCK skips are those a publisher of
 * {@value DeliveryPublisherVerification#MAX_ELEMENTS} elements at most cannot take part in (an unbounded
 * stream), and the optional ones it does not offer (several subscribers of one publisher, ...): counted and
 * printed.
 */
@ExtendWith(BrokerExtension.class)
class DeliveryPublisherTckIT {

    @Test
    void passesTheReactiveStreamsTck() {
        TestListenerAdapter results = new TestListenerAdapter();
        TestNG testng = new TestNG(false);
        testng.setUseDefaultListeners(false);
        testng.setVerbose(0);
        testng.setTestClasses(new Class<?>[] {DeliveryPublisherVerification.class});
        testng.addListener(results);
        testng.run();

        String skipped = results.getSkippedTests().stream()
                .map(DeliveryPublisherTckIT::describe)
                .collect(Collectors.joining("\n  "));
        System.out.printf(
                "Reactive Streams TCK: %d passed, %d failed, %d skipped%n  %s%n",
                results.getPassedTests().size(),
                results.getFailedTests().size(),
                results.getSkippedTests().size(),
                skipped);
        String failures = results.getFailedTests().stream()
                .map(DeliveryPublisherTckIT::describeWithTrace)
                .collect(Collectors.joining("\n"));
        assertEquals(0, results.getFailedTests().size(), failures);
        assertTrue(results.getPassedTests().size() > 0, "the TCK ran");
        for (ITestResult r : results.getSkippedTests()) {
            assertTrue(skipIsExpected(r.getName()), "skipped: " + describe(r));
        }
    }

    /**
     * What the TCK may skip: what it does not verify itself, the optional multicast rules (each subscriber is a
     * consumer competing for the queue's messages, so two subscribers never see the same elements), and the one
     * rule that needs more than {@link DeliveryPublisherVerification#MAX_ELEMENTS} elements.
     */
    private static boolean skipIsExpected(String rule) {
        return rule.startsWith("untested_")
                || rule.startsWith("optional_spec111_")
                || rule.equals("required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue");
    }

    private static String describe(ITestResult r) {
        Throwable t = r.getThrowable();
        return r.getName() + (t == null ? "" : ": " + t.getMessage());
    }

    private static String describeWithTrace(ITestResult r) {
        StringWriter w = new StringWriter();
        if (r.getThrowable() != null) {
            r.getThrowable().printStackTrace(new PrintWriter(w));
        }
        return r.getName() + "\n" + w;
    }
}
